//! Serves the modern era (2026-07-28) over Streamable HTTP: one POST, one request, no session; its
//! headers checked against its body in the order the specification ranks their errors, each
//! answered with the request's id (the guide's MCP chapter, "The modern era, rule by rule").

use std::sync::atomic::Ordering;

use ::http::header::HeaderName;
use ::http::request::Parts;
use ::http::{HeaderMap, HeaderValue, Response, StatusCode};
use hyper::body::Bytes;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use jrpc_runtime::http::EndpointRequest;
use jrpc_runtime::http::reply::{self, ResponseBody, json};
use jrpc_runtime::http::sse::{self, SseAnswer};
use jrpc_runtime::wire::{self, incoming};
use jrpc_runtime::{ErrorCode, RpcError};

use super::endpoint::{McpEndpoint, session_header, trace_of_meta, version_header};
use super::keep_alive::keep_alive;
use crate::data::{ListenEnd, Mcp};
use crate::protocol::base64;
use crate::protocol::era::{self, RequestMeta};
use crate::protocol::version;

/// `Mcp-Method`.
fn method_header() -> HeaderName {
    HeaderName::from_static("mcp-method")
}

/// `Mcp-Name`.
fn name_header() -> HeaderName {
    HeaderName::from_static("mcp-name")
}

/// Returns whether a POST is the modern era's: its body's `_meta` names a revision; or, without a
/// session, its `MCP-Protocol-Version` names no legacy revision (it then fails the `_meta`
/// checks, as a modern client that left `_meta` out would).
pub(super) fn is_modern(headers: &HeaderMap, text: &str) -> bool {
    let named = incoming::parse_request(text)
        .ok()
        .is_some_and(|req| RequestMeta::of(req.params).is_modern());
    if named {
        return true;
    }
    if headers.contains_key(session_header()) {
        return false;
    }
    header(headers, &version_header()).is_some_and(|v| !version::is_legacy_http(v))
}

/// Returns a header's value, trimmed of the spaces and tabs around it; `None` when absent or not
/// text.
fn header<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Option<&'a str> {
    let value = headers.get(name)?.to_str().ok()?;
    Some(value.trim_matches([' ', '\t']))
}

impl McpEndpoint {
    /// Answers a modern POST by the rules of the module docs.
    pub(super) async fn post_modern(
        &self,
        parts: Parts,
        text: String,
        request: EndpointRequest,
    ) -> Response<ResponseBody> {
        match check(&parts.headers, &text, &self.shared.mcp) {
            Checked::Refused(res) => return res,
            Checked::Notification => {
                let mut res = reply::no_content();
                *res.status_mut() = StatusCode::ACCEPTED;
                return res;
            }
            Checked::Request => {}
        }
        let shared = &*self.shared;
        let events = sse::asks_for_events(&parts.headers);
        let mut ctx = request
            .context(parts.headers)
            .with_extension(ListenEnd(shared.closing.clone()));
        let parsed = incoming::parse_request(&text).ok();
        let listen = parsed
            .as_ref()
            .is_some_and(|req| req.method == "subscriptions/listen");
        if let Some(trace) = parsed.and_then(|req| trace_of_meta(req.params)) {
            ctx = ctx.with_trace(trace);
        }
        if !events {
            let answer = request.methods().handle_in(&text, &ctx).await;
            return answered(Bytes::from(answer.unwrap_or_default()));
        }
        let stream = shared.next_stream.fetch_add(1, Ordering::Relaxed);
        let (methods, config) = (request.methods().clone(), request.stream_config().clone());
        let answer = SseAnswer {
            methods: &methods,
            log: &shared.log,
            stream,
            replies: &shared.replies,
            config: &config,
        };
        let answer = answer.run(ctx, text, request, sse::Cancel::IfGone).await;
        match answer {
            sse::Answered::Json(bytes) => answered(bytes),
            sse::Answered::Events(body) if listen => {
                let body = keep_alive(body, shared.settings.keep_alive);
                no_buffering(sse::events_reply(body))
            }
            other => no_buffering(sse::reply(other)),
        }
    }
}

/// `res` with `X-Accel-Buffering: no`, so that a proxy passes its events on as they come.
fn no_buffering(mut res: Response<ResponseBody>) -> Response<ResponseBody> {
    res.headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    res
}

/// Says what the checks found.
enum Checked {
    /// A request that passed: run it.
    Request,
    /// A notification: nothing to run or answer.
    Notification,
    /// The reply refusing it.
    Refused(Response<ResponseBody>),
}

/// Makes the checks a modern POST passes before it runs, in order.
fn check(headers: &HeaderMap, text: &str, mcp: &Mcp) -> Checked {
    let req = match incoming::parse_request(text) {
        Ok(req) => req,
        Err(rejection) => return Checked::Refused(refused(Bytes::from(rejection.answer()))),
    };
    let Some(id) = req.id else {
        return Checked::Notification;
    };
    let refuse =
        |err: RpcError| Checked::Refused(refused(Bytes::from(wire::error_answer(&err, Some(id)))));
    let Some(version) = header(headers, &version_header()) else {
        return refuse(era::header_mismatch(
            "the MCP-Protocol-Version header is required",
        ));
    };
    let meta = RequestMeta::of(req.params);
    if let Err(err) = meta.check_members() {
        return refuse(err);
    }
    let named = meta.version().unwrap_or_default();
    if version != named {
        return refuse(era::header_mismatch(&format!(
            "MCP-Protocol-Version header value '{version}' does not match body value '{named}'"
        )));
    }
    if version::modern(named).is_none() {
        return refuse(era::unsupported_version(named));
    }
    let method = &*req.method;
    match header(headers, &method_header()) {
        Some(sent) if sent == method => {}
        Some(sent) => {
            return refuse(era::header_mismatch(&format!(
                "Mcp-Method header value '{sent}' does not match body value '{method}'"
            )));
        }
        None => return refuse(era::header_mismatch("the Mcp-Method header is required")),
    }
    match check_name(headers, method, req.params)
        .and_then(|()| check_params(headers, method, req.params, mcp))
    {
        Ok(()) => Checked::Request,
        Err(err) => refuse(err),
    }
}

/// `tools/call`'s arguments that headers mirror (`x-mcp-header`) against their
/// `Mcp-Param-{Name}` headers: an argument given needs its header, decoded equal to it (numbers
/// compared as numbers); a header needs its argument.
fn check_params(
    headers: &HeaderMap,
    method: &str,
    params: Option<&RawValue>,
    mcp: &Mcp,
) -> Result<(), RpcError> {
    #[derive(Deserialize)]
    struct Call {
        name: String,
        #[serde(default)]
        arguments: Option<serde_json::Map<String, Value>>,
    }
    if method != "tools/call" {
        return Ok(());
    }
    let Some(call) = params.and_then(|raw| serde_json::from_str::<Call>(raw.get()).ok()) else {
        return Ok(());
    };
    for mirrored in mcp.param_headers(&call.name) {
        let name = format!("mcp-param-{}", mirrored.header.to_ascii_lowercase());
        let Ok(name) = HeaderName::from_bytes(name.as_bytes()) else {
            continue;
        };
        let given = call
            .arguments
            .as_ref()
            .and_then(|args| args.get(&mirrored.param))
            .filter(|value| !value.is_null());
        let sent = match headers.get(&name) {
            None => None,
            Some(value) => Some(
                value
                    .to_str()
                    .ok()
                    .map(|text| text.trim_matches([' ', '\t']))
                    .and_then(decode_header)
                    .ok_or_else(|| {
                        era::header_mismatch(&format!("{name} is not a valid header value"))
                    })?,
            ),
        };
        let matches = match (given, &sent) {
            (None, None) => true,
            (Some(Value::String(given)), Some(sent)) => given == sent,
            (Some(Value::Number(given)), Some(sent)) => sent.parse::<f64>().ok() == given.as_f64(),
            (Some(Value::Bool(given)), Some(sent)) => sent == if *given { "true" } else { "false" },
            _ => false,
        };
        if !matches {
            return Err(era::header_mismatch(&format!(
                "{name} does not match the argument `{}`",
                mirrored.param
            )));
        }
    }
    Ok(())
}

/// Reads the body's member that `Mcp-Name` must match, for the methods that have one.
#[derive(Deserialize)]
struct Named<'a> {
    #[serde(borrow, default)]
    name: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    uri: Option<std::borrow::Cow<'a, str>>,
    #[serde(rename = "taskId", borrow, default)]
    task_id: Option<std::borrow::Cow<'a, str>>,
}

/// Checks `Mcp-Name` against `params.name` (`tools/call`, `prompts/get`), `params.uri`
/// (`resources/read`) or `params.taskId` (`tasks/get`, `tasks/update`, `tasks/cancel`); a body
/// without the member is left to its handler to refuse.
fn check_name(
    headers: &HeaderMap,
    method: &str,
    params: Option<&RawValue>,
) -> Result<(), RpcError> {
    let named = params.and_then(|raw| serde_json::from_str::<Named<'_>>(raw.get()).ok());
    let body = match (method, named) {
        (
            "tools/call" | "prompts/get",
            Some(Named {
                name: Some(name), ..
            }),
        ) => name,
        ("resources/read", Some(Named { uri: Some(uri), .. })) => uri,
        // The tasks extension's (SEP-2663): the task's id.
        (
            "tasks/get" | "tasks/update" | "tasks/cancel",
            Some(Named {
                task_id: Some(id), ..
            }),
        ) => id,
        _ => return Ok(()),
    };
    let Some(sent) = header(headers, &name_header()) else {
        return Err(era::header_mismatch("the Mcp-Name header is required"));
    };
    let sent = decode_header(sent).ok_or_else(|| {
        era::header_mismatch("the Mcp-Name header's base64 value does not decode")
    })?;
    if sent == body {
        Ok(())
    } else {
        Err(era::header_mismatch(&format!(
            "Mcp-Name header value '{sent}' does not match body value '{body}'"
        )))
    }
}

/// Returns a header value as sent, or decoded from `=?base64?…?=`; `None` for that form with bad
/// base64 or text that is not UTF-8.
pub(super) fn decode_header(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        Some(encoded) => String::from_utf8(base64::decode(encoded)?).ok(),
        None => Some(value.to_owned()),
    }
}

/// `400` with the error `body`.
fn refused(body: Bytes) -> Response<ResponseBody> {
    json(StatusCode::BAD_REQUEST, body)
}

/// Gives a JSON answer its status: `404` for a method not found, `400` for a missing capability,
/// `200` for anything else.
fn answered(body: Bytes) -> Response<ResponseBody> {
    #[derive(Deserialize)]
    struct Answer {
        error: Option<Code>,
    }
    #[derive(Deserialize)]
    struct Code {
        code: i32,
    }
    let status = if body.starts_with(br#"{"jsonrpc":"2.0","error":"#) {
        match serde_json::from_slice::<Answer>(&body).map(|a| a.error.map(|e| e.code)) {
            Ok(Some(code)) if code == ErrorCode::METHOD_NOT_FOUND.code() => StatusCode::NOT_FOUND,
            Ok(Some(code)) if code == era::MISSING_CAPABILITY.code() => StatusCode::BAD_REQUEST,
            _ => StatusCode::OK,
        }
    } else {
        StatusCode::OK
    };
    json(status, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_decode_from_base64_strictly() {
        assert_eq!(decode_header("add").as_deref(), Some("add"));
        assert_eq!(
            decode_header("=?base64?SGVsbG8=?=").as_deref(),
            Some("Hello")
        );
        assert_eq!(decode_header("=?base64?SGVsbG8?="), None);
        assert_eq!(decode_header("=?base64?SGVs!!!bG8=?="), None);
        assert_eq!(
            decode_header("=?base64?SGVsbG8=").as_deref(),
            Some("=?base64?SGVsbG8="),
            "no end marker: a literal"
        );
    }

    #[test]
    fn the_era_of_a_post_is_its_metas_then_its_headers() {
        let meta = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let plain = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        let mut headers = HeaderMap::new();
        assert!(is_modern(&headers, meta));
        assert!(!is_modern(&headers, plain));
        headers.insert(version_header(), HeaderValue::from_static("2025-06-18"));
        assert!(!is_modern(&headers, plain));
        headers.insert(version_header(), HeaderValue::from_static("2026-07-28"));
        assert!(is_modern(&headers, plain));
        headers.insert(session_header(), HeaderValue::from_static("abc"));
        assert!(!is_modern(&headers, plain), "a session is legacy");
        assert!(is_modern(&headers, meta), "unless _meta names a revision");
    }
}
