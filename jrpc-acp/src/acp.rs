//! Builds an agent's protocol table around an [`Agent`] and serves it: the rules every agent
//! keeps (initialize, the connection's sessions, cancellation) written once, here.
//!
//! | method | what the table does | then the agent's |
//! | --- | --- | --- |
//! | `initialize` | keeps the client's capabilities and info; answers protocol version 1 and the builder's capabilities, info and auth methods | - |
//! | `authenticate` | - | [`Agent::authenticate`] |
//! | `session/new` | past `max_sessions` open, refuses; keeps the answered id as a session of the connection | [`Agent::new_session`] |
//! | `session/load`, `session/resume` | as `session/new`, once the agent has answered | [`Agent::load_session`], [`Agent::resume_session`] |
//! | `session/prompt` | an unknown session: `-32002`; the turn is cancellable by the session's id; a cancelled turn answers `stopReason: "cancelled"` | [`Agent::prompt`] |
//! | `session/cancel` | cancels the requests registered under the session's id: its turn | - |
//! | `session/close` | an unknown session: `-32002`; cancels its turn and forgets it | [`Agent::close_session`] |
//! | `session/set_mode`, `session/set_config_option` | an unknown session: `-32002` | [`Agent::set_session_mode`], [`Agent::set_session_config_option`] |

use std::future::Future;
use std::sync::Arc;

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::v1::{
    AGENT_METHOD_NAMES, AgentCapabilities, AuthMethod, CancelNotification, CloseSessionRequest,
    Error, Implementation, InitializeRequest, InitializeResponse, LoadSessionRequest,
    NewSessionRequest, PromptRequest, PromptResponse, ResumeSessionRequest,
    SetSessionConfigOptionRequest, SetSessionModeRequest, StopReason,
};
use jrpc_runtime::{
    Batches, Cancellation, ConfigError, Context, Driver, Framing, Methods, NullParams, Peer,
    PeerConfig, RegisterError, Transport, Whole,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::agent::Agent;
use crate::client::Client;
use crate::connection::Connection;
use crate::error::to_rpc;
use crate::session::Session;

/// Sessions a connection keeps open at most, by default: far more than a person opens in a day of
/// work, few enough that a client that never closes one cannot grow the agent without bound.
const MAX_SESSIONS: usize = 10_000;

/// Serves an [`Agent`]: its protocol table, which [`serve_stdio`](Self::serve_stdio) and
/// [`connect`](Self::connect) serve over a connection of their own, each with the sessions its
/// client opens. Build one with [`Acp::builder`].
///
/// ```no_run
/// # use jrpc_acp::schema::{Error, NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse, StopReason};
/// # use jrpc_acp::{Agent, Client, Session};
/// # struct MyAgent;
/// # impl Agent for MyAgent {
/// #     async fn new_session(&self, _: NewSessionRequest, _: Client) -> Result<NewSessionResponse, Error> { unimplemented!() }
/// #     async fn prompt(&self, _: PromptRequest, _: Session) -> Result<PromptResponse, Error> { unimplemented!() }
/// # }
/// use jrpc_acp::Acp;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let acp = Acp::builder(MyAgent).info("my-agent", "1.0.0").build()?;
/// acp.serve_stdio().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Acp {
    methods: Methods,
    max_sessions: usize,
}

/// Builds an [`Acp`]: what `initialize` answers, extra methods, limits.
#[derive(Debug)]
pub struct AcpBuilder<A> {
    agent: A,
    initialize: InitializeResponse,
    methods: Methods,
    max_sessions: usize,
}

impl Acp {
    /// Returns a builder serving `agent`, which `initialize` describes with no capability beyond
    /// ACP's baseline until told ([`AcpBuilder::capabilities`]).
    pub fn builder<A: Agent>(agent: A) -> AcpBuilder<A> {
        AcpBuilder {
            agent,
            initialize: InitializeResponse::new(ProtocolVersion::V1),
            methods: Methods::new(),
            max_sessions: MAX_SESSIONS,
        }
    }

    /// Returns the protocol table: ACP's methods around the agent's, with `"params": null` read
    /// as absent and batches refused (`-32600`), as ACP has no batches.
    pub fn methods(&self) -> &Methods {
        &self.methods
    }

    /// Serves on stdin and stdout, one JSON message a line, until the end of input; then lets
    /// running requests finish and returns. `$/cancel_request` naming a running request drops
    /// it and answers it `-32800`. Logs belong on stderr: stdout carries the protocol.
    ///
    /// # Errors
    ///
    /// When input cannot be read or output written.
    pub async fn serve_stdio(&self) -> std::io::Result<()> {
        let config = self
            .connection_config(Transport::Stdio)
            .map_err(std::io::Error::other)?;
        jrpc_runtime::stdio::serve(self.methods.clone(), config).await
    }

    /// Serves one connection over `read` and `write` (a socket, a child's pipes, a test's
    /// duplex), one JSON message a line as over stdio: the handle on it, and its loop to spawn.
    ///
    /// # Errors
    ///
    /// None with the settings it uses; a [`ConfigError`] would name the bad one.
    pub fn connect<R, W>(&self, read: R, write: W) -> Result<(Peer, Driver), ConfigError>
    where
        R: AsyncRead + Send + 'static,
        W: AsyncWrite + Send + 'static,
    {
        let config = self.connection_config(Transport::Stream)?;
        Ok(Peer::connect_split(
            read,
            write,
            self.methods.clone(),
            config,
        ))
    }

    /// Returns a connection's settings: lines, ACP's `$/cancel_request`, and a state of its own.
    fn connection_config(&self, transport: Transport) -> Result<PeerConfig, ConfigError> {
        let connection = Arc::new(Connection::new(self.max_sessions));
        PeerConfig::builder()
            .framing(Framing::Lines)
            .cancellation(Cancellation::Acp)
            .context(Context::new(transport).with_extension(connection))
            .build()
    }
}

impl<A: Agent> AcpBuilder<A> {
    /// Sets the agent's name and version, which `initialize` tells the client (`agentInfo`).
    #[must_use]
    pub fn info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.initialize.agent_info = Some(Implementation::new(name, version));
        self
    }

    /// Sets what the agent offers beyond ACP's baseline (`agentCapabilities`): `loadSession`,
    /// the prompt's content kinds, MCP transports, session methods. The agent implements the
    /// methods they offer.
    #[must_use]
    pub fn capabilities(mut self, capabilities: AgentCapabilities) -> Self {
        self.initialize.agent_capabilities = capabilities;
        self
    }

    /// Sets the ways a client may authenticate (`authMethods`); the agent implements
    /// [`Agent::authenticate`].
    #[must_use]
    pub fn auth_methods(mut self, methods: Vec<AuthMethod>) -> Self {
        self.initialize.auth_methods = methods;
        self
    }

    /// Adds methods the [`Agent`] trait has not (extensions, named with a leading `_`; or ACP
    /// methods such as `session/list`, `session/delete`, `logout`), served beside ACP's. Their
    /// handlers reach the client through their context's peer.
    #[must_use]
    pub fn methods(mut self, methods: Methods) -> Self {
        self.methods = methods;
        self
    }

    /// Sets how many sessions one connection keeps open at most (default 10 000): past it,
    /// `session/new`, `session/load` and `session/resume` are refused until `session/close`
    /// closes one.
    #[must_use]
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.max_sessions = max;
        self
    }

    /// Checks the settings and builds the agent's table.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming what is wrong: `max_sessions` for zero; `methods` for a method
    /// that ACP's table serves already.
    pub fn build(self) -> Result<Acp, ConfigError> {
        if self.max_sessions == 0 {
            return Err(ConfigError::new("max_sessions", "must be at least 1"));
        }
        let mut methods = table(Arc::new(self.agent), self.initialize)
            .map_err(|err| ConfigError::new("methods", err.to_string()))?;
        methods
            .merge(self.methods)
            .map_err(|err| ConfigError::new("methods", err.to_string()))?;
        methods
            .null_params(NullParams::Absent)
            .batches(Batches::Refused);
        Ok(Acp {
            methods,
            max_sessions: self.max_sessions,
        })
    }
}

/// Registers the call `name`, whose whole params decode into `Req`, answered by `handler`.
fn register<Req, Res, F, Fut>(
    methods: &mut Methods,
    name: &str,
    handler: F,
) -> Result<(), RegisterError>
where
    Req: DeserializeOwned + Send + 'static,
    Res: Serialize + Send + 'static,
    F: Fn(Req, Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Res, Error>> + Send + 'static,
{
    methods.register(
        name,
        &[],
        move |Whole(request): Whole<Req>, ctx: Context| {
            let answer = handler(request, ctx);
            async move { answer.await.map_err(to_rpc) }
        },
    )?;
    Ok(())
}

/// Returns the client of the connection `ctx` belongs to.
fn client(ctx: &Context) -> Result<(Client, Arc<Connection>), Error> {
    let connection = Arc::clone(Connection::of(ctx)?);
    let peer = ctx
        .peer()
        .cloned()
        .ok_or_else(|| Error::internal_error().data("ACP is served over a connection"))?;
    Ok((Client::new(peer, Arc::clone(&connection)), connection))
}

/// Returns ACP's table around `agent`; `initialize` answers `initialize`.
fn table<A: Agent>(
    agent: Arc<A>,
    initialize: InitializeResponse,
) -> Result<Methods, RegisterError> {
    let mut methods = Methods::new();
    let names = &AGENT_METHOD_NAMES;

    // The version: the client's when it is 1, else the latest the agent speaks, which is 1 too
    // (0 was a pre-release): always 1.
    let initialize = Arc::new(initialize);
    register(
        &mut methods,
        names.initialize,
        move |request: InitializeRequest, ctx| {
            let answer = Arc::clone(&initialize);
            async move {
                Connection::of(&ctx)?.initialize(&request);
                Ok(InitializeResponse::clone(&answer))
            }
        },
    )?;

    let agent_ = Arc::clone(&agent);
    register(&mut methods, names.authenticate, move |request, _ctx| {
        let agent = Arc::clone(&agent_);
        async move { agent.authenticate(request).await }
    })?;

    let agent_ = Arc::clone(&agent);
    register(
        &mut methods,
        names.session_new,
        move |request: NewSessionRequest, ctx| {
            let agent = Arc::clone(&agent_);
            async move {
                let (client, connection) = client(&ctx)?;
                connection.has_room()?;
                let answer = agent.new_session(request, client).await?;
                connection.open(&answer.session_id);
                Ok(answer)
            }
        },
    )?;

    let agent_ = Arc::clone(&agent);
    register(
        &mut methods,
        names.session_load,
        move |request: LoadSessionRequest, ctx| {
            let agent = Arc::clone(&agent_);
            async move {
                let (client, connection) = client(&ctx)?;
                connection.has_room()?;
                let id = request.session_id.clone();
                let answer = agent
                    .load_session(request, Session::new(id.clone(), client))
                    .await?;
                connection.open(&id);
                Ok(answer)
            }
        },
    )?;

    let agent_ = Arc::clone(&agent);
    register(
        &mut methods,
        names.session_resume,
        move |request: ResumeSessionRequest, ctx| {
            let agent = Arc::clone(&agent_);
            async move {
                let (client, connection) = client(&ctx)?;
                connection.has_room()?;
                let id = request.session_id.clone();
                let answer = agent
                    .resume_session(request, Session::new(id.clone(), client))
                    .await?;
                connection.open(&id);
                Ok(answer)
            }
        },
    )?;

    let agent_ = Arc::clone(&agent);
    register(
        &mut methods,
        names.session_prompt,
        move |request: PromptRequest, ctx| {
            let agent = Arc::clone(&agent_);
            prompt(agent, request, ctx)
        },
    )?;

    // A notification: nothing is answered, and an unknown session has no turn to cancel.
    methods.register_notification(
        names.session_cancel,
        &[],
        |Whole(notice): Whole<CancelNotification>, ctx: Context| async move {
            if let Some(peer) = ctx.peer() {
                peer.cancel_key(&notice.session_id.0);
            }
        },
    )?;

    let agent_ = Arc::clone(&agent);
    register(
        &mut methods,
        names.session_close,
        move |request: CloseSessionRequest, ctx| {
            let agent = Arc::clone(&agent_);
            async move {
                let (client, connection) = client(&ctx)?;
                connection.known(&request.session_id)?;
                client.peer().cancel_key(&request.session_id.0);
                connection.close(&request.session_id);
                agent.close_session(request).await
            }
        },
    )?;

    let agent_ = Arc::clone(&agent);
    register(
        &mut methods,
        names.session_set_mode,
        move |request: SetSessionModeRequest, ctx| {
            let agent = Arc::clone(&agent_);
            async move {
                let (client, connection) = client(&ctx)?;
                connection.known(&request.session_id)?;
                let session = Session::new(request.session_id.clone(), client);
                agent.set_session_mode(request, session).await
            }
        },
    )?;

    register(
        &mut methods,
        names.session_set_config_option,
        move |request: SetSessionConfigOptionRequest, ctx| {
            let agent = Arc::clone(&agent);
            async move {
                let (client, connection) = client(&ctx)?;
                connection.known(&request.session_id)?;
                let session = Session::new(request.session_id.clone(), client);
                agent.set_session_config_option(request, session).await
            }
        },
    )?;

    Ok(methods)
}

/// Runs a prompt turn: the session must be the connection's; the turn is told of
/// `session/cancel` by its session's id and, unless it keeps running, dropped then. A turn
/// cancelled answers `cancelled`, whatever it returned.
async fn prompt<A: Agent>(
    agent: Arc<A>,
    request: PromptRequest,
    ctx: Context,
) -> Result<PromptResponse, Error> {
    // Before the first `.await`, so in the call's first poll, which the connection makes before it
    // reads the next message: a `session/cancel` sent right after the prompt finds the turn.
    let (client, connection) = client(&ctx)?;
    connection.known(&request.session_id)?;
    let _told = ctx.cancellable_by_key(request.session_id.0.as_ref());
    let session = Session::for_turn(request.session_id.clone(), client, ctx.clone());
    let dropped = session.dropped_when_cancelled();
    let answer = tokio::select! {
        biased;
        answer = agent.prompt(request, session) => answer,
        () = dropped => return Ok(PromptResponse::new(StopReason::Cancelled)),
    };
    if !ctx.is_cancelled() {
        return answer;
    }
    Ok(match answer {
        Ok(mut answer) => {
            answer.stop_reason = StopReason::Cancelled;
            answer
        }
        Err(_) => PromptResponse::new(StopReason::Cancelled),
    })
}
