//! jsonrpsee, both ways, over WebSocket: its client reads typed heads from the chain example
//! (`eth_subscribe("newHeads")`), and jrpc's generated client reads typed items from a
//! subscription that jsonrpsee's `#[subscription]` serves, in the Ethereum shape both use.
//!
//! Each wait is for an event, within [`jrpc_tests::LIMIT`]; none checks how long anything took.

use futures_util::StreamExt as _;
// `rpc_params!` and the client traits are jsonrpsee-core's, with the client feature that
// jsonrpsee-ws-client turns on.
use jrpc_runtime::subscription::Ended;
use jrpc_runtime::ws::WsClient;
use jrpc_runtime::{Items, Methods, Subscription, rpc_service};
use jrpc_tests::bounded;
use jsonrpsee::core::client::{ClientT as _, SubscriptionClientT as _};
use jsonrpsee::core::{SubscriptionResult, rpc_params};
use jsonrpsee::proc_macros::rpc;
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::{PendingSubscriptionSink, SubscriptionMessage};
use jsonrpsee_ws_client::WsClientBuilder;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::chain::chain;

/// A block's header as a client of a node declares it: the fields it reads, decoded from hex.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Header {
    #[serde(deserialize_with = "quantity")]
    number: u64,
    hash: String,
    parent_hash: String,
    #[serde(deserialize_with = "quantity")]
    timestamp: u64,
    #[serde(deserialize_with = "quantity")]
    gas_limit: u64,
    logs_bloom: String,
}

/// Decodes an Ethereum hex quantity.
fn quantity<'de, D: serde::Deserializer<'de>>(decoder: D) -> Result<u64, D::Error> {
    let text = String::deserialize(decoder)?;
    text.strip_prefix("0x")
        .and_then(|digits| u64::from_str_radix(digits, 16).ok())
        .ok_or_else(|| serde::de::Error::custom(format!("not a hex quantity: {text}")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonrpsees_client_reads_typed_heads_from_the_chain() {
    let server = chain();
    let client = bounded(WsClientBuilder::default().build(format!("ws://{}/ws", server.addr)))
        .await
        .unwrap();
    bounded(async {
        let chain_id: String = client.request("eth_chainId", rpc_params![]).await.unwrap();
        assert_eq!(chain_id, "0x539");
        let mut heads = client
            .subscribe::<Header, _>("eth_subscribe", rpc_params!["newHeads"], "eth_unsubscribe")
            .await
            .unwrap();
        let mut seen: Vec<Header> = Vec::new();
        while seen.len() < 3 {
            let head = heads.next().await.expect("a head").expect("a header");
            assert_eq!(head.hash.len(), 66, "{head:?}");
            assert_eq!(head.logs_bloom.len(), 2 + 512, "{head:?}");
            assert_eq!(head.gas_limit, 30_000_000);
            if let Some(before) = seen.last() {
                assert!(head.number > before.number, "{before:?} then {head:?}");
                assert!(
                    head.timestamp >= before.timestamp,
                    "{before:?} then {head:?}"
                );
                if head.number == before.number + 1 {
                    assert_eq!(head.parent_hash, before.hash);
                }
            }
            seen.push(head);
        }
        heads.unsubscribe().await.unwrap();

        // Refused kinds are jsonrpsee's call errors, with the code the chain answers.
        let refused = client
            .subscribe::<Header, _>("eth_subscribe", rpc_params!["logs"], "eth_unsubscribe")
            .await
            .unwrap_err();
        match refused {
            jsonrpsee::core::client::Error::Call(err) => assert_eq!(err.code(), -32602),
            other => panic!("{other:?}"),
        }
    })
    .await;
}

/// An item of the jsonrpsee server's subscription.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Tick {
    n: u64,
}

/// A jsonrpsee service with an Ethereum-style subscription: `eth_subscribe("ticks", to)` sends
/// ticks 0 .. `to` at once, then holds the subscription open until it is closed;
/// `eth_subscribe("fail", to)` sends them, then ends it with an error.
#[rpc(server)]
trait Ticker {
    #[subscription(name = "eth_subscribe" => "eth_subscription", unsubscribe = "eth_unsubscribe", item = Tick)]
    async fn subscribe(&self, kind: String, to: u64) -> SubscriptionResult;
}

/// Tells the test when a subscription's producer ended: its sink was closed.
struct Ticks {
    closed: mpsc::UnboundedSender<u64>,
}

#[jsonrpsee::core::async_trait]
impl TickerServer for Ticks {
    async fn subscribe(
        &self,
        pending: PendingSubscriptionSink,
        kind: String,
        to: u64,
    ) -> SubscriptionResult {
        if kind != "ticks" && kind != "fail" {
            pending
                .reject(ErrorObjectOwned::owned(-32602, "unknown kind", None::<()>))
                .await;
            return Ok(());
        }
        let sink = pending.accept().await?;
        for n in 0..to {
            let item: SubscriptionMessage = serde_json::value::to_raw_value(&Tick { n })?.into();
            sink.send(item).await?;
        }
        if kind == "fail" {
            return Err("ran out of ticks".into());
        }
        sink.closed().await;
        let _ = self.closed.send(to);
        Ok(())
    }
}

/// A jsonrpsee server of [`Ticks`] on a free port; its URL, its handle, and where it tells of
/// closed subscriptions.
async fn jsonrpsee_server() -> (
    String,
    jsonrpsee::server::ServerHandle,
    mpsc::UnboundedReceiver<u64>,
) {
    let server = jsonrpsee::server::Server::builder()
        .build("127.0.0.1:0")
        .await
        .unwrap();
    let url = format!("ws://{}", server.local_addr().unwrap());
    let (closed, closes) = mpsc::unbounded_channel();
    let handle = server.start(Ticks { closed }.into_rpc());
    (url, handle, closes)
}

/// The same subscription declared for jrpc, whose generated stub reads it.
#[rpc_service]
trait TickerApi {
    /// Subscribes to ticks of `kind`, 0 .. `to`.
    #[subscription(
        name = "eth_subscribe",
        notification = "eth_subscription",
        unsubscribe = "eth_unsubscribe"
    )]
    async fn subscribe(&self, kind: String, to: u64) -> Items<Tick>;
}

async fn ticks(client: &TickerApiClient<WsClient>, kind: &str, to: u64) -> Subscription<Tick> {
    client.subscribe(kind.to_owned(), to).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jrpcs_client_reads_typed_items_from_a_jsonrpsee_subscription() {
    let (url, handle, mut closes) = jsonrpsee_server().await;
    let ws = bounded(WsClient::connect(&url, Methods::new()))
        .await
        .unwrap();
    let client = TickerApiClient::new(ws);
    bounded(async {
        // Sent right behind the answer: none is lost, in order, typed.
        let mut sub = ticks(&client, "ticks", 5).await;
        for n in 0..5 {
            assert_eq!(sub.next().await.unwrap().unwrap(), Tick { n });
        }
        assert_eq!(sub.ended(), None);
        // Unsubscribed: jsonrpsee answers true, and its producer sees the sink close.
        assert!(sub.unsubscribe().await.unwrap());
        assert_eq!(closes.recv().await, Some(5));

        // Dropping a subscription unsubscribes too.
        let mut dropped = ticks(&client, "ticks", 1).await;
        assert_eq!(dropped.next().await.unwrap().unwrap(), Tick { n: 0 });
        drop(dropped);
        assert_eq!(closes.recv().await, Some(1));

        // jsonrpsee's refusal is the call's error.
        match client.subscribe("blocks".to_owned(), 1).await {
            Err(jrpc_runtime::ClientError::Failed(err)) => assert_eq!(err.code().code(), -32602),
            other => panic!("{other:?}"),
        }

        // Ended by the server with an error notification: the items, then the end, saying why.
        let mut failing = ticks(&client, "fail", 2).await;
        for n in 0..2 {
            assert_eq!(failing.next().await.unwrap().unwrap(), Tick { n });
        }
        assert!(failing.next().await.is_none(), "the stream ends");
        match failing.ended() {
            Some(Ended::Server(err)) => assert!(err.message().contains("ran out"), "{err:?}"),
            other => panic!("{other:?}"),
        }
    })
    .await;
    handle.stop().unwrap();
}
