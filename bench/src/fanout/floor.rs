//! The floor of the fan-out benchmark: the least a Rust server can do to send each `newHeads`
//! subscriber its notifications, with no framework. tokio-tungstenite on each connection, one task
//! per connection; a header is encoded once per publish and shared (`Arc<str>`) through one
//! broadcast channel, which a connection joins at its first `eth_subscribe`; the connection's task
//! writes, for each of its subscriptions, the notification text made of the prebuilt head (with
//! the subscription's id), the shared item and `}}`, then flushes once. It skips what a framework
//! adds: limits, bounds and policies per subscription, the answer-before-item order across tasks,
//! pings, timeouts, shutdown.
//!
//! Also the instruction gate's floor (`bench/gate/`, by `#[path]`): it uses only `super::header`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::{SinkExt as _, StreamExt as _};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::broadcast;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use super::header::{Header, NEW_HEADS, mix};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Publishes headers to every subscription: each encoded once, shared by all.
#[derive(Clone)]
pub struct Heads(broadcast::Sender<Arc<str>>);

impl Default for Heads {
    fn default() -> Self {
        // As many as a jrpc subscription's bound in the benchmark: a connection that falls
        // further behind loses its oldest.
        Self(broadcast::channel(16).0)
    }
}

impl Heads {
    /// Encodes `header` once and sends it to every connection that subscribed.
    pub fn publish(&self, header: &Header) {
        if self.0.receiver_count() == 0 {
            return;
        }
        let item: Arc<str> = serde_json::to_string(header)
            .expect("a header encodes")
            .into();
        let _ = self.0.send(item);
    }
}

/// Serves WebSockets on `listener` until the process exits.
pub async fn serve(listener: TcpListener, heads: Heads) {
    while let Ok((stream, _)) = listener.accept().await {
        let _ = stream.set_nodelay(true);
        let heads = heads.clone();
        // A connection's error is the load generator hanging up: nothing to report.
        tokio::spawn(async move { connection(stream, heads).await.ok() });
    }
}

#[derive(Deserialize)]
struct Request<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    method: &'a str,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

/// One subscription of a connection: its id, and what its notifications begin with.
struct Subscription {
    id: String,
    head: String,
}

/// Returns a new subscription id: 32 hex digits, as jrpc's and the benchmark's jsonrpsee's.
fn next_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("0x{:016x}{:016x}", mix(n), mix(!n))
}

/// Serves one WebSocket: answers `eth_subscribe("newHeads")` and `eth_unsubscribe(id)`, and sends
/// each published header to each of its subscriptions.
async fn connection(stream: TcpStream, heads: Heads) -> Result<(), Error> {
    // The buffer sizes jrpc's WebSocket server uses.
    let config = WebSocketConfig::default()
        .read_buffer_size(4096)
        .write_buffer_size(4096);
    let mut ws = tokio_tungstenite::accept_async_with_config(stream, Some(config)).await?;
    let mut items: Option<broadcast::Receiver<Arc<str>>> = None;
    let mut subscriptions: Vec<Subscription> = Vec::new();
    loop {
        tokio::select! {
            // Items first: the socket is polled for reading once a wake-up's items are written
            // (tungstenite zeroes its read buffer at every attempt).
            biased;
            item = recv(&mut items) => match item {
                Ok(item) => {
                    for subscription in &subscriptions {
                        let mut text =
                            String::with_capacity(subscription.head.len() + item.len() + 2);
                        text.push_str(&subscription.head);
                        text.push_str(&item);
                        text.push_str("}}");
                        ws.feed(Message::text(text)).await?;
                    }
                    ws.flush().await?;
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return Ok(()),
            },
            message = ws.next() => {
                let text = match message {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Close(_))) | None => return Ok(()),
                    Some(Ok(_)) => continue,
                    Some(Err(err)) => return Err(err.into()),
                };
                let answer = answer(&text, &mut subscriptions);
                if !subscriptions.is_empty() && items.is_none() {
                    items = Some(heads.0.subscribe());
                }
                ws.send(Message::text(answer)).await?;
            }
        }
    }
}

/// Waits for the next item, for ever while the connection has not subscribed.
async fn recv(
    items: &mut Option<broadcast::Receiver<Arc<str>>>,
) -> Result<Arc<str>, broadcast::error::RecvError> {
    match items {
        Some(items) => items.recv().await,
        None => std::future::pending().await,
    }
}

/// Answers one request: a subscription opened or closed, or an error.
fn answer(text: &str, subscriptions: &mut Vec<Subscription>) -> String {
    let Ok(request) = serde_json::from_str::<Request<'_>>(text) else {
        return r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#
            .to_owned();
    };
    let id = request.id.map_or("null", RawValue::get);
    let params = request.params.map_or("[]", RawValue::get);
    match request.method {
        "eth_subscribe"
            if serde_json::from_str::<(&str,)>(params).is_ok_and(|(kind,)| kind == NEW_HEADS) =>
        {
            let sub = next_id();
            let head = format!(
                r#"{{"jsonrpc":"2.0","method":"eth_subscription","params":{{"subscription":"{sub}","result":"#
            );
            let answer = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"{sub}"}}"#);
            subscriptions.push(Subscription { id: sub, head });
            answer
        }
        "eth_unsubscribe" => {
            let live = serde_json::from_str::<(String,)>(params).is_ok_and(|(sub,)| {
                let before = subscriptions.len();
                subscriptions.retain(|subscription| subscription.id != sub);
                subscriptions.len() < before
            });
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{live}}}"#)
        }
        _ => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32602,"message":"Invalid params"}}}}"#
        ),
    }
}
