//! The HTTP request path: arbitrary methods, headers and bodies through the endpoint. Every reply
//! has a status from the documented set and, but for `204`, a JSON-RPC body that is
//! well-formed; a valid call is answered `200` with its id.
#![no_main]

use std::sync::OnceLock;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt as _, Full};
use jrpc_fuzz::{block_on, check_answer, check_handled, methods};
use jrpc_runtime::http::{HttpServer, RpcService};
use libfuzzer_sys::fuzz_target;
use tower_service::Service as _;

const STATUSES: [u16; 10] = [200, 204, 400, 405, 408, 413, 415, 500, 503, 431];

fuzz_target!(|data: &[u8]| {
    static SERVICE: OnceLock<RpcService> = OnceLock::new();
    let service = SERVICE.get_or_init(|| {
        HttpServer::builder(methods())
            .max_message_size(4096)
            .always_send_request_id(true)
            .build()
            .expect("valid settings")
            .service()
    });
    let [selector, rest @ ..] = data else {
        return;
    };
    // The head (one header a line) and the body, split at the first blank line.
    let split = rest.windows(2).position(|w| w == b"\n\n");
    let (head, body) = match split {
        Some(at) => (&rest[..at], &rest[at + 2..]),
        None => (&[][..], rest),
    };
    let method =
        [Method::POST, Method::POST, Method::GET, Method::PUT][usize::from(selector % 4)].clone();
    let mut req = Request::builder().method(method.clone()).uri("/rpc");
    let mut json = true;
    for line in head.split(|b| *b == b'\n') {
        let Some(colon) = line.iter().position(|b| *b == b':') else {
            continue;
        };
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(&line[..colon]),
            HeaderValue::from_bytes(line[colon + 1..].trim_ascii()),
        ) else {
            continue;
        };
        if name == http::header::CONTENT_TYPE {
            json = false;
        }
        req = req.header(name, value);
    }
    let Ok(req) = req.body(Full::new(Bytes::copy_from_slice(body))) else {
        return;
    };
    let declared = req.headers().contains_key(http::header::CONTENT_LENGTH);
    let res = block_on(service.clone().call(req)).expect("the endpoint never fails");
    let status = res.status();
    assert!(STATUSES.contains(&status.as_u16()), "status {status}");
    assert!(res.headers().contains_key("x-request-id"));
    let bytes = block_on(res.into_body().collect())
        .expect("a body in memory")
        .to_bytes();
    if status == StatusCode::NO_CONTENT {
        assert!(bytes.is_empty());
        return;
    }
    let text = std::str::from_utf8(&bytes).expect("a reply is UTF-8");
    check_answer(text);
    // A plain POST of a small UTF-8 body is handed to the table as it is.
    if method == Method::POST
        && json
        && !declared
        && body.len() <= 4096
        && let Ok(sent) = std::str::from_utf8(body)
    {
        assert!(
            status == StatusCode::OK || status == StatusCode::NO_CONTENT,
            "{status}"
        );
        check_handled(sent, Some(text));
    }
});
