//! `WsClient`: calls both ways, server pushes delivered to the client's handlers, a generated
//! stub running over it, and a refused upgrade.

use std::net::SocketAddr;

use jrpc_runtime::http::HttpServer;
use jrpc_runtime::ws::{WsClient, WsServer};
use jrpc_runtime::{
    Caller as _, ClientError, Context, ErrorCode, Methods, RpcError, Transport, rpc_service,
};
use jrpc_tests::servers::{serve_http, serve_ws};
use jrpc_tests::{bounded, eventually};
use tokio::sync::mpsc;

/// What the test server offers.
#[rpc_service]
pub trait Greeter {
    /// Adds two numbers.
    async fn add(&self, a: i64, b: i64) -> i64;
    /// Asks the calling client for its name, then greets it.
    async fn greet(&self, ctx: &Context) -> Result<String, RpcError>;
    /// Pushes `count` notifications to the caller, then answers.
    async fn count_to(&self, count: u32, ctx: &Context) -> u32;
}

struct Service;

impl Greeter for Service {
    async fn add(&self, a: i64, b: i64) -> i64 {
        a + b
    }

    async fn greet(&self, ctx: &Context) -> Result<String, RpcError> {
        assert_eq!(ctx.transport(), Transport::WebSocket);
        let client = ctx.peer().ok_or_else(RpcError::internal)?;
        let name: String = client
            .call("whoareyou", ())
            .await
            .map_err(|err| RpcError::internal().with_data(&err.to_string()))?;
        Ok(format!("hello, {name}"))
    }

    async fn count_to(&self, count: u32, ctx: &Context) -> u32 {
        if let Some(client) = ctx.peer() {
            for n in 1..=count {
                let _ = client.notify("counted", [n]).await;
            }
        }
        count
    }
}

/// The client's handlers: an answer for the server's call, and a channel for its pushes.
fn client_methods() -> (Methods, mpsc::UnboundedReceiver<u32>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut methods = Methods::new();
    methods
        .register("whoareyou", &[], |(): (), _| async move {
            Ok::<_, RpcError>("ada")
        })
        .unwrap();
    methods
        .register_notification("counted", &["n"], move |(n,): (u32,), _| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(n);
            }
        })
        .unwrap();
    (methods, rx)
}

async fn start() -> SocketAddr {
    let server = WsServer::builder(Service.into_methods()).build().unwrap();
    serve_ws(server).await.0
}

/// A fresh server, and a client connected to it with [`client_methods`].
async fn connected() -> (WsClient, mpsc::UnboundedReceiver<u32>) {
    let addr = start().await;
    let (methods, pushes) = client_methods();
    let client = bounded(WsClient::connect(&format!("ws://{addr}/"), methods))
        .await
        .unwrap();
    (client, pushes)
}

#[tokio::test]
async fn calls_go_both_ways() {
    let (client, _pushes) = connected().await;
    let greeting: String = bounded(client.call("greet", ())).await.unwrap();
    assert_eq!(greeting, "hello, ada");
    let sum: i64 = bounded(client.call("add", [20, 22])).await.unwrap();
    assert_eq!(sum, 42);
}

#[tokio::test]
async fn server_pushes_reach_the_clients_handlers_before_the_answer() {
    let (client, mut pushes) = connected().await;
    let count: u32 = bounded(client.call("count_to", [3])).await.unwrap();
    assert_eq!(count, 3);
    // Notification handlers finish before the next message is read, so all three are in.
    for n in 1..=3 {
        assert_eq!(pushes.try_recv().ok(), Some(n));
    }
}

#[tokio::test]
async fn a_generated_stub_runs_over_the_client() {
    let (client, _pushes) = connected().await;
    let stub = GreeterClient::new(client.clone());
    assert_eq!(bounded(stub.add(1, 2)).await.unwrap(), 3);
    assert_eq!(bounded(stub.greet()).await.unwrap(), "hello, ada");
    let unknown: Result<u32, ClientError> = bounded(client.call("nope", ())).await;
    let Err(ClientError::Failed(err)) = unknown else {
        panic!("{unknown:?}")
    };
    assert_eq!(err.code(), ErrorCode::METHOD_NOT_FOUND);
}

#[tokio::test]
async fn the_client_works_against_the_http_servers_websocket_path() {
    let server = HttpServer::builder(Service.into_methods()).build().unwrap();
    let (addr, _) = serve_http(server).await;
    let (methods, mut pushes) = client_methods();
    let client = bounded(WsClient::connect(&format!("ws://{addr}/ws"), methods))
        .await
        .unwrap();
    let stub = GreeterClient::new(&client);
    assert_eq!(bounded(stub.greet()).await.unwrap(), "hello, ada");
    assert_eq!(bounded(stub.count_to(2)).await.unwrap(), 2);
    assert_eq!(pushes.recv().await, Some(1));
    assert_eq!(pushes.recv().await, Some(2));

    // A path that does not upgrade is refused with its HTTP status.
    let refused = bounded(WsClient::connect(
        &format!("ws://{addr}/rpc"),
        Methods::new(),
    ))
    .await;
    assert!(
        matches!(refused, Err(ClientError::Transport(_))),
        "{refused:?}"
    );
}

#[tokio::test]
async fn the_connection_closes_with_the_last_handle() {
    let server = WsServer::builder(Service.into_methods()).build().unwrap();
    let (addr, _) = serve_ws(server.clone()).await;
    let client = bounded(WsClient::connect(&format!("ws://{addr}/"), Methods::new()))
        .await
        .unwrap();
    let _: i64 = bounded(client.call("add", [1, 1])).await.unwrap();
    eventually(|| server.shutdown_handle().connections() == 1).await;
    let peer = client
        .peer()
        .expect("a client of one connection has its handle");
    drop(client);
    assert!(!peer.is_closed(), "a clone keeps it open");
    drop(peer);
    eventually(|| server.shutdown_handle().connections() == 0).await;
}
