//! The jrpc HTTP endpoint mounted in an axum `Router`, beside an ordinary route, behind a bearer
//! token check.
//!
//! ```text
//! cargo run --example axum_mount -- --listen 127.0.0.1:3000 --token s3cret
//! curl http://127.0.0.1:3000/health
//! curl -H 'authorization: Bearer s3cret' -H 'content-type: application/json' \
//!      -d '{"jsonrpc":"2.0","method":"add","params":[2,3],"id":1}' http://127.0.0.1:3000/rpc
//! ```
//!
//! - `GET /health` answers `ok`, without a token.
//! - `POST /rpc` is JSON-RPC; a missing or wrong token is answered `401` by the tower-http layer,
//!   before any JSON-RPC runs.
//!
//! The token comes from `--token`, else the `JRPC_TOKEN` environment variable, else `s3cret`
//! (an example default: set a real one). Ctrl-C drains in-flight calls, then stops.

use std::error::Error;
use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::header::InvalidHeaderValue;
use axum::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use axum::http::{HeaderValue, Request, Response, StatusCode};
use axum::routing::get;
use jrpc_runtime::http::HttpServer;
use jrpc_runtime::server::Drained;
use jrpc_runtime::{Context, Methods, RpcError};
use tower_http::validate_request::{ValidateRequest, ValidateRequestHeaderLayer};

fn methods() -> Methods {
    let mut methods = Methods::new();
    let registered = methods
        .register("add", &["a", "b"], |(a, b): (i64, i64), _| async move {
            Ok::<_, RpcError>(a + b)
        })
        .and_then(|m| {
            m.register("whoami", &[], |(): (), ctx: Context| async move {
                Ok::<_, RpcError>(ctx.request_tag().map(str::to_owned))
            })
        });
    if let Err(err) = registered {
        unreachable!("the example's method names are distinct and unreserved: {err}");
    }
    methods
}

struct Args {
    listen: SocketAddr,
    token: String,
}

fn parse_args() -> Result<Args, String> {
    let mut args =
        jrpc_examples::Args::from_env("axum_mount", "axum_mount [--listen ADDR] [--token TOKEN]");
    let listen = args.value("--listen");
    let token = args.value("--token");
    args.finish();
    let listen: SocketAddr = match listen {
        Some(value) => value
            .parse()
            .map_err(|err| format!("--listen {value}: {err}"))?,
        None => ([127, 0, 0, 1], 3000).into(),
    };
    let token = token
        .or_else(|| std::env::var("JRPC_TOKEN").ok())
        .unwrap_or_else(|| "s3cret".to_owned());
    if BearerToken::new(&token).is_err() {
        return Err("--token must be printable ASCII".to_owned());
    }
    Ok(Args { listen, token })
}

/// Answers `401` unless `authorization` is `Bearer <token>`; a tower-http request validator.
#[derive(Clone)]
struct BearerToken {
    expected: HeaderValue,
}

impl BearerToken {
    fn new(token: &str) -> Result<Self, InvalidHeaderValue> {
        Ok(Self {
            expected: HeaderValue::from_str(&format!("Bearer {token}"))?,
        })
    }
}

impl<B> ValidateRequest<B> for BearerToken {
    type ResponseBody = Body;

    fn validate(&mut self, req: &mut Request<B>) -> Result<(), Response<Body>> {
        if req.headers().get(AUTHORIZATION) == Some(&self.expected) {
            return Ok(());
        }
        let mut denied = Response::new(Body::from("missing or wrong bearer token\n"));
        *denied.status_mut() = StatusCode::UNAUTHORIZED;
        denied
            .headers_mut()
            .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        Err(denied)
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };

    let server = HttpServer::builder(methods())
        .max_message_size(1024 * 1024)
        .max_buffered(2 * 1024 * 1024)
        .handler_timeout(Some(Duration::from_secs(30)))
        .drain_timeout(Duration::from_secs(10))
        .build()?;
    let shutdown = server.shutdown_handle();

    let auth = ValidateRequestHeaderLayer::custom(BearerToken::new(&args.token)?);
    let app = Router::new()
        .route_service("/rpc", server.service())
        // `route_layer` guards the routes above it only: `/health` stays open.
        .route_layer(auth)
        .route("/health", get(|| async { "ok" }));

    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let _ = tokio::signal::ctrl_c().await;
            println!("draining...");
            // New requests get 503 while in-flight calls finish; then axum closes connections.
            let drained = shutdown.shutdown().await;
            println!("{drained:?}");
            if let Drained::BudgetSpent { calls, .. } = drained {
                eprintln!("axum_mount: the drain time ran out with {calls} calls in flight");
                std::process::exit(1);
            }
        })
        .await?;
    Ok(())
}
