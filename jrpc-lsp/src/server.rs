//! Serves a language server's table over stdio, a TCP stream or any pair of byte streams, framed
//! with `Content-Length`, under the protocol's lifecycle, until `exit`.

use std::time::Duration;

use jrpc_runtime::{
    Cancellation, Context, Framing, Methods, NullParams, Peer, PeerConfig, PeerConfigBuilder,
    Transport, Whole,
};
use lsp_types::WorkDoneProgressCancelParams;
use lsp_types::notification::{Notification as _, WorkDoneProgressCancel};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use crate::lifecycle::Lifecycle;
use crate::session::{Exit, Session, SessionRef};
use crate::watch;

/// Returns the settings of an LSP connection: `Content-Length` framing, and `$/cancelRequest`
/// sent for a call given up and honoured when received. Set the rest (limits, timeouts) on the
/// builder, build it, and give it to [`LspServer::peer_config`].
pub fn peer_config() -> PeerConfigBuilder {
    PeerConfig::builder()
        .framing(Framing::ContentLength)
        .cancellation(Cancellation::Lsp)
}

/// Serves a language server: its method table (a `#[rpc_service]` over `lsp-types`' params and
/// results) under the protocol's lifecycle, over stdio or any stream.
///
/// What it does that the table does not:
///
/// - the lifecycle: requests before `initialize` are answered `-32002`, a second `initialize`
///   and every request after `shutdown` `-32600`, notifications out of turn are dropped (and
///   reported to the table's `on_error`); `shutdown` is answered `null` unless the table has its
///   own, and `exit` ends serving with [`Exit::Clean`] after `shutdown`, else
///   [`Exit::WithoutShutdown`];
/// - `"params": null` is taken as absent (lsp4j's, Eglot's and Vim's clients send `shutdown` and
///   `exit` so);
/// - `$/` notifications the table does not have (`$/setTrace`) are ignored, as the specification
///   allows; `$/cancelRequest` cancels the request it names (answered `-32800`);
/// - `window/workDoneProgress/cancel` cancels the request whose [`WorkDone`](crate::WorkDone)
///   has that token, unless the table has its own;
/// - the client's process (`processId`) is watched: serving ends with [`Exit::ClientGone`] when
///   it is gone.
///
/// ```no_run
/// use jrpc_lsp::LspServer;
/// use jrpc_lsp::lsp_types::{InitializeParams, InitializeResult};
/// use jrpc_runtime::rpc_service;
///
/// struct Server;
///
/// #[rpc_service]
/// impl Server {
///     #[rpc(params = whole)]
///     async fn initialize(&self, _params: InitializeParams) -> InitializeResult {
///         InitializeResult::default()
///     }
/// }
///
/// #[tokio::main]
/// async fn main() -> std::io::Result<()> {
///     let exit = LspServer::new(Server.into_methods()).serve_stdio().await?;
///     exit.exit_process()
/// }
/// ```
#[derive(Clone, Debug)]
pub struct LspServer {
    methods: Methods,
    config: PeerConfig,
    watch: Option<Duration>,
}

impl LspServer {
    /// Returns a server of `methods`, with the lifecycle put around it (a call layer added last,
    /// so it runs before the table's own layers), `"params": null` taken as absent, the
    /// connection's settings of [`peer_config`], and the client's process watched every 3 s.
    pub fn new(mut methods: Methods) -> Self {
        methods.null_params(NullParams::Absent);
        let cancel = WorkDoneProgressCancel::METHOD;
        if !methods.contains(cancel) {
            // Cannot fail: the name is free, and no `rpc.` one.
            let _ = methods.register_notification(
                cancel,
                &[],
                |Whole(params): Whole<WorkDoneProgressCancelParams>, ctx: Context| async move {
                    cancel_progress(&params, &ctx).await;
                },
            );
        }
        let lifecycle = Lifecycle::new(methods.names());
        methods.layer(lifecycle);
        Self {
            methods,
            // The builder's defaults are in range; the fallback only keeps this free of a panic.
            config: peer_config().build().unwrap_or_default(),
            watch: Some(Duration::from_secs(3)),
        }
    }

    /// Sets the connection's settings (limits, call timeout, write timeout): build them from
    /// [`peer_config`], which speaks LSP's cancellation. The framing is `Content-Length`
    /// whatever `config` says, and the handlers' context is the server's own.
    #[must_use]
    pub fn peer_config(mut self, config: PeerConfig) -> Self {
        self.config = config;
        self
    }

    /// Sets how often the client's process is checked (default every 3 s); `None` does not
    /// watch it (an editor in another PID namespace, whose `processId` this process cannot see).
    #[must_use]
    pub fn watch_client(mut self, every: Option<Duration>) -> Self {
        self.watch = every;
        self
    }

    /// Returns the table served, the lifecycle's layer on it.
    pub fn methods(&self) -> &Methods {
        &self.methods
    }

    /// Serves on stdin and stdout until `exit`, the end of input, or the client's process ending;
    /// returns how it ended. Handlers see [`Transport::Stdio`]. Logs belong on stderr: stdout
    /// carries the protocol. End the process with [`Exit::exit_process`]: a read of stdin may
    /// still be pending, and returning from `main` waits for it.
    ///
    /// # Errors
    ///
    /// When input cannot be read any more (a garbled `Content-Length` header) or output cannot be
    /// written.
    pub async fn serve_stdio(&self) -> std::io::Result<Exit> {
        self.serve_with(
            tokio::io::stdin(),
            tokio::io::stdout(),
            Context::new(Transport::Stdio),
        )
        .await
    }

    /// Serves one TCP connection (an editor's, accepted from a listener, or the socket a server
    /// started with `--socket=PORT` connects to) until `exit` or its end. Handlers see
    /// [`Transport::Tcp`] and the peer's address.
    ///
    /// # Errors
    ///
    /// As [`serve_stdio`](Self::serve_stdio).
    pub async fn serve_tcp(&self, stream: TcpStream) -> std::io::Result<Exit> {
        let mut ctx = Context::new(Transport::Tcp);
        if let Ok(addr) = stream.peer_addr() {
            ctx = ctx.with_peer_addr(addr);
        }
        let (read, write) = stream.into_split();
        self.serve_with(read, write, ctx).await
    }

    /// Serves over `read` and `write` (a Unix socket's halves, a child's pipes, a test's duplex)
    /// until `exit` or the end of input. Handlers see [`Transport::Stream`].
    ///
    /// # Errors
    ///
    /// As [`serve_stdio`](Self::serve_stdio).
    pub async fn serve<R, W>(&self, read: R, write: W) -> std::io::Result<Exit>
    where
        R: AsyncRead + Send + 'static,
        W: AsyncWrite + Send + 'static,
    {
        self.serve_with(read, write, Context::new(Transport::Stream))
            .await
    }

    async fn serve_with<R, W>(&self, read: R, write: W, ctx: Context) -> std::io::Result<Exit>
    where
        R: AsyncRead + Send + 'static,
        W: AsyncWrite + Send + 'static,
    {
        let session = Session::new();
        let config = self
            .config
            .clone()
            .with_framing(Framing::ContentLength)
            .with_context(ctx.with_extension(SessionRef(session.clone())));
        let (peer, driver) = Peer::connect_split(read, write, self.methods.clone(), config);
        // Handlers hold handles of their own; this one does not keep the connection open.
        drop(peer);
        let gone = async {
            match self.watch {
                Some(every) => watch::client_gone(&session, every).await,
                None => std::future::pending().await,
            }
        };
        // `exit` first: input may end right behind it.
        tokio::select! {
            biased;
            exit = session.exited() => Ok(exit),
            () = gone => Ok(Exit::ClientGone),
            ended = driver => {
                ended?;
                Ok(session.exit_now().unwrap_or(Exit::InputEnded))
            }
        }
    }
}

/// Cancels the request whose work-done progress is `params.token` (the user pressed its cancel
/// button).
async fn cancel_progress(params: &WorkDoneProgressCancelParams, ctx: &Context) {
    let (Some(session), Some(peer)) = (Session::of(ctx), ctx.peer()) else {
        return;
    };
    if let Some(id) = session.request_of(&params.token) {
        peer.cancel_request(&id).await;
    }
}
