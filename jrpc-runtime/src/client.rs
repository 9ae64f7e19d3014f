//! One client for any network URL: the scheme picks the transport.

use serde_json::value::RawValue;

#[cfg(feature = "http")]
use crate::http::HttpClient;
#[cfg(feature = "ws")]
use crate::ws::WsClient;
use crate::{Caller, ClientError, Methods};

/// An HTTP or a WebSocket client, chosen by the URL's scheme; a [`Caller`], so every generated
/// stub runs over it. Each kind is there with its cargo feature (`http`, `ws`).
///
/// ```no_run
/// use jrpc_runtime::{Caller as _, Client, Methods};
///
/// # async fn run() -> Result<(), jrpc_runtime::ClientError> {
/// let client = Client::connect("ws://127.0.0.1:8080/ws", Methods::new()).await?;
/// let sum: i64 = client.call("add", [2, 3]).await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Client {
    /// `http://` URLs.
    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    Http(HttpClient),
    /// `ws://` URLs.
    #[cfg(feature = "ws")]
    #[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
    Ws(WsClient),
}

impl Client {
    /// Connects to `url` with default settings: `ws://` and `wss://` open a WebSocket (whose
    /// server-sent calls and notifications `methods` serves), anything else is HTTP (where
    /// `methods` is unused: HTTP servers cannot call back).
    ///
    /// # Errors
    ///
    /// [`ClientError::Transport`] for a URL that cannot be used (its scheme's feature left out
    /// included) or a connection that fails.
    #[cfg_attr(not(feature = "ws"), allow(unused_variables))]
    pub async fn connect(url: &str, methods: Methods) -> Result<Self, ClientError> {
        if url.starts_with("ws://") || url.starts_with("wss://") {
            #[cfg(feature = "ws")]
            return WsClient::connect(url, methods).await.map(Self::Ws);
            #[cfg(not(feature = "ws"))]
            return Err(ClientError::Transport(
                format!("`{url}` needs the `ws` feature").into(),
            ));
        }
        #[cfg(feature = "http")]
        return HttpClient::new(url)
            .map(Self::Http)
            .map_err(|err| ClientError::Transport(Box::new(err)));
        #[cfg(not(feature = "http"))]
        Err(ClientError::Transport(
            format!("`{url}` needs the `http` feature").into(),
        ))
    }
}

impl Caller for Client {
    async fn call_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        match self {
            #[cfg(feature = "http")]
            Self::Http(client) => client.call_raw(method, params).await,
            #[cfg(feature = "ws")]
            Self::Ws(client) => client.call_raw(method, params).await,
        }
    }

    async fn notify_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        match self {
            #[cfg(feature = "http")]
            Self::Http(client) => client.notify_raw(method, params).await,
            #[cfg(feature = "ws")]
            Self::Ws(client) => client.notify_raw(method, params).await,
        }
    }
}
