//! Reads a `POST`: its headers checked (a JSON content type, no announced length over the
//! cap), then its body read whole, at most the cap, within `body_read_timeout`, counted in the
//! server's budget as it arrives; or the reply that refuses it.

use std::task::Poll;
use std::time::Duration;

use ::http::header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, HOST, ORIGIN};
use ::http::{HeaderValue, Request, Response};
use hyper::body::Body;

use super::reply::{self, ResponseBody};
use super::request_id::Tags;
use super::service::BoxError;
use super::sse;
use crate::context::TRACEPARENT;
use crate::limits::Held;
use crate::server::{OriginPolicy, forbidden};

/// Sets how many times a body counts in the server's budget while its call runs: the body itself,
/// and its params once decoded (a copy of about the same size, which the handler holds until
/// its answer is made).
pub(super) const COPIES: usize = 2;

/// Returns what a body announces it holds (hyper's knows its `Content-Length`), at most `limit`:
/// the room it takes in the budget before it is read.
pub(super) fn announced<B: Body>(body: &B, limit: usize) -> usize {
    let hint = body.size_hint();
    let declared = hint.exact().unwrap_or(hint.lower());
    usize::try_from(declared).unwrap_or(usize::MAX).min(limit)
}

/// Holds what [`post_checked`] saw of a `POST` it lets through.
pub(super) struct Posted<'a> {
    /// It asks for an event stream ([`sse::asks_for_events`]).
    pub(super) events: bool,
    /// It carries a `traceparent`.
    pub(super) traced: bool,
    /// Its first `x-request-id`.
    pub(super) request_id: Option<&'a HeaderValue>,
}

/// Returns whether a `POST`'s headers allow its body to be read: a JSON content type (or none) and
/// no announced length over `limit`; else the reply that refuses it (`415`, `413`). And what else
/// its headers say ([`Posted`]). The request is looked at, not taken: each move of it is a copy.
///
/// The headers are read in one pass: a client sends a few, and a lookup of each by name costs
/// more than the pass.
#[allow(clippy::result_large_err)] // The refusal is the reply, sent as it is: boxing it buys nothing.
#[inline]
pub(super) fn post_checked<'r, B: Body>(
    req: &'r Request<B>,
    limit: usize,
    policy: &OriginPolicy,
    loopback: bool,
) -> Result<Posted<'r>, Response<ResponseBody>> {
    let (mut content_type, mut content_length, mut events) = (None, None, false);
    let (mut traced, mut request_id) = (false, None);
    let (mut origin, mut host) = (None, None);
    for (name, value) in req.headers() {
        if name == CONTENT_TYPE {
            content_type.get_or_insert(value);
        } else if name == CONTENT_LENGTH {
            content_length.get_or_insert(value);
        } else if name == ACCEPT {
            events = events || sse::accepts_events(value);
        } else if name == TRACEPARENT {
            traced = true;
        } else if name == HOST {
            host.get_or_insert(value);
        } else if name == ORIGIN {
            origin.get_or_insert(value);
        } else if Tags::names(name) {
            request_id.get_or_insert(value);
        }
    }
    if let Err(why) = policy.check_values(origin, host, req.uri(), loopback) {
        return Err(reply::unread(req, forbidden(&why)));
    }
    if let Some(content_type) = content_type
        && !is_json(content_type)
    {
        return Err(reply::unread(
            req,
            reply::unsupported_media_type(content_type),
        ));
    }
    if declared_length(req, content_length).is_some_and(|len| len > limit as u64) {
        return Err(reply::too_large(limit));
    }
    Ok(Posted {
        events,
        traced,
        request_id,
    })
}

/// Reads a body whole: at most `limit` bytes, within `timeout`; or the reply that refuses it
/// (`413`, `400` or `408`).
///
/// Nearly every request's body has arrived with its head: it is read in one poll, with no timer
/// armed. Only a body that is not all there yet is waited for, under a timer kept boxed, so that
/// every request's future does not carry its room.
pub(super) async fn read_body<B>(
    body: B,
    limit: usize,
    timeout: Duration,
    mut held: Option<&mut Held>,
) -> Result<hyper::body::Bytes, Response<ResponseBody>>
where
    B: Body + Send,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let mut body = std::pin::pin!(body);
    let mut read = Gathered::new(held.as_deref());
    let mut poll = |cx: &mut std::task::Context<'_>| {
        read.poll_frames(body.as_mut(), cx, limit, held.as_deref_mut())
    };
    let first = std::future::poll_fn(|cx| Poll::Ready(poll(cx))).await;
    let read = match first {
        Poll::Ready(read) => Ok(read),
        Poll::Pending => {
            let deadline = crate::time::after(timeout);
            Box::pin(tokio::time::timeout_at(
                deadline,
                std::future::poll_fn(poll),
            ))
            .await
        }
    };
    match read {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(Unread::TooLarge)) => Err(reply::too_large(limit)),
        Ok(Err(Unread::Broken(err))) => {
            tracing::warn!(error = %err, "request body unreadable: answered 400");
            Err(reply::unreadable_body())
        }
        Err(_) => {
            tracing::warn!(
                limit = ?timeout,
                "request body too slow: answered 408 (raise `body_read_timeout` to wait longer)"
            );
            Err(reply::body_timed_out())
        }
    }
}

/// Says why a body was not read whole.
enum Unread {
    /// It holds more than the limit.
    TooLarge,
    /// It broke off, or failed.
    Broken(BoxError),
}

/// Holds a body's bytes read so far: at most a limit of them (every frame counted, so a chunked
/// body stops at the cap too), each past the length a [`Held`] counts already counted there too
/// ([`COPIES`] times). A body of one frame, as nearly every request's is, is that frame's bytes
/// as they are; the frames of a longer one are copied together, into one buffer of the
/// announced length.
struct Gathered {
    first: hyper::body::Bytes,
    joined: Vec<u8>,
    len: usize,
    /// What the `Held` counts already: at first, the length the body announced.
    counted: usize,
}

impl Gathered {
    #[inline]
    fn new(held: Option<&Held>) -> Self {
        Self {
            first: hyper::body::Bytes::new(),
            joined: Vec::new(),
            len: 0,
            counted: held.map_or(0, |held| held.bytes() / COPIES),
        }
    }

    /// Reads the frames of `body` that have arrived, until it ends (its bytes whole) or waits.
    #[inline]
    fn poll_frames<B>(
        &mut self,
        mut body: std::pin::Pin<&mut B>,
        cx: &mut std::task::Context<'_>,
        limit: usize,
        mut held: Option<&mut Held>,
    ) -> Poll<Result<hyper::body::Bytes, Unread>>
    where
        B: Body,
        B::Error: Into<BoxError>,
    {
        // A body that knows it has ended (hyper's, once its `Content-Length` is in) is not
        // asked for one more frame.
        while !body.is_end_stream() {
            let frame = match std::task::ready!(body.as_mut().poll_frame(cx)) {
                None => break,
                Some(Err(err)) => return Poll::Ready(Err(Unread::Broken(err.into()))),
                Some(Ok(frame)) => frame,
            };
            if let Ok(data) = frame.into_data()
                && let Err(unread) = self.add(data, limit, held.as_deref_mut())
            {
                return Poll::Ready(Err(unread));
            }
        }
        let joined = std::mem::take(&mut self.joined);
        Poll::Ready(Ok(if joined.is_empty() {
            std::mem::take(&mut self.first)
        } else {
            hyper::body::Bytes::from(joined)
        }))
    }

    /// Adds a frame's bytes, counted against `limit` and in `held`.
    fn add(
        &mut self,
        mut data: impl hyper::body::Buf,
        limit: usize,
        held: Option<&mut Held>,
    ) -> Result<(), Unread> {
        self.len = self.len.saturating_add(data.remaining());
        if self.len > limit {
            return Err(Unread::TooLarge);
        }
        if let Some(held) = held
            && self.len > self.counted
        {
            held.grow((self.len - self.counted) * COPIES);
            self.counted = self.len;
        }
        if self.first.is_empty() && self.joined.is_empty() {
            self.first = data.copy_to_bytes(data.remaining());
            return Ok(());
        }
        if self.joined.is_empty() {
            // Once: growing by doubling would copy a large body on the way, twice over.
            self.joined.reserve(self.len.max(self.counted));
            self.joined.extend_from_slice(&self.first);
        }
        while data.has_remaining() {
            let chunk = data.chunk();
            let taken = chunk.len();
            self.joined.extend_from_slice(chunk);
            data.advance(taken);
        }
        Ok(())
    }
}

/// Returns the body's length as announced by the body itself (hyper's knows its `Content-Length`),
/// or by `content_length`.
fn declared_length<B: Body>(req: &Request<B>, content_length: Option<&HeaderValue>) -> Option<u64> {
    let hint = req.body().size_hint();
    if let Some(exact) = hint.exact() {
        return Some(exact);
    }
    let header = content_length.and_then(|value| value.to_str().ok()?.trim().parse().ok());
    header.or_else(|| Some(hint.lower()).filter(|len| *len > 0))
}

/// Returns whether `content_type` is `application/json` with any parameters, or
/// `application/*+json` (`application/vnd.api+json`, `application/merge-patch+json`...),
/// case-insensitively as RFC 9110 has it.
pub(crate) fn is_json(content_type: &HeaderValue) -> bool {
    // What nearly every client sends, at once.
    if content_type.as_bytes() == b"application/json" {
        return true;
    }
    let Ok(text) = content_type.to_str() else {
        return false;
    };
    let essence = text.split(';').next().unwrap_or_default().trim();
    match essence.split_once('/') {
        Some((kind, subtype)) if kind.eq_ignore_ascii_case("application") => {
            subtype.eq_ignore_ascii_case("json")
                || (subtype.len() > 5
                    && subtype.as_bytes()[subtype.len() - 5..].eq_ignore_ascii_case(b"+json"))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_content_types() {
        for ok in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/vnd.api+json",
        ] {
            assert!(is_json(&HeaderValue::from_static(ok)), "{ok}");
        }
        for bad in [
            "text/plain",
            "application/+json",
            "application/jsonp",
            "json",
            "text/json",
        ] {
            assert!(!is_json(&HeaderValue::from_static(bad)), "{bad}");
        }
    }
}
