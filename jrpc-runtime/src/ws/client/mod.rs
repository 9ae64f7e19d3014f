//! Provides the WebSocket client: a [`Peer`] over a client socket, or one connection after
//! another for a client that reconnects.
//!
//! | file | what |
//! | --- | --- |
//! | here | [`WsClient`]: its calls, subscriptions and state, over one connection or the current one |
//! | `builder` | [`WsClientBuilder`]: the settings, and `connect` |
//! | `dial` | one connection: TCP, TLS, the opening handshake, under the connect timeout |
//! | `reconnect` | [`Reconnect`], and the task that dials again, with backoff, and subscribes again |

mod builder;
mod dial;
mod reconnect;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio::sync::watch;

pub use self::builder::WsClientBuilder;
pub use self::reconnect::Reconnect;
use crate::caller::{BatchCall, BatchResults, Caller, encode_params};
use crate::dispatch::Methods;
use crate::error::ClientError;
use crate::peer::{Link, Peer, Resubscriptions, Subscriber, Subscription};

/// Speaks JSON-RPC over WebSocket as a client; both sides call.
///
/// Calls go out with [`Caller::call`] (or any generated stub: the client is a [`Caller`]);
/// what the server sends, its notifications and its calls, is served by the
/// [`Methods`] given at connect time. Cloning is cheap: clones share the
/// connection, which closes (1000) when the last clone (and the last subscription made through
/// it) drops.
///
/// `ws://` URLs, and `wss://` with the `tls` feature (trust: the system's roots plus what
/// [`WsClientBuilder::tls`] adds; a certificate it does not trust fails `connect` at once,
/// saying so).
///
/// By default the client closes with its connection. With
/// [`WsClientBuilder::reconnect`] it connects again, and subscribes its subscriptions again,
/// each time the connection closes; [`reconnects`](Self::reconnects) and
/// [`reconnected`](Self::reconnected) tell when.
///
/// ```no_run
/// use jrpc_runtime::ws::WsClient;
/// use jrpc_runtime::{Caller as _, Methods, RpcError};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let mut handlers = Methods::new();
/// handlers.register_notification("tick", &["n"], |(n,): (u64,), _| async move { println!("tick {n}") })?;
/// let client = WsClient::connect("ws://127.0.0.1:9000/ws", handlers).await?;
/// let sum: i64 = client.call("add", [2, 3]).await?;
/// assert_eq!(sum, 5);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct WsClient {
    connection: Connection,
}

/// Says which connection a client's calls go over.
#[derive(Clone, Debug)]
enum Connection {
    /// One: the client closes with it.
    One(Peer),
    /// One after another, as the reconnect task makes them.
    Reconnecting(Reconnecting),
}

/// Holds a reconnecting client's view of its connections.
#[derive(Clone)]
struct Reconnecting {
    /// The current connection; holding it keeps the reconnect task going.
    link: Link,
    /// How many times the client connected again.
    reconnects: watch::Receiver<u64>,
    /// What is subscribed again on each new connection.
    subscriptions: Arc<Resubscriptions>,
    /// How long a call may wait, for a connection and its answer together.
    call_timeout: Option<Duration>,
}

impl fmt::Debug for Reconnecting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reconnecting")
            .field("connection", &*self.link.borrow())
            .field("reconnects", &*self.reconnects.borrow())
            .finish_non_exhaustive()
    }
}

impl WsClient {
    /// Connects to `url` with the default settings; `methods` serves what the server sends.
    ///
    /// # Errors
    ///
    /// [`ClientError::Transport`] when the URL is invalid, the connection fails or takes longer
    /// than the default connect timeout, or the server refuses the upgrade (the error carries
    /// its HTTP response).
    pub async fn connect(url: &str, methods: Methods) -> Result<Self, ClientError> {
        Self::builder(url).methods(methods).connect().await
    }

    /// Returns a builder for a connection to `url` (`ws://host:port/path`).
    pub fn builder(url: impl Into<String>) -> WsClientBuilder {
        WsClientBuilder::new(url.into())
    }

    /// Returns a client of the one connection `peer`.
    fn one(peer: Peer) -> Self {
        Self {
            connection: Connection::One(peer),
        }
    }

    /// Returns a client of the connections `link` gives.
    fn reconnecting(
        link: Link,
        reconnects: watch::Receiver<u64>,
        subscriptions: &Arc<Resubscriptions>,
        call_timeout: Option<Duration>,
    ) -> Self {
        Self {
            connection: Connection::Reconnecting(Reconnecting {
                link,
                reconnects,
                subscriptions: Arc::clone(subscriptions),
                call_timeout,
            }),
        }
    }

    /// Returns the [`Peer`] handle of the connection calls go over: for a reconnecting client,
    /// the current one (`None` while it reconnects, or once it gave up).
    ///
    /// A subscription made on the handle itself ([`Subscriber::subscribe`] on the `Peer`) is
    /// that connection's only: it ends [`Closed`](crate::peer::Ended::Closed) with it, and is not
    /// subscribed again.
    pub fn peer(&self) -> Option<Peer> {
        match &self.connection {
            Connection::One(peer) => Some(peer.clone()),
            Connection::Reconnecting(state) => state.link.borrow().clone(),
        }
    }

    /// Returns whether the client is closed for good: its connection closed, and it does not
    /// reconnect, or gave up reconnecting. A reconnecting client between two connections is not
    /// closed.
    pub fn is_closed(&self) -> bool {
        match &self.connection {
            Connection::One(peer) => peer.is_closed(),
            // The reconnect task drops the link's sender when it gives up.
            Connection::Reconnecting(state) => state.link.has_changed().is_err(),
        }
    }

    /// Returns how many times the client has connected again (always 0 without
    /// [`WsClientBuilder::reconnect`]). A reconnect counts once its connection is up and the
    /// subscriptions are subscribed again.
    pub fn reconnects(&self) -> u64 {
        match &self.connection {
            Connection::One(_) => 0,
            Connection::Reconnecting(state) => *state.reconnects.borrow(),
        }
    }

    /// Returns a future that resolves `true` once the client has connected again (and
    /// subscribed its subscriptions again) after the reconnects counted when this is called,
    /// and `false` once it never will: it gave up, or it does not reconnect and its connection
    /// closed.
    ///
    /// The count is taken here, not when the future is first polled: call it before what should
    /// cause the reconnect, and await it after.
    pub fn reconnected(&self) -> impl Future<Output = bool> + Send + 'static + use<> {
        // Neither holds the connection open, nor keeps the reconnect task going.
        let (closed, counted) = match &self.connection {
            Connection::One(peer) => (Some(peer.closed()), None),
            Connection::Reconnecting(state) => {
                let mut reconnects = state.reconnects.clone();
                let seen = *reconnects.borrow_and_update();
                (None, Some((reconnects, seen)))
            }
        };
        async move {
            if let Some(closed) = closed {
                closed.await;
            }
            match counted {
                Some((mut reconnects, seen)) => {
                    reconnects.wait_for(|count| *count > seen).await.is_ok()
                }
                None => false,
            }
        }
    }

    /// Returns the connection to send `method` over: for a reconnecting client, the current
    /// one, or the next within the call timeout (the handle returned keeps what is left of it).
    async fn current(&self, method: &str) -> Result<Peer, ClientError> {
        match &self.connection {
            Connection::One(peer) => Ok(peer.clone()),
            Connection::Reconnecting(state) => state.current(method).await,
        }
    }
}

impl Reconnecting {
    /// Returns the current connection, waiting for the next one within the call timeout while
    /// the client reconnects.
    async fn current(&self, method: &str) -> Result<Peer, ClientError> {
        let open = |peer: &Option<Peer>| peer.as_ref().is_some_and(|peer| !peer.is_closed());
        if let Some(peer) = self.link.borrow().as_ref().filter(|peer| !peer.is_closed()) {
            return Ok(peer.clone());
        }
        let limit = self.call_timeout;
        let closed = || ClientError::Closed {
            method: method.to_owned(),
        };
        let mut link = self.link.clone();
        let started = tokio::time::Instant::now();
        let next = async move {
            let next = link.wait_for(open).await.map_err(|_| closed())?;
            next.clone().ok_or_else(closed)
        };
        let peer =
            match limit {
                None => next.await?,
                Some(limit) => tokio::time::timeout(limit, next).await.map_err(|_| {
                    ClientError::TimedOut {
                        method: method.to_owned(),
                        limit,
                    }
                })??,
            };
        // The wait counts in the call's limit.
        Ok(match limit {
            Some(limit) => peer.with_timeout(Some(limit.saturating_sub(started.elapsed()))),
            None => peer,
        })
    }
}

impl Caller for WsClient {
    async fn call_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        self.current(method).await?.call_raw(method, params).await
    }

    async fn notify_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        self.current(method).await?.notify_raw(method, params).await
    }

    async fn batch_raw(&self, calls: Vec<BatchCall>) -> Result<BatchResults, ClientError> {
        // The whole batch goes over one connection.
        let method = calls.first().map_or("batch", |call| call.method.as_str());
        self.current(method).await?.batch_raw(calls).await
    }
}

impl Subscriber for WsClient {
    fn subscribe<T: DeserializeOwned>(
        &self,
        method: &str,
        params: impl Serialize,
        notification: &str,
        unsubscribe: &str,
    ) -> impl Future<Output = Result<Subscription<T>, ClientError>> + Send {
        let params = encode_params(&params);
        async move {
            let params = params?;
            match &self.connection {
                Connection::One(peer) => {
                    peer.subscribe(method, params, notification, unsubscribe)
                        .await
                }
                Connection::Reconnecting(state) => {
                    let peer = state.current(method).await?;
                    state
                        .subscriptions
                        .subscribe(
                            &peer,
                            state.link.clone(),
                            method,
                            params,
                            notification,
                            unsubscribe,
                        )
                        .await
                }
            }
        }
    }
}
