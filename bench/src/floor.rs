//! The floor: the least a Rust server can do to answer the benchmark's `add` call, with no
//! framework at all. HTTP on hyper 1 (`POST /rpc`), WebSocket on tokio-tungstenite (`GET /ws`),
//! both on one listener, each body parsed into typed structs by serde_json and each answer
//! serialized from one. It answers `add` as the contract does: the id echoed as written, the
//! answer `{"jsonrpc":"2.0","result":N,"id":ID}`, a batch answered in order, and anything it does
//! not understand (another method, bad params, not JSON) with a JSON-RPC error; it skips what a
//! framework adds around that (limits, tags, spans, hooks, shutdown).

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{FutureExt as _, SinkExt as _, StreamExt as _};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::header::CONTENT_TYPE;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use jrpc_bench::BoxError;

/// A request as the floor reads it: the envelope and `add`'s two positional params, typed.
#[derive(Deserialize)]
struct Call<'a> {
    jsonrpc: &'a str,
    method: &'a str,
    params: (i64, i64),
    #[serde(borrow)]
    id: &'a RawValue,
}

/// A successful answer, serialized from its typed form.
#[derive(Serialize)]
struct Answer<'a> {
    jsonrpc: &'static str,
    result: i64,
    id: &'a RawValue,
}

/// A failed answer.
#[derive(Serialize)]
struct Failure<'a> {
    jsonrpc: &'static str,
    error: ErrorObject,
    id: Option<&'a RawValue>,
}

#[derive(Serialize)]
struct ErrorObject {
    code: i32,
    message: &'static str,
}

/// One element's answer, success or failure.
#[derive(Serialize)]
#[serde(untagged)]
enum Reply<'a> {
    Answer(Answer<'a>),
    Failure(Failure<'a>),
}

fn reply(call: Result<Call<'_>, serde_json::Error>) -> Reply<'_> {
    match call {
        Ok(call) if call.jsonrpc == "2.0" && call.method == "add" => Reply::Answer(Answer {
            jsonrpc: "2.0",
            result: call.params.0.wrapping_add(call.params.1),
            id: call.id,
        }),
        Ok(call) => failure(-32601, "Method not found", Some(call.id)),
        Err(_) => failure(-32600, "Invalid Request", None),
    }
}

fn failure<'a>(code: i32, message: &'static str, id: Option<&'a RawValue>) -> Reply<'a> {
    Reply::Failure(Failure {
        jsonrpc: "2.0",
        error: ErrorObject { code, message },
        id,
    })
}

/// The answer to one body: a request, or a batch of them.
fn answer(body: &[u8]) -> Vec<u8> {
    let written = if body.first() == Some(&b'[') {
        // Typed in one pass when every element is a good call; element by element otherwise.
        if let Ok(calls) = serde_json::from_slice::<Vec<Call<'_>>>(body) {
            let replies: Vec<Reply<'_>> = calls.into_iter().map(|call| reply(Ok(call))).collect();
            return serde_json::to_vec(&replies).unwrap_or_default();
        }
        match serde_json::from_slice::<Vec<&RawValue>>(body) {
            Ok(elements) => {
                let replies: Vec<Reply<'_>> = elements
                    .iter()
                    .map(|raw| reply(serde_json::from_str(raw.get())))
                    .collect();
                serde_json::to_vec(&replies)
            }
            Err(_) => serde_json::to_vec(&failure(-32700, "Parse error", None)),
        }
    } else {
        serde_json::to_vec(&reply(serde_json::from_slice(body)))
    };
    // Serializing these types into a `Vec` cannot fail.
    written.unwrap_or_default()
}

/// Serves on `listener` until the process exits: each connection is HTTP or a WebSocket, told
/// apart by its first bytes (`GET ` starts an upgrade).
pub async fn serve(listener: TcpListener) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors, say: try again shortly.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        // A connection's error is the load generator hanging up (the benchmark checks every
        // answer on its side): nothing to report.
        tokio::spawn(async move {
            let _ = connection(stream).await;
        });
    }
}

async fn connection(stream: TcpStream) -> Result<(), BoxError> {
    let mut first = [0u8; 4];
    loop {
        let n = stream.peek(&mut first).await?;
        if n == 0 {
            return Ok(());
        }
        if n == first.len() {
            break;
        }
        tokio::task::yield_now().await;
    }
    if &first == b"GET " {
        websocket(stream).await
    } else {
        let service = service_fn(http);
        http1::Builder::new()
            .keep_alive(true)
            .serve_connection(TokioIo::new(stream), service)
            .await
            .or_else(|err| {
                if err.is_incomplete_message() {
                    Ok(())
                } else {
                    Err(err.into())
                }
            })
    }
}

async fn http(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    if req.method() != Method::POST || req.uri().path() != "/rpc" {
        let mut res = Response::new(Full::default());
        *res.status_mut() = StatusCode::NOT_FOUND;
        return Ok(res);
    }
    let body = match req.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            let mut res = Response::new(Full::default());
            *res.status_mut() = StatusCode::BAD_REQUEST;
            return Ok(res);
        }
    };
    let mut res = Response::new(Full::new(Bytes::from(answer(&body))));
    res.headers_mut().insert(
        CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    Ok(res)
}

/// One WebSocket: each text frame answered in turn, in this task; the answers to the frames that
/// arrived together leave in one write, as a framework's writer would send them.
async fn websocket(stream: TcpStream) -> Result<(), BoxError> {
    // The buffer sizes jrpc's WebSocket server uses, so that the memory figures compare.
    let config = WebSocketConfig::default()
        .read_buffer_size(4096)
        .write_buffer_size(4096);
    let mut ws = tokio_tungstenite::accept_async_with_config(stream, Some(config)).await?;
    while let Some(message) = ws.next().await {
        let mut message = Some(message?);
        while let Some(current) = message.take() {
            match current {
                Message::Text(text) => {
                    let answer = answer(text.as_bytes());
                    // serde_json wrote it: UTF-8.
                    let answer = String::from_utf8(answer).unwrap_or_default();
                    ws.feed(Message::text(answer)).await?;
                }
                Message::Close(_) => return Ok(()),
                // tungstenite answers pings itself.
                _ => {}
            }
            message = match ws.next().now_or_never() {
                Some(Some(next)) => Some(next?),
                Some(None) => return Ok(()),
                None => None,
            };
        }
        ws.flush().await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::answer;

    #[test]
    fn answers_as_the_contract_does() {
        let text = |body: &str| String::from_utf8(answer(body.as_bytes())).unwrap();
        assert_eq!(
            text(r#"{"jsonrpc":"2.0","method":"add","params":[2,3],"id":1.0}"#),
            r#"{"jsonrpc":"2.0","result":5,"id":1.0}"#
        );
        assert_eq!(
            text(
                r#"[{"jsonrpc":"2.0","method":"add","params":[2,3],"id":"a"},{"jsonrpc":"2.0","method":"x","params":[1,2],"id":2}]"#
            ),
            r#"[{"jsonrpc":"2.0","result":5,"id":"a"},{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":2}]"#
        );
    }
}
