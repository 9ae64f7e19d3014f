//! Tags requests with `x-request-id`: taken from the request when it is sensible, made up
//! otherwise.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};

use ::http::{HeaderMap, HeaderName, HeaderValue};

use crate::transport::{MadeUp, RequestTag};

/// Returns the header's name.
pub(crate) fn x_request_id() -> HeaderName {
    X_REQUEST_ID.clone()
}

/// Holds the header's name, made once: `from_static` checks the name each time it runs, and the
/// header is looked up and set on every request (a static name's clone copies a pointer).
static X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Sets the longest tag taken from a client; a longer one is replaced.
const MAX_LEN: usize = 128;

/// Makes request tags: 16 hex digits, distinct within the process and unlike another process's
/// (a counter, from a start drawn at random per process, mixed by a bijection of 64-bit
/// integers). They tell requests apart in logs; they are not secrets. Also says which tags a
/// reply carries back.
#[derive(Debug)]
pub(crate) struct Tags {
    next: AtomicU64,
    /// Whether a made-up tag goes on the reply too, not only a client's own.
    always_sent: bool,
}

impl Default for Tags {
    fn default() -> Self {
        Self::new(false)
    }
}

impl Tags {
    /// Returns tags whose made-up ones go on replies too when `always_sent`.
    pub(crate) fn new(always_sent: bool) -> Self {
        let start = std::collections::hash_map::RandomState::new().hash_one(0u64);
        Self {
            next: AtomicU64::new(start),
            always_sent,
        }
    }

    /// Returns the `x-request-id` a reply to a request tagged `tag` carries: a client's own tag (or
    /// the application's), and a made-up one only when made-up ones are sent.
    ///
    /// Why not always: a made-up tag is news to the client, which did not ask for one, while
    /// setting it is a tenth of the server's work on a small call (an allocation, a header
    /// inserted and written); and over HTTP/2, every reply's header a value never seen before.
    #[inline]
    pub(crate) fn reply_value(&self, tag: &RequestTag) -> Option<HeaderValue> {
        match tag {
            RequestTag::Header(value) => Some(value.clone()),
            RequestTag::Hex(made) if self.always_sent => HeaderValue::from_str(made.as_str()).ok(),
            RequestTag::Hex(_) => None,
            RequestTag::Text(text) => HeaderValue::from_str(text).ok(),
        }
    }

    /// Returns the request's own tag when it is acceptable, else a fresh one.
    ///
    /// A client's tag is taken when it is 1 to 128 characters of `A-Z a-z 0-9 - _ . : / + = @`:
    /// enough for UUIDs, ULIDs, hex and base64 tags, and nothing that could forge a log line.
    /// It is the request's own value, not a copy: it shares the buffer the request head was read
    /// into (see [`kept`] for a tag that outlives the request). One made up is held in place.
    pub(crate) fn tag(&self, headers: &HeaderMap) -> RequestTag {
        // A pass over the few headers a request has, not a lookup: a standard name (most of
        // them) is told apart at once, while a lookup hashes the name first. The first value
        // found is the one a lookup gives.
        let taken = headers.iter().find(|(name, _)| **name == X_REQUEST_ID);
        self.tag_of(taken.map(|(_, value)| value))
    }

    /// Returns the tag of a request whose (first) `x-request-id` is `given`, as [`tag`](Self::tag)
    /// makes it: for a pass over the headers that looks for more than this one.
    #[inline]
    pub(crate) fn tag_of(&self, given: Option<&HeaderValue>) -> RequestTag {
        match given {
            Some(tag) if acceptable(tag.as_bytes()) => RequestTag::Header(tag.clone()),
            _ => RequestTag::Hex(MadeUp::new(self.next.fetch_add(1, Ordering::Relaxed))),
        }
    }

    /// Returns whether `name` is `x-request-id`.
    pub(crate) fn names(name: &HeaderName) -> bool {
        *name == X_REQUEST_ID
    }
}

/// Returns `tag`, copied out of the buffer its request was read into: for a context that outlives
/// the request (a WebSocket's), which would otherwise keep that whole buffer.
#[cfg(feature = "ws")]
pub(crate) fn kept(tag: &RequestTag) -> RequestTag {
    match tag {
        RequestTag::Header(value) => HeaderValue::from_bytes(value.as_bytes())
            .map_or_else(|_| tag.clone(), RequestTag::Header),
        _ => tag.clone(),
    }
}

fn acceptable(tag: &[u8]) -> bool {
    (1..=MAX_LEN).contains(&tag.len())
        && tag
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:/+=@".contains(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_sensible_tags_and_makes_up_the_rest() {
        let tags = Tags::default();
        let mut headers = HeaderMap::new();
        headers.insert(
            x_request_id(),
            ::http::HeaderValue::from_static("req-1:a/b=="),
        );
        assert_eq!(tags.tag(&headers).as_str(), "req-1:a/b==");
        headers.insert(
            x_request_id(),
            ::http::HeaderValue::from_static("two words"),
        );
        let made = tags.tag(&headers);
        assert_eq!(made.as_str().len(), 16);
        assert!(made.as_str().bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(made.as_str(), tags.tag(&HeaderMap::new()).as_str());
        // A made-up tag goes back only when asked for; a client's own always does.
        assert!(tags.reply_value(&made).is_none());
        let sent = Tags::new(true);
        assert_eq!(
            sent.reply_value(&made).as_ref().map(HeaderValue::as_bytes),
            Some(made.as_str().as_bytes())
        );
        let given = tags.tag(&HeaderMap::from_iter([(
            x_request_id(),
            HeaderValue::from_static("mine"),
        )]));
        assert_eq!(
            tags.reply_value(&given).as_ref().map(HeaderValue::as_bytes),
            Some(&b"mine"[..])
        );
    }

    /// Checks that the first of several values is the one taken, as a lookup takes it; a header of
    /// another name is not taken for it.
    #[test]
    fn takes_the_first_value() {
        let tags = Tags::default();
        let mut headers = HeaderMap::new();
        headers.insert("x-request-ie", HeaderValue::from_static("not-this"));
        headers.append(x_request_id(), HeaderValue::from_static("first"));
        headers.append(x_request_id(), HeaderValue::from_static("second"));
        assert_eq!(tags.tag(&headers).as_str(), "first");
    }
}
