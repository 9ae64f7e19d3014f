//! Keeps the protocol's lifecycle around every call: a call layer on the server's table, so that
//! a server's handlers never check it (the rules are in [`State`]).
//!
//! A layer, not a handler, because the protocol's answers here are reserved codes (`-32600` after
//! `shutdown`) that the dispatcher does not let a handler give, and because the layer runs in
//! arrival order: the connection's loop polls each call once before it reads the next message,
//! and every decision below is made in that first poll, so a request that follows `shutdown` on
//! the wire is refused even while `shutdown`'s own handler still runs.

use std::collections::HashSet;
use std::sync::Arc;
use std::task::Poll;

use jrpc_runtime::{Answer, BoxError, BoxFuture, Call, CallService, ErrorCode, RpcError};
use serde::Deserialize;
use tower_layer::Layer;
use tower_service::Service;

use crate::codes;
use crate::session::{Session, State};
use crate::text::PositionEncoding;

/// Puts the lifecycle around a table's calls.
#[derive(Clone)]
pub(crate) struct Lifecycle {
    /// The table's own methods: `initialized`, `shutdown` and `exit` run the server's handlers
    /// when it has them (else the crate takes them), and `$/` notifications it does not have are
    /// dropped quietly.
    names: Arc<HashSet<Box<str>>>,
}

impl Lifecycle {
    pub(crate) fn new<'a>(names: impl Iterator<Item = &'a str>) -> Self {
        Self {
            names: Arc::new(names.map(Box::from).collect()),
        }
    }
}

impl Layer<CallService> for Lifecycle {
    type Service = LifecycleService;

    fn layer(&self, inner: CallService) -> LifecycleService {
        LifecycleService {
            inner,
            names: Arc::clone(&self.names),
        }
    }
}

/// Answers a call by the lifecycle's rules, or lets it through.
#[derive(Clone)]
pub(crate) struct LifecycleService {
    inner: CallService,
    names: Arc<HashSet<Box<str>>>,
}

/// Says what becomes of a call.
enum Decision {
    /// It goes on to its handler.
    Run,
    /// `initialize`, which goes on to its handler and moves the state on when it succeeds.
    Initialize,
    /// It is answered in its handler's place.
    Answer(Answer),
}

impl LifecycleService {
    fn has(&self, method: &str) -> bool {
        self.names.contains(method)
    }

    /// Decides what becomes of `call`, moving the state where the call does.
    fn decide(&self, session: &Session, call: &Call) -> Decision {
        let method = call.method();
        if method == "exit" {
            session.exit();
            return self.run_or_null(method);
        }
        // The specification lets a server ignore `$/` notifications ($/setTrace, $/logTrace):
        // one the table does not have is not a failure worth a report.
        if call.id().is_none() && method.starts_with("$/") && !self.has(method) {
            return null();
        }
        let mut state = session.state();
        match (*state, method) {
            (State::Uninitialized, "initialize") => {
                *state = State::Initializing;
                Decision::Initialize
            }
            (State::Initializing, "initialize") => refuse(
                ErrorCode::INVALID_REQUEST,
                "`initialize` is already running",
            ),
            (State::Uninitialized | State::Initializing, _) => refuse(
                codes::SERVER_NOT_INITIALIZED,
                "the server is not initialized: send `initialize` first",
            ),
            (State::Initialized, "initialize") => refuse(
                ErrorCode::INVALID_REQUEST,
                "`initialize` may be sent only once",
            ),
            (State::Initialized, "shutdown") => {
                *state = State::ShutDown;
                drop(state);
                self.run_or_null(method)
            }
            // Every client sends it; a server with nothing to do then need not write it.
            (State::Initialized, "initialized") => self.run_or_null(method),
            (State::Initialized, _) => Decision::Run,
            (State::ShutDown, _) => refuse(
                ErrorCode::INVALID_REQUEST,
                "the server is shut down: only `exit` is taken",
            ),
        }
    }

    /// Runs the table's handler for `method` where it has one, else answers `null`.
    fn run_or_null(&self, method: &str) -> Decision {
        if self.has(method) {
            Decision::Run
        } else {
            null()
        }
    }
}

fn null() -> Decision {
    match Answer::result(&()) {
        Ok(answer) => Decision::Answer(answer),
        // `null` always encodes; were it not to, the table answers (`-32601`) instead.
        Err(_) => Decision::Run,
    }
}

fn refuse(code: ErrorCode, message: &'static str) -> Decision {
    Decision::Answer(Answer::error(RpcError::new(code, message)))
}

impl Service<Call> for LifecycleService {
    type Response = Answer;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Answer, BoxError>>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: Call) -> Self::Future {
        // A table served in process (tests calling `Methods::handle`) has no session: no rules.
        let Some(session) = Session::of(call.context()).cloned() else {
            return self.inner.call(call);
        };
        match self.decide(&session, &call) {
            Decision::Run => self.inner.call(call),
            Decision::Answer(answer) => Box::pin(std::future::ready(Ok(answer))),
            Decision::Initialize => {
                let process_id = call.params().and_then(|raw| {
                    serde_json::from_str::<InitializeSeen>(raw.get())
                        .ok()
                        .and_then(|seen| seen.process_id)
                });
                let running = self.inner.call(call);
                let mut pending = Pending {
                    session,
                    done: false,
                };
                Box::pin(async move {
                    let answered = running.await;
                    if let Ok(answer) = &answered
                        && let Some(result) = answer.result_json()
                    {
                        let encoding = serde_json::from_str::<InitializeAnswered>(result)
                            .ok()
                            .and_then(|answered| answered.capabilities.position_encoding)
                            .and_then(|name| PositionEncoding::from_name(&name))
                            .unwrap_or_default();
                        pending.succeeded(process_id, encoding);
                    }
                    answered
                })
            }
        }
    }
}

/// Puts the state back before `initialize` if its call ends without succeeding (an error, or
/// cancelled): the client may try again.
struct Pending {
    session: Arc<Session>,
    done: bool,
}

impl Pending {
    /// Records the client's process and the encoding answered, and moves on to serving.
    fn succeeded(&mut self, process_id: Option<u32>, encoding: PositionEncoding) {
        self.session.initialized(process_id, encoding);
        *self.session.state() = State::Initialized;
        self.done = true;
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.done {
            let mut state = self.session.state();
            if *state == State::Initializing {
                *state = State::Uninitialized;
            }
        }
    }
}

/// Holds what the lifecycle reads of `initialize`'s params: nothing else, and nothing fails.
#[derive(Deserialize)]
struct InitializeSeen {
    #[serde(rename = "processId", default)]
    process_id: Option<u32>,
}

/// Holds what the lifecycle reads of `initialize`'s result.
#[derive(Deserialize)]
struct InitializeAnswered {
    #[serde(default)]
    capabilities: CapabilitiesAnswered,
}

/// Holds what the lifecycle reads of the capabilities answered.
#[derive(Default, Deserialize)]
struct CapabilitiesAnswered {
    #[serde(rename = "positionEncoding", default)]
    position_encoding: Option<String>,
}
