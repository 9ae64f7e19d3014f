//! Builds the replies a server writes itself, without a JSON-RPC request to answer: an HTTP status
//! with a JSON-RPC error envelope (`"id": null`) whose `data` says what went wrong.

use ::http::header::{CONNECTION, CONTENT_TYPE};
use ::http::{HeaderValue, Response, StatusCode};
use std::convert::Infallible;

use std::pin::Pin;
use std::task::{Context, Poll};

use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Frame, SizeHint};

use crate::wire::write;
use crate::wire::{ErrorCode, Id, RpcError};

/// Carries the body of every response the HTTP and WebSocket servers write: whole, in memory, or
/// (an event stream) sent as it is made. It is an [`http_body::Body`](hyper::body::Body) of
/// [`Bytes`] that never fails.
///
/// A whole body is held as it is, not boxed: nearly every reply is one, and that is an allocation
/// fewer per request.
#[derive(Debug, Default)]
pub struct ResponseBody(Kind);

/// Gives [`ResponseBody`] the name the crate uses.
pub(crate) type Body = ResponseBody;

#[derive(Debug)]
enum Kind {
    Whole(Full<Bytes>),
    #[cfg(feature = "http")]
    Streamed(UnsyncBoxBody<Bytes, Infallible>),
}

impl Default for Kind {
    fn default() -> Self {
        Self::Whole(Full::default())
    }
}

#[cfg(feature = "http")]
impl ResponseBody {
    /// Returns a body sent as `body` makes it (an event stream).
    pub fn streamed(
        body: impl hyper::body::Body<Data = Bytes, Error = Infallible> + Send + 'static,
    ) -> Self {
        Self(Kind::Streamed(body.boxed_unsync()))
    }

    /// Returns whether it is sent as it is made (an event stream), not whole.
    pub(crate) fn is_streamed(&self) -> bool {
        matches!(self.0, Kind::Streamed(_))
    }
}

impl hyper::body::Body for ResponseBody {
    type Data = Bytes;
    type Error = Infallible;

    #[inline]
    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.get_mut().0 {
            Kind::Whole(body) => Pin::new(body).poll_frame(cx),
            #[cfg(feature = "http")]
            Kind::Streamed(body) => Pin::new(body).poll_frame(cx),
        }
    }

    #[inline]
    fn is_end_stream(&self) -> bool {
        match &self.0 {
            Kind::Whole(body) => body.is_end_stream(),
            #[cfg(feature = "http")]
            Kind::Streamed(body) => body.is_end_stream(),
        }
    }

    #[inline]
    fn size_hint(&self) -> SizeHint {
        match &self.0 {
            Kind::Whole(body) => body.size_hint(),
            #[cfg(feature = "http")]
            Kind::Streamed(body) => body.size_hint(),
        }
    }
}

/// Returns a body of `bytes`, whole.
pub(crate) fn whole(bytes: Bytes) -> Body {
    ResponseBody(Kind::Whole(Full::new(bytes)))
}

/// Returns the content type of every reply with a body.
pub(crate) fn json_type() -> HeaderValue {
    JSON_TYPE.clone()
}

/// Holds the content type, made once: `from_static` checks the value each time it runs, and every
/// reply carries it.
static JSON_TYPE: HeaderValue = HeaderValue::from_static("application/json");

/// Returns a status with a JSON body.
pub fn json(status: StatusCode, body: Bytes) -> Response<Body> {
    let mut res = Response::new(whole(body));
    *res.status_mut() = status;
    res.headers_mut().insert(CONTENT_TYPE, json_type());
    res
}

/// Returns a status with a JSON-RPC error envelope (`"id": null`: no request was read).
pub fn envelope(status: StatusCode, error: &RpcError) -> Response<Body> {
    let body = write::error_bytes(error, &None::<&Id>);
    json(status, Bytes::from(body))
}

/// Returns a refusal: the status, and `-32600` with `why` in `data`.
pub fn refusal(status: StatusCode, why: &str) -> Response<Body> {
    envelope(status, &RpcError::invalid_request().with_data(why))
}

/// Returns `res` asking the client to close the connection after it: for a request whose body
/// was left unread (so the connection cannot carry another request), and while shutting down.
pub fn closing(mut res: Response<Body>) -> Response<Body> {
    res.headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    res
}

/// Returns `503`, `-32000` (the server range: nothing is wrong with the request), with
/// `Connection: close` so that the client goes elsewhere.
pub fn unavailable() -> Response<Body> {
    let error = RpcError::new(ErrorCode::SERVER_ERROR, "Server shutting down")
        .with_data("the server is shutting down; retry on another instance");
    closing(envelope(StatusCode::SERVICE_UNAVAILABLE, &error))
}
