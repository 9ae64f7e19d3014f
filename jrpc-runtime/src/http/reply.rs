//! Builds the replies of HTTP endpoints: JSON-RPC answers, and the statuses a server answers on its
//! own, each with a JSON-RPC error envelope (`"id": null`: no request was read) whose `data` says
//! what went wrong. What the JSON-RPC path answers with, and what a protocol's [`Endpoint`] may
//! too.
//!
//! [`Endpoint`]: super::Endpoint

use ::http::header::ALLOW;
use ::http::{HeaderValue, Method, Request, Response, StatusCode};
use hyper::body::{Body, Bytes};

use std::sync::Arc;

use crate::limits::Held;
use crate::limits::ServerBudget;
pub use crate::server::ResponseBody;
use crate::server::json_type;
pub use crate::server::{closing, envelope, json, refusal, unavailable};
use crate::wire::RpcError;

/// Returns `200` with a JSON-RPC answer, as the dispatcher wrote it.
pub fn answer(body: Vec<u8>) -> Response<ResponseBody> {
    json(StatusCode::OK, Bytes::from(body))
}

/// Sets the size below which answers are not counted in the server's budget: hyper copies them into
/// its own buffer as it writes, and counting would cost every request for nothing.
const COUNTED_FROM: usize = 16 * 1024;

/// Returns `200` with a JSON-RPC answer, counted in the server's `budget` until hyper has written
/// it (the buffer is freed).
pub(crate) fn answer_counted(body: Vec<u8>, budget: &Arc<ServerBudget>) -> Response<ResponseBody> {
    if body.len() < COUNTED_FROM {
        return answer(body);
    }
    let held = budget.hold(body.len());
    json(
        StatusCode::OK,
        Bytes::from_owner(Counted { body, _held: held }),
    )
}

/// Holds an answer's bytes, and their count in the server's budget, dropped together.
struct Counted {
    body: Vec<u8>,
    _held: Held,
}

impl AsRef<[u8]> for Counted {
    fn as_ref(&self) -> &[u8] {
        &self.body
    }
}

/// Returns `204`: the body held only notifications.
pub fn no_content() -> Response<ResponseBody> {
    let mut res = Response::new(ResponseBody::default());
    *res.status_mut() = StatusCode::NO_CONTENT;
    res
}

/// Returns `404`, `-32600`: no endpoint at this path. `-32601` would claim that a JSON-RPC
/// method is missing, when no request was even read.
pub fn not_found(path: &str) -> Response<ResponseBody> {
    refusal(
        StatusCode::NOT_FOUND,
        &format!("no JSON-RPC endpoint at `{path}`"),
    )
}

/// Returns `405` with `Allow: POST`, `-32600`.
pub(crate) fn method_not_allowed(method: &Method) -> Response<ResponseBody> {
    let mut res = refusal(
        StatusCode::METHOD_NOT_ALLOWED,
        &format!("`{method}` is not allowed; send JSON-RPC requests with `POST`"),
    );
    res.headers_mut()
        .insert(ALLOW, HeaderValue::from_static("POST"));
    res
}

/// Returns `413`, `-32600`, with the limit in `data`.
pub(crate) fn too_large(limit: usize) -> Response<ResponseBody> {
    tracing::warn!(
        limit,
        "request body too large: answered 413 (raise `max_message_size` to take it)"
    );
    closing(refusal(
        StatusCode::PAYLOAD_TOO_LARGE,
        &format!("the body exceeds the limit of {limit} bytes"),
    ))
}

/// Returns `415`, `-32600`, naming the content type refused.
pub(crate) fn unsupported_media_type(content_type: &HeaderValue) -> Response<ResponseBody> {
    let shown = content_type.to_str().unwrap_or("(not text)");
    let mut res = refusal(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        &format!(
            "content type `{shown}` is not JSON; send the header `content-type: application/json` (curl: -H 'content-type: application/json')"
        ),
    );
    // RFC 9110 suggests telling the client what would have been taken.
    res.headers_mut().insert("accept-post", json_type());
    res
}

/// Returns `400`, `-32600`: the body could not be read (the client went away, or sent broken
/// chunks).
pub(crate) fn unreadable_body() -> Response<ResponseBody> {
    closing(refusal(
        StatusCode::BAD_REQUEST,
        "the request body could not be read",
    ))
}

/// Returns `408`, `-32600`: the body did not arrive within the body read timeout.
pub(crate) fn body_timed_out() -> Response<ResponseBody> {
    closing(refusal(
        StatusCode::REQUEST_TIMEOUT,
        "the request body did not arrive in time",
    ))
}

/// Returns `res` for a request whose body is left unread, asking the client to close the
/// connection then: it cannot carry another request.
pub fn unread<B: Body>(req: &Request<B>, res: Response<ResponseBody>) -> Response<ResponseBody> {
    if req.body().is_end_stream() {
        res
    } else {
        closing(res)
    }
}

/// Returns `200`, `-32700`: the body is not UTF-8, so it cannot be JSON.
pub fn not_utf8() -> Response<ResponseBody> {
    envelope(StatusCode::OK, &RpcError::parse_error())
}
