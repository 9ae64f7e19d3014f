//! The replies a server writes itself, without a JSON-RPC request to answer: an HTTP status
//! with a JSON-RPC error envelope (`"id": null`) whose `data` says what went wrong.

use ::http::header::{CONNECTION, CONTENT_TYPE};
use ::http::{HeaderValue, Response, StatusCode};
use std::convert::Infallible;

use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;

use crate::wire::write;
use crate::{ErrorCode, Id, RpcError};

/// The body of every response a server writes: whole, in memory, or (an event stream) sent as
/// it is made.
pub(crate) type Body = UnsyncBoxBody<Bytes, Infallible>;

/// A body of `bytes`, whole.
pub(crate) fn whole(bytes: Bytes) -> Body {
    Full::new(bytes).boxed_unsync()
}

/// The content type of every reply with a body.
pub(crate) fn json_type() -> HeaderValue {
    HeaderValue::from_static("application/json")
}

/// A status with a JSON body.
pub(crate) fn json(status: StatusCode, body: Bytes) -> Response<Body> {
    let mut res = Response::new(whole(body));
    *res.status_mut() = status;
    res.headers_mut().insert(CONTENT_TYPE, json_type());
    res
}

/// A status with a JSON-RPC error envelope (`"id": null`: no request was read).
pub(crate) fn envelope(status: StatusCode, error: &RpcError) -> Response<Body> {
    let body = write::error_bytes(error, &None::<&Id>);
    json(status, Bytes::from(body))
}

/// A refusal: the status, and `-32600` with `why` in `data`.
pub(crate) fn refusal(status: StatusCode, why: &str) -> Response<Body> {
    envelope(status, &RpcError::invalid_request().with_data(why))
}

/// Asks the client to close the connection after this reply: used when the request's body was
/// left unread (so the connection cannot carry another request) and while shutting down.
pub(crate) fn closing(mut res: Response<Body>) -> Response<Body> {
    res.headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    res
}

/// `503`, `-32000` (the server range: nothing is wrong with the request), with
/// `Connection: close` so that the client goes elsewhere.
pub(crate) fn unavailable() -> Response<Body> {
    let error = RpcError::new(ErrorCode::SERVER_ERROR, "Server shutting down")
        .with_data("the server is shutting down; retry on another instance");
    closing(envelope(StatusCode::SERVICE_UNAVAILABLE, &error))
}
