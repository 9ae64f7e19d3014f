//! An Ethereum-style service: `eth_subscribe(kind, params)` answering items of several kinds, a
//! second subscription sharing its notification and unsubscribe methods, names from constants,
//! the whole params, the context, an error type of one's own, a namespace and JSON Schemas.
#![deny(warnings)]

use futures_util::stream;
use jrpc_runtime::{Context, Items, RpcError, WhenFull, rpc_service};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A block header, as `newHeads` sends it.
#[derive(Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    /// The block number, a hex quantity.
    pub number: String,
    /// The parent's hash.
    pub parent_hash: String,
}

/// What `eth_subscribe` sends: a header, or a log.
#[derive(Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Event {
    /// A new head.
    Head(Header),
    /// A log.
    Log(Value),
}

/// Why a subscription is refused.
#[derive(Debug)]
pub enum Refusal {
    /// No such kind.
    Kind(String),
}

impl From<Refusal> for RpcError {
    fn from(refusal: Refusal) -> Self {
        match refusal {
            Refusal::Kind(kind) => RpcError::invalid_params(format!("unknown kind {kind}")),
        }
    }
}

/// What a filter says, read whole.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub struct Filter {
    /// The contracts.
    pub address: Vec<String>,
}

pub mod names {
    pub const SUBSCRIBE: &str = "subscribe";
    pub const NOTIFICATION: &str = "subscription";
}

/// A chain node's pub-sub.
#[rpc_service(namespace = "eth", separator = "_", rename_all = "camelCase", schema)]
pub trait Chain {
    /// Returns the latest block number.
    async fn block_number(&self) -> String;

    /// Subscribes to `newHeads` or `logs`.
    #[subscription(name = "subscribe", notification = "subscription", unsubscribe = "unsubscribe")]
    async fn subscribe(
        &self,
        kind: String,
        params: Option<Value>,
        ctx: &Context,
    ) -> Result<Items<Event>, Refusal>;

    /// Subscribes to new heads only, by name: `eth_newHeads`.
    #[subscription(notification = names::NOTIFICATION, unsubscribe = "unsubscribe")]
    async fn new_heads(&self) -> Items<Header>;

    /// Never built: registered, its name (`eth_subscribe`, from a constant) would clash, and
    /// `into_methods` would panic in `main`.
    #[subscription(
        name = names::SUBSCRIBE,
        notification = "logs",
        unsubscribe = "unsubscribeLogs",
        params = whole
    )]
    #[cfg(any())]
    async fn logs(&self, filter: Filter) -> Items<Value>;

    /// Subscribes to the logs a filter selects.
    #[subscription(notification = "logs", unsubscribe = "unsubscribeLogs", params = whole)]
    fn logs_by_filter(
        &self,
        filter: Filter,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Items<Value>> + Send>>;
}

struct Node;

impl Chain for Node {
    async fn block_number(&self) -> String {
        "0x1".to_owned()
    }

    async fn subscribe(
        &self,
        kind: String,
        _params: Option<Value>,
        _ctx: &Context,
    ) -> Result<Items<Event>, Refusal> {
        match kind.as_str() {
            "newHeads" => Ok(Items::new(stream::iter([Event::Head(Header {
                number: "0x1".to_owned(),
                parent_hash: "0x0".to_owned(),
            })]))
            .when_full(WhenFull::DropOldest)),
            _ => Err(Refusal::Kind(kind)),
        }
    }

    async fn new_heads(&self) -> Items<Header> {
        Items::new(stream::empty())
    }

    fn logs_by_filter(
        &self,
        filter: Filter,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Items<Value>> + Send>> {
        Box::pin(async move { Items::new(stream::iter(filter.address.into_iter().map(Value::from))) })
    }
}

/// The generated client subscribes through any `Subscriber`.
#[allow(dead_code)]
async fn subscribe_with<C: jrpc_runtime::Subscriber>(client: &ChainClient<C>) {
    let _: jrpc_runtime::Subscription<Event> = client
        .subscribe("newHeads".to_owned(), None)
        .await
        .unwrap();
    let _: jrpc_runtime::Subscription<Header> = client.new_heads().await.unwrap();
    let _ = client.block_number().await;
}

/// The stub's error type of one's own (`client_error`), for a subscription too.
#[derive(Debug)]
pub struct WatchError(pub jrpc_runtime::ClientError);

impl From<jrpc_runtime::ClientError> for WatchError {
    fn from(err: jrpc_runtime::ClientError) -> Self {
        Self(err)
    }
}

/// Watches keys.
#[rpc_service(client_error = WatchError)]
pub trait Watch {
    /// Sends each new value of `key`.
    #[subscription(notification = "changed", unsubscribe = "unwatch")]
    async fn watch(&self, key: String) -> Items<String>;
}

#[allow(dead_code)]
async fn watch_with(
    client: &WatchClient<jrpc_runtime::Peer>,
) -> Result<jrpc_runtime::Subscription<String>, WatchError> {
    client.watch("colour".to_owned()).await
}

/// Also on an inherent `impl`.
struct Ticker;

#[rpc_service]
impl Ticker {
    /// Ticks.
    #[subscription(notification = "tick", unsubscribe = "untick")]
    async fn ticks(&self, every: u64) -> Items<u64> {
        Items::new(stream::iter(0..every))
    }
}

fn main() {
    let methods = Node.into_methods();
    assert!(methods.contains("eth_subscribe"));
    assert!(methods.contains("eth_newHeads"));
    assert!(methods.contains("eth_unsubscribe"));
    assert!(methods.contains("eth_logsByFilter"));
    assert!(methods.contains("eth_unsubscribeLogs"));
    assert!(Ticker.into_methods().contains("untick"));
}
