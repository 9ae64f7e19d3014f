//! `#[subscription]` end to end: an Ethereum-style service served on one `Peer` and read through
//! the generated stub on another (and over the WebSocket client), with typed items, the refusal of an unknown kind, unsubscribing
//! (explicitly and by dropping the stream), a clash of names found when the table is built, and
//! the service's OpenRPC document, validated by OpenRPC's own validator.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::{StreamExt as _, stream};
use jrpc_runtime::http::HttpServer;
use jrpc_runtime::subscription::Ended;
use jrpc_runtime::ws::WsClient;
use jrpc_runtime::{
    ClientError, Context, Items, Methods, ParamEncoding, Peer, PeerConfig, RpcError, ServiceInfo,
    WhenFull, rpc_service,
};
use jrpc_tests::servers::serve_http;
use jrpc_tests::{bounded, eventually, node, tools};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A block header, as `newHeads` sends it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    /// The block's number.
    pub number: u64,
    /// Its parent's hash.
    pub parent_hash: String,
}

/// What `eth_subscribe` sends: a header (`newHeads`), or a transaction hash
/// (`newPendingTransactions`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Event {
    /// A new head.
    Head(Header),
    /// A pending transaction's hash.
    Hash(String),
}

/// The names a protocol crate would publish.
mod names {
    pub const UNSUBSCRIBE: &str = "unsubscribe";
}

/// A chain node's pub-sub, as Ethereum nodes serve it: `eth_subscribe(kind, params)`, its items
/// as `eth_subscription` notifications, `eth_unsubscribe(id)`.
#[rpc_service(namespace = "eth", separator = "_", rename_all = "camelCase", schema)]
pub trait Chain {
    /// Returns the latest block's number.
    async fn block_number(&self) -> u64;

    /// Subscribes to events of one kind.
    ///
    /// `newHeads` or `newPendingTransactions`.
    #[subscription(
        name = "subscribe",
        notification = "subscription",
        unsubscribe = "unsubscribe"
    )]
    async fn subscribe(
        &self,
        kind: String,
        params: Option<Value>,
        ctx: &Context,
    ) -> Result<Items<Event>, RpcError>;

    /// Subscribes to the heads from `from`: `count` of them, or heads until unsubscribed.
    #[subscription(notification = "subscription", unsubscribe = names::UNSUBSCRIBE)]
    async fn new_heads(&self, from: u64, count: Option<u64>) -> Items<Header>;
}

/// A made-up chain: `alive` counts the producers that live.
#[derive(Default)]
struct Node {
    alive: Arc<AtomicUsize>,
}

fn header(number: u64) -> Header {
    Header {
        number,
        parent_hash: format!("0x{:x}", number.wrapping_sub(1)),
    }
}

impl Chain for Node {
    async fn block_number(&self) -> u64 {
        7
    }

    async fn subscribe(
        &self,
        kind: String,
        params: Option<Value>,
        ctx: &Context,
    ) -> Result<Items<Event>, RpcError> {
        // The context is the subscribe call's, on a connection that stays open.
        assert!(ctx.peer().is_some(), "a subscription has its connection");
        match kind.as_str() {
            "newHeads" => {
                let heads = (1..=3).map(|n| Event::Head(header(n)));
                Ok(Items::new(stream::iter(heads)).when_full(WhenFull::DropOldest))
            }
            "newPendingTransactions" => {
                let full = params.and_then(|p| p.as_bool()).unwrap_or(false);
                let hash = if full { "0xfull" } else { "0xabc" };
                Ok(Items::new(stream::iter([Event::Hash(hash.to_owned())])))
            }
            _ => Err(RpcError::invalid_params(format!(
                "unknown subscription kind {kind:?}"
            ))),
        }
    }

    async fn new_heads(&self, from: u64, count: Option<u64>) -> Items<Header> {
        let guard = Alive::new(&self.alive);
        let heads = stream::unfold((from, guard), move |(n, guard)| async move {
            if count.is_some_and(|count| n >= from + count) {
                return None;
            }
            tokio::task::yield_now().await;
            Some((header(n), (n + 1, guard)))
        });
        Items::new(heads)
    }
}

/// Counts a live producer while it is held.
struct Alive(Arc<AtomicUsize>);

impl Alive {
    fn new(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(Arc::clone(count))
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The server's end of [`connected`]: its handle and its connection's loop.
struct Server {
    peer: Peer,
    driver: tokio::task::JoinHandle<std::io::Result<()>>,
}

/// A `Peer` serving `methods` and a `Peer` calling it, on the two ends of an in-memory stream.
fn connected(methods: Methods) -> (Server, Peer) {
    let (near, far) = tokio::io::duplex(64 * 1024);
    let (peer, driver) = Peer::connect(far, methods, PeerConfig::default());
    let server = Server {
        peer,
        driver: tokio::spawn(driver),
    };
    let (client, driver) = Peer::connect(near, Methods::new(), PeerConfig::default());
    tokio::spawn(driver);
    (server, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stub_reads_typed_items_over_a_peer() {
    bounded(async {
        let node = Node::default();
        let alive = Arc::clone(&node.alive);
        let (_server, peer) = connected(node.into_methods());
        for encoding in [ParamEncoding::Positional, ParamEncoding::Named] {
            let client = ChainClient::new(peer.clone()).with_encoding(encoding);
            assert_eq!(client.block_number().await.unwrap(), 7);

            // One subscription of one kind: its items in order, then its end.
            let mut heads = client.subscribe("newHeads".to_owned(), None).await.unwrap();
            assert!(
                heads.id().as_str().is_some_and(|id| id.starts_with("0x")),
                "{:?}",
                heads.id()
            );
            for n in 1..=3 {
                assert_eq!(heads.next().await.unwrap().unwrap(), Event::Head(header(n)));
            }
            assert!(
                !heads.unsubscribe().await.unwrap(),
                "it ended with its last item"
            );

            // The optional parameter, given.
            let mut pending = client
                .subscribe("newPendingTransactions".to_owned(), Some(json!(true)))
                .await
                .unwrap();
            let hash = pending.next().await.unwrap().unwrap();
            assert_eq!(hash, Event::Hash("0xfull".to_owned()));

            // A refusal is the subscribe call's error.
            let refused = client.subscribe("logs".to_owned(), None).await.unwrap_err();
            let ClientError::Failed(err) = refused else {
                panic!("{refused:?}");
            };
            assert_eq!(err.code().code(), -32602);
            assert!(err.message().contains("Invalid params"), "{err:?}");

            // Another subscription on the same notification and unsubscribe methods.
            let mut counted = client.new_heads(10, Some(2)).await.unwrap();
            assert_eq!(counted.next().await.unwrap().unwrap(), header(10));
            assert_eq!(counted.next().await.unwrap().unwrap(), header(11));

            // A live one, unsubscribed: `true`, and the server drops its producer.
            let mut live = client.new_heads(100, None).await.unwrap();
            assert_eq!(live.next().await.unwrap().unwrap(), header(100));
            assert!(live.unsubscribe().await.unwrap());
            eventually(|| alive.load(Ordering::SeqCst) == 0).await;

            // Dropping the stream unsubscribes.
            let mut dropped = client.new_heads(200, None).await.unwrap();
            assert_eq!(dropped.next().await.unwrap().unwrap(), header(200));
            drop(dropped);
            eventually(|| alive.load(Ordering::SeqCst) == 0).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stub_reads_typed_items_over_the_websocket_client() {
    bounded(async {
        let node = Node::default();
        let alive = Arc::clone(&node.alive);
        let server = HttpServer::builder(node.into_methods()).build().unwrap();
        let (addr, _serving) = serve_http(server).await;
        let ws = WsClient::connect(&format!("ws://{addr}/ws"), Methods::new())
            .await
            .unwrap();
        let client = ChainClient::new(ws);
        let mut heads = client.subscribe("newHeads".to_owned(), None).await.unwrap();
        for n in 1..=3 {
            assert_eq!(heads.next().await.unwrap().unwrap(), Event::Head(header(n)));
        }
        let mut live = client.new_heads(5, None).await.unwrap();
        assert_eq!(live.next().await.unwrap().unwrap(), header(5));
        assert_eq!(live.next().await.unwrap().unwrap(), header(6));
        drop(live);
        eventually(|| alive.load(Ordering::SeqCst) == 0).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_ends_with_its_connection() {
    bounded(async {
        let node = Node::default();
        let alive = Arc::clone(&node.alive);
        let (server, peer) = connected(node.into_methods());
        let client = ChainClient::new(peer);
        let mut live = client.new_heads(1, None).await.unwrap();
        assert_eq!(live.next().await.unwrap().unwrap(), header(1));
        server.driver.abort();
        drop(server.peer);
        while live.next().await.is_some() {}
        assert!(
            matches!(live.ended(), Some(Ended::Closed | Ended::Server(_))),
            "{:?}",
            live.ended()
        );
        eventually(|| alive.load(Ordering::SeqCst) == 0).await;
    })
    .await;
}

#[tokio::test]
async fn without_a_connection_a_subscribe_call_is_refused() {
    let methods = Node::default().into_methods();
    let request =
        json!({"jsonrpc": "2.0", "id": 1, "method": "eth_subscribe", "params": ["newHeads"]});
    let answer: Value =
        serde_json::from_str(&methods.handle(&request.to_string()).await.unwrap()).unwrap();
    assert_eq!(answer["error"]["code"], -32000, "{answer}");
    assert_eq!(
        answer["error"]["message"],
        "Subscriptions need a connection"
    );
    // The methods the service serves, in the order of its trait, the shared unsubscribe method
    // once, after the subscription that registered it first.
    let names: Vec<&str> = methods
        .descriptions()
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    assert_eq!(
        names,
        [
            "eth_blockNumber",
            "eth_subscribe",
            "eth_unsubscribe",
            "eth_newHeads"
        ]
    );
}

/// A subscription whose unsubscribe method's name, from a constant, is a method's name.
#[rpc_service(client = false)]
pub trait Clash {
    /// `stop`.
    fn stop(&self) -> bool;
    /// Ends with `stop`, a constant the macro cannot read.
    #[subscription(notification = "tick", unsubscribe = STOP)]
    async fn ticks(&self) -> Items<u64>;
}

const STOP: &str = "stop";

struct Clashing;

impl Clash for Clashing {
    fn stop(&self) -> bool {
        true
    }
    async fn ticks(&self) -> Items<u64> {
        Items::new(stream::empty())
    }
}

#[test]
fn a_clash_with_an_unsubscribe_method_is_found_when_the_table_is_built() {
    let panic = catch_unwind(AssertUnwindSafe(|| Clashing.into_methods()))
        .expect_err("a clash in the service's definition panics");
    let message = panic
        .downcast_ref::<String>()
        .expect("the message names both methods");
    assert_eq!(
        message,
        "jrpc service `Clash`: method `stop` and the unsubscribe method of `ticks` have the same \
         wire name `stop`; give one of them another name, with `#[rpc(name = ...)]` or in \
         `#[subscription(...)]`"
    );
}

/// The same service as [`Chain`], without `schema`.
#[rpc_service(client = false)]
pub trait Plain {
    /// Ticks.
    #[subscription(notification = "tick", unsubscribe = "untick")]
    async fn ticks(&self, every: u64) -> Items<u64>;
}

struct Ticker;

impl Plain for Ticker {
    async fn ticks(&self, every: u64) -> Items<u64> {
        Items::new(stream::iter([every]))
    }
}

fn info() -> ServiceInfo {
    ServiceInfo::new("chain", "1.0.0")
}

fn method<'a>(document: &'a Value, name: &str) -> &'a Value {
    document["methods"]
        .as_array()
        .and_then(|methods| methods.iter().find(|method| method["name"] == name))
        .unwrap_or_else(|| panic!("{name} in {document}"))
}

#[test]
fn the_openrpc_document_describes_each_subscription() {
    let document = Node::default().into_methods().openrpc(&info());
    let subscribe = method(&document, "eth_subscribe");
    assert_eq!(subscribe["summary"], "Subscribes to events of one kind.");
    assert_eq!(
        subscribe["params"],
        json!([
            { "name": "kind", "required": true, "schema": { "type": "string" } },
            { "name": "params", "schema": true },
        ])
    );
    // Answered the subscription's id.
    assert_eq!(
        subscribe["result"],
        json!({ "name": "subscription", "schema": { "type": ["string", "integer"] } })
    );
    assert_eq!(
        subscribe["x-subscription"],
        json!({
            "notification": "eth_subscription",
            "unsubscribe": "eth_unsubscribe",
            "item": { "name": "result", "schema": { "$ref": "#/components/schemas/Event" } },
        })
    );
    let event = &document["components"]["schemas"]["Event"];
    assert!(event["anyOf"].is_array(), "{event}");
    assert!(document["components"]["schemas"]["Header"].is_object());

    let new_heads = method(&document, "eth_newHeads");
    assert_eq!(
        new_heads["x-subscription"]["item"]["schema"],
        json!({ "$ref": "#/components/schemas/Header" })
    );
    assert_eq!(
        new_heads["x-subscription"]["unsubscribe"],
        "eth_unsubscribe"
    );

    // The unsubscribe method, once.
    let unsubscribe = method(&document, "eth_unsubscribe");
    assert_eq!(
        unsubscribe["params"],
        json!([{ "name": "subscription", "required": true, "schema": { "type": ["string", "integer"] } }])
    );
    assert_eq!(
        unsubscribe["result"],
        json!({ "name": "result", "schema": { "type": "boolean" } })
    );
    assert!(unsubscribe.get("x-subscription").is_none());
    // The notification is no method of the server's.
    assert!(
        !document["methods"]
            .as_array()
            .unwrap()
            .iter()
            .any(|method| method["name"] == "eth_subscription")
    );
    // The extension, declared once.
    let extensions = document["x-extensions"].as_array().unwrap();
    assert_eq!(extensions.len(), 1);
    assert_eq!(extensions[0]["name"], "x-subscription");
    assert_eq!(extensions[0]["restricted"], json!(["methodObject"]));

    // Without `schema`, the item is described as other results are: `{}`.
    let plain = Ticker.into_methods().openrpc(&info());
    assert_eq!(
        method(&plain, "ticks")["x-subscription"]["item"],
        json!({ "name": "result", "schema": {} })
    );
    // A document without subscriptions declares no extension.
    let mut none = Methods::new();
    none.register("one", &[], |(): (), _| async { Ok::<_, RpcError>(1) })
        .unwrap();
    assert!(none.openrpc(&info()).get("x-extensions").is_none());
}

/// `@open-rpc/schema-utils-js` (the validator OpenRPC's tools use) validates each document,
/// `x-subscription` against the schema its declaration gives.
#[test]
fn the_openrpc_validator_accepts_the_documents() {
    const SCRIPT: &str = "openrpc_validate.mjs";
    let Some(dir) = tools::require(SCRIPT, node::setup(&["@open-rpc/schema-utils-js"])) else {
        return;
    };
    let documents = [
        ("schema", Node::default().into_methods().openrpc(&info())),
        ("plain", Ticker.into_methods().openrpc(&info())),
    ];
    for (name, document) in documents {
        let path =
            std::env::temp_dir().join(format!("jrpc-openrpc-{name}-{}.json", std::process::id()));
        std::fs::write(&path, document.to_string()).unwrap();
        let output = node::run(&dir, SCRIPT, &path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert!(
            output.status.success(),
            "{name}: {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "valid");

        // A document whose `x-subscription` breaks its declared schema is refused: the
        // declaration is read.
        let mut broken = document.clone();
        let subscribe = broken["methods"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|method| method.get("x-subscription").is_some())
            .unwrap();
        subscribe["x-subscription"]["unsubscribe"] = json!(1);
        std::fs::write(&path, broken.to_string()).unwrap();
        let output = node::run(&dir, SCRIPT, &path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert!(!output.status.success(), "{name}: a broken document passed");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("x-subscription"),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
