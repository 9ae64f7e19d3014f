//! Runs the WebSocket handshake over hyper's upgrade: check the request, answer `101`, and hand the
//! upgraded socket on.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use ::http::header::{
    CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_VERSION, UPGRADE,
};
use ::http::request::Parts;
use ::http::{HeaderValue, Request, Response, StatusCode};
use hyper::upgrade::{OnUpgrade, Upgraded};
use hyper_util::rt::TokioIo;
#[cfg(feature = "http")]
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
#[cfg(feature = "http")]
use tokio_util::either::Either;

use super::connection::{Meter, Metered};
#[cfg(feature = "http")]
use crate::http::Rewound;
use crate::limits::WriteDeadline;
use crate::server::{ResponseBody as Body, refusal};

/// Names an upgraded socket, cut when the client takes no byte for the write timeout, its incoming
/// messages counted in the server's budget.
pub(super) type Socket = WebSocketStream<Metered<WriteDeadline<Stream>>>;

/// Names the stream an upgraded socket runs on: the TCP stream itself when this crate's HTTP
/// server upgraded it (a write then goes straight to it, not through hyper's box and the HTTP
/// connection's wrappers: a connection that pushes to many subscribers makes many), hyper's
/// upgraded connection otherwise (another server's, or one over TLS).
#[cfg(feature = "http")]
pub(super) type Stream = Either<Rewound<TcpStream>, TokioIo<Upgraded>>;
/// Names the stream an upgraded socket runs on: hyper's upgraded connection.
#[cfg(not(feature = "http"))]
pub(super) type Stream = TokioIo<Upgraded>;

/// Returns the stream under `upgraded`.
fn stream(upgraded: Upgraded) -> Stream {
    #[cfg(feature = "http")]
    return match crate::http::tcp_under(upgraded) {
        Ok(tcp) => Either::Left(tcp),
        Err(upgraded) => Either::Right(TokioIo::new(upgraded)),
    };
    #[cfg(not(feature = "http"))]
    TokioIo::new(upgraded)
}

/// Says why an upgrade was refused: the status and what was wrong.
type Refused = (StatusCode, &'static str);

/// Checks an upgrade request and builds the `101` answer; or says why it is refused.
fn handshake(req: &mut Parts) -> Result<(Response<Body>, OnUpgrade), Refused> {
    let headers = &req.headers;
    let has_token = |name, token: &str| {
        headers.get_all(name).iter().any(|value| {
            value.to_str().is_ok_and(|value| {
                value
                    .split(',')
                    .any(|part| part.trim().eq_ignore_ascii_case(token))
            })
        })
    };
    if !has_token(UPGRADE, "websocket") || !has_token(CONNECTION, "upgrade") {
        return Err((
            StatusCode::BAD_REQUEST,
            "expected a WebSocket upgrade (`Connection: Upgrade`, `Upgrade: websocket`)",
        ));
    }
    if headers
        .get(SEC_WEBSOCKET_VERSION)
        .map(HeaderValue::as_bytes)
        != Some(b"13")
    {
        return Err((
            StatusCode::UPGRADE_REQUIRED,
            "only WebSocket version 13 is spoken",
        ));
    }
    let Some(key) = headers.get(SEC_WEBSOCKET_KEY) else {
        return Err((StatusCode::BAD_REQUEST, "`Sec-WebSocket-Key` is missing"));
    };
    let accept = derive_accept_key(key.as_bytes());
    let Some(on_upgrade) = req.extensions.remove::<OnUpgrade>() else {
        return Err((
            StatusCode::BAD_REQUEST,
            "this connection cannot be upgraded",
        ));
    };
    let mut res = Response::new(crate::server::ResponseBody::default());
    *res.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let out = res.headers_mut();
    out.insert(CONNECTION, HeaderValue::from_static("upgrade"));
    out.insert(UPGRADE, HeaderValue::from_static("websocket"));
    if let Ok(accept) = HeaderValue::from_str(&accept) {
        out.insert(SEC_WEBSOCKET_ACCEPT, accept);
    }
    Ok((res, on_upgrade))
}

/// Returns the answer to a refused upgrade, with the version spoken when that was the problem.
fn refused((status, why): Refused) -> Response<Body> {
    tracing::warn!(
        status = status.as_u16(),
        reason = why,
        "WebSocket upgrade refused"
    );
    let mut res = refusal(status, why);
    if status == StatusCode::UPGRADE_REQUIRED {
        res.headers_mut()
            .insert(SEC_WEBSOCKET_VERSION, HeaderValue::from_static("13"));
    }
    res
}

/// Checks an upgrade request and answers it; once the upgrade completes, `serve` runs the socket
/// in a task of its own, cut after `write_timeout` without progress, its incoming messages
/// counted by `meter`.
pub(super) fn accept<B, F, Fut>(
    req: Request<B>,
    config: WebSocketConfig,
    write_timeout: Option<Duration>,
    meter: Option<Arc<Meter>>,
    serve: F,
) -> Response<Body>
where
    F: FnOnce(Socket) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (mut parts, _body) = req.into_parts();
    let (res, on_upgrade) = match handshake(&mut parts) {
        Ok(pair) => pair,
        Err(why) => return refused(why),
    };
    tokio::spawn(async move {
        let io = match on_upgrade.await {
            Ok(io) => WriteDeadline::new(stream(io), write_timeout),
            Err(err) => return tracing::debug!(error = %err, "WebSocket upgrade failed"),
        };
        let io = Metered::new(io, meter, false);
        let ws = WebSocketStream::from_raw_socket(io, Role::Server, Some(config)).await;
        // A task of its own: every wake-up of the socket's task then starts at its future, not
        // at this block's state a cache line away.
        tokio::spawn(serve(ws));
    });
    res
}
