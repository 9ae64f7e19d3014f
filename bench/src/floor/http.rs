//! The floor's HTTP: one connection served by hyper 1's `http1` or `http2` builder, `POST /rpc`
//! answered from the body collected whole. Apart from the rest of the floor (TLS, WebSocket),
//! so that the instruction gate (`bench/gate/`) builds it without them.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::server::conn::{http1, http2};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite};

use super::answer;

/// Serves one connection, HTTP/2 with `h2`, else HTTP/1.1 (keep-alive), until it ends.
pub async fn serve_http<T>(io: T, h2: bool) -> hyper::Result<()>
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let io = TokioIo::new(io);
    if h2 {
        http2::Builder::new(TokioExecutor::new())
            .serve_connection(io, service_fn(rpc))
            .await?;
    } else {
        http1::Builder::new()
            .serve_connection(io, service_fn(rpc))
            .await?;
    }
    Ok(())
}

/// `POST /rpc`: the answer with `200`, or `204` when there is none (notifications).
async fn rpc(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let status = |status| {
        let mut res = Response::new(Full::default());
        *res.status_mut() = status;
        Ok(res)
    };
    if req.uri().path() != "/rpc" {
        return status(StatusCode::NOT_FOUND);
    }
    if req.method() != Method::POST {
        return status(StatusCode::METHOD_NOT_ALLOWED);
    }
    let Ok(body) = req.into_body().collect().await else {
        return status(StatusCode::BAD_REQUEST);
    };
    let Some(answer) = answer::answer(&body.to_bytes()) else {
        return status(StatusCode::NO_CONTENT);
    };
    let mut res = Response::new(Full::new(Bytes::from(answer)));
    res.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(res)
}
