//! One client for any network URL: the scheme picks the transport.

use serde_json::value::RawValue;

use crate::http::HttpClient;
use crate::ws::WsClient;
use crate::{Caller, ClientError, Methods};

/// An HTTP or a WebSocket client, chosen by the URL's scheme; a [`Caller`], so every generated
/// stub runs over it.
///
/// ```no_run
/// use jrpc_runtime::{Client, Methods};
///
/// # async fn run() -> Result<(), jrpc_runtime::ClientError> {
/// let client = Client::connect("ws://127.0.0.1:8080/ws", Methods::new()).await?;
/// let sum: i64 = client.call("add", [2, 3]).await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Client {
    /// `http://` and `https://` URLs.
    Http(HttpClient),
    /// `ws://` and `wss://` URLs.
    Ws(WsClient),
}

impl Client {
    /// Connects to `url` with default settings: `ws://` and `wss://` open a WebSocket (whose
    /// server-sent calls and notifications `methods` serves), anything else is HTTP (where
    /// `methods` is unused: HTTP servers cannot call back).
    ///
    /// # Errors
    ///
    /// [`ClientError::Transport`] for a URL that cannot be used or a connection that fails.
    pub async fn connect(url: &str, methods: Methods) -> Result<Self, ClientError> {
        if url.starts_with("ws://") || url.starts_with("wss://") {
            WsClient::connect(url, methods).await.map(Self::Ws)
        } else {
            HttpClient::new(url)
                .map(Self::Http)
                .map_err(|err| ClientError::Transport(Box::new(err)))
        }
    }

    /// Calls `method` and decodes its result.
    ///
    /// # Errors
    ///
    /// [`ClientError::Failed`] with the server's error, or the transport's failure.
    pub async fn call<R: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: impl serde::Serialize,
    ) -> Result<R, ClientError> {
        let raw = self
            .call_raw(method, crate::peer::encode_params(&params)?)
            .await?;
        crate::__private::decode_result(&raw)
    }
}

impl Caller for Client {
    async fn call_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        match self {
            Self::Http(client) => client.call_raw(method, params).await,
            Self::Ws(client) => client.call_raw(method, params).await,
        }
    }

    async fn notify_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        match self {
            Self::Http(client) => client.notify_raw(method, params).await,
            Self::Ws(client) => client.notify_raw(method, params).await,
        }
    }
}
