//! The replies the HTTP layer writes itself: JSON-RPC answers, and the error envelopes that go
//! with every status it answers on its own.

use ::http::header::{ALLOW, CONNECTION, CONTENT_TYPE};
use ::http::{HeaderValue, Method, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Bytes;

use crate::{ErrorCode, Id, Message, RpcError};

/// The body of every response the server writes: whole, in memory.
pub type ResponseBody = Full<Bytes>;

/// The content type of every reply with a body.
fn json_type() -> HeaderValue {
    HeaderValue::from_static("application/json")
}

/// `200` with a JSON-RPC answer.
pub(crate) fn answer(body: String) -> Response<ResponseBody> {
    json(StatusCode::OK, Bytes::from(body))
}

/// `204`: the body held only notifications.
pub(crate) fn no_content() -> Response<ResponseBody> {
    let mut res = Response::new(Full::default());
    *res.status_mut() = StatusCode::NO_CONTENT;
    res
}

fn json(status: StatusCode, body: Bytes) -> Response<ResponseBody> {
    let mut res = Response::new(Full::new(body));
    *res.status_mut() = status;
    res.headers_mut().insert(CONTENT_TYPE, json_type());
    res
}

/// A status with a JSON-RPC error envelope (`"id": null`: no request was read).
fn envelope(status: StatusCode, error: RpcError) -> Response<ResponseBody> {
    let body = Message::ErrorResponse {
        id: Id::NULL,
        error,
    }
    .to_json();
    json(status, Bytes::from(body))
}

/// Asks the client to close the connection after this reply: used when the request's body was
/// left unread (so the connection cannot carry another request) and while shutting down.
pub(crate) fn closing(mut res: Response<ResponseBody>) -> Response<ResponseBody> {
    res.headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    res
}

/// `404`, `-32600`: no endpoint at this path. `-32601` would claim that a JSON-RPC method is
/// missing, when no request was even read.
pub(crate) fn not_found(path: &str) -> Response<ResponseBody> {
    let data = format!("no JSON-RPC endpoint at `{path}`");
    envelope(
        StatusCode::NOT_FOUND,
        RpcError::invalid_request().with_data(&data),
    )
}

/// `405` with `Allow: POST`, `-32600`.
pub(crate) fn method_not_allowed(method: &Method) -> Response<ResponseBody> {
    let data = format!("`{method}` is not allowed; send JSON-RPC requests with `POST`");
    let mut res = envelope(
        StatusCode::METHOD_NOT_ALLOWED,
        RpcError::invalid_request().with_data(&data),
    );
    res.headers_mut()
        .insert(ALLOW, HeaderValue::from_static("POST"));
    res
}

/// `413`, `-32600`, with the limit in `data`.
pub(crate) fn too_large(limit: usize) -> Response<ResponseBody> {
    let data = format!("the body exceeds the limit of {limit} bytes");
    closing(envelope(
        StatusCode::PAYLOAD_TOO_LARGE,
        RpcError::invalid_request().with_data(&data),
    ))
}

/// `415`, `-32600`, naming the content type refused.
pub(crate) fn unsupported_media_type(content_type: &HeaderValue) -> Response<ResponseBody> {
    let shown = content_type.to_str().unwrap_or("(not text)");
    let data = format!("content type `{shown}` is not JSON; send `application/json`");
    let mut res = envelope(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        RpcError::invalid_request().with_data(&data),
    );
    // RFC 9110 suggests telling the client what would have been taken.
    res.headers_mut().insert("accept-post", json_type());
    res
}

/// `400`, `-32600`: the body could not be read (the client went away, or sent broken chunks).
pub(crate) fn unreadable_body() -> Response<ResponseBody> {
    closing(envelope(
        StatusCode::BAD_REQUEST,
        RpcError::invalid_request().with_data("the request body could not be read"),
    ))
}

/// `408`, `-32600`: the body did not arrive within the body read timeout.
pub(crate) fn body_timed_out() -> Response<ResponseBody> {
    closing(envelope(
        StatusCode::REQUEST_TIMEOUT,
        RpcError::invalid_request().with_data("the request body did not arrive in time"),
    ))
}

/// `503`, `-32000` (the server range: nothing is wrong with the request), with
/// `Connection: close` so that the client goes elsewhere.
pub(crate) fn unavailable() -> Response<ResponseBody> {
    let error = RpcError::new(ErrorCode::SERVER_ERROR, "Server shutting down")
        .with_data("the server is shutting down; retry on another instance");
    closing(envelope(StatusCode::SERVICE_UNAVAILABLE, error))
}

/// `200`, `-32700`: the body is not UTF-8, so it cannot be JSON.
pub(crate) fn not_utf8() -> Response<ResponseBody> {
    envelope(StatusCode::OK, RpcError::parse_error())
}
