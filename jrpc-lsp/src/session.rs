//! Holds what one LSP connection knows of its lifecycle: where it stands (before `initialize`,
//! serving, shut down), how it is to end, the client's process, the position encoding chosen, and
//! the work-done progress tokens of requests running.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use jrpc_runtime::{Context, Id};
use lsp_types::ProgressToken;
use tokio::sync::watch;

use crate::text::PositionEncoding;

/// Says where a connection stands in the protocol's lifecycle.
///
/// | state | `initialize` | other requests | notifications | moves to |
/// | --- | --- | --- | --- | --- |
/// | `Uninitialized` | runs | `-32002` | dropped, reported | `Initializing` on `initialize` |
/// | `Initializing` | `-32600` | `-32002` | dropped, reported | `Initialized` when it succeeds, else back |
/// | `Initialized` | `-32600` | run | run | `ShutDown` on `shutdown` |
/// | `ShutDown` | `-32600` | `-32600` | dropped, reported | - |
///
/// `exit` is taken in every state: it ends the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    Uninitialized,
    Initializing,
    Initialized,
    ShutDown,
}

/// Says how a language server's connection ended, and so with which status its process exits
/// ([`code`](Self::code)): the protocol wants 0 after `shutdown` then `exit`, and 1 otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Exit {
    /// `exit` came after `shutdown`: status 0.
    Clean,
    /// `exit` came without a `shutdown` before it: status 1.
    WithoutShutdown,
    /// Input ended before `exit` (the editor closed the pipe or the socket): status 1.
    InputEnded,
    /// The client's process (`processId` in `initialize`) is gone: status 1.
    ClientGone,
}

impl Exit {
    /// Returns the status the process should exit with: 0 for [`Clean`](Self::Clean), else 1.
    pub fn code(self) -> i32 {
        match self {
            Self::Clean => 0,
            Self::WithoutShutdown | Self::InputEnded | Self::ClientGone => 1,
        }
    }

    /// Ends the process at once with [`code`](Self::code).
    ///
    /// A language server on stdio should end this way rather than return from `main`: Tokio
    /// reads stdin on a blocking thread that cannot be interrupted, and a runtime being shut
    /// down waits for that read, which may never come.
    pub fn exit_process(self) -> ! {
        std::process::exit(self.code())
    }
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Clean => "`exit` after `shutdown`",
            Self::WithoutShutdown => "`exit` without `shutdown`",
            Self::InputEnded => "input ended without `exit`",
            Self::ClientGone => "the client's process is gone",
        })
    }
}

/// Holds one connection's lifecycle; the connection's context carries it ([`SessionRef`]).
pub(crate) struct Session {
    state: Mutex<State>,
    /// How the connection is to end, once `exit` came.
    exit: watch::Sender<Option<Exit>>,
    /// The client's process id, from a successful `initialize`.
    process_id: watch::Sender<Option<u32>>,
    /// The position encoding `initialize` answered, as [`encode`]d.
    encoding: AtomicU8,
    /// The progress tokens of running requests, for `window/workDoneProgress/cancel`: one entry
    /// per request running with a token, so no larger than the connection's in-flight cap.
    progress: Mutex<HashMap<ProgressToken, Id>>,
}

impl Session {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State::Uninitialized),
            exit: watch::Sender::new(None),
            process_id: watch::Sender::new(None),
            encoding: AtomicU8::new(encode(PositionEncoding::Utf16)),
            progress: Mutex::new(HashMap::new()),
        })
    }

    /// Returns the session of the connection `ctx` is on; `None` outside one served by
    /// [`LspServer`](crate::LspServer).
    pub(crate) fn of(ctx: &Context) -> Option<&Arc<Session>> {
        ctx.extension::<SessionRef>().map(|session| &session.0)
    }

    /// Returns the state, locked. Poisoning needs a panic while it is held, and every update is
    /// one assignment, so the value is whole: it is taken as it is.
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records `exit`: the connection ends with `0` after a `shutdown`, else `1`.
    pub(crate) fn exit(&self) {
        let exit = if *self.state() == State::ShutDown {
            Exit::Clean
        } else {
            Exit::WithoutShutdown
        };
        self.exit
            .send_if_modified(|slot| slot.replace(exit).is_none());
    }

    /// Resolves once `exit` came, with how the connection ends.
    pub(crate) async fn exited(&self) -> Exit {
        let mut exit = self.exit.subscribe();
        // The session owns the sender: while it lives the channel stays open, and `wait_for`
        // returns only with `Some`.
        let seen = exit
            .wait_for(Option::is_some)
            .await
            .ok()
            .and_then(|exit| *exit);
        seen.unwrap_or(Exit::WithoutShutdown)
    }

    /// Returns how the connection is to end, if `exit` came.
    pub(crate) fn exit_now(&self) -> Option<Exit> {
        *self.exit.borrow()
    }

    /// Records a successful `initialize`: the client's process, the encoding answered.
    pub(crate) fn initialized(&self, process_id: Option<u32>, encoding: PositionEncoding) {
        self.encoding.store(encode(encoding), Ordering::Release);
        if process_id.is_some() {
            self.process_id.send_replace(process_id);
        }
    }

    /// Resolves with the client's process id once `initialize` gave one; never without one.
    pub(crate) async fn client_process(&self) -> u32 {
        let mut process = self.process_id.subscribe();
        let seen = process
            .wait_for(Option::is_some)
            .await
            .ok()
            .and_then(|pid| *pid);
        match seen {
            Some(pid) => pid,
            None => std::future::pending().await,
        }
    }

    /// Returns the position encoding `initialize` answered (UTF-16 before it, or when it named
    /// none).
    pub(crate) fn encoding(&self) -> PositionEncoding {
        decode(self.encoding.load(Ordering::Acquire))
    }

    /// Registers `token` as the progress of request `id` while the guard lives.
    pub(crate) fn track(self: &Arc<Self>, token: &ProgressToken, id: &Id) -> Tracked {
        self.progress().insert(token.clone(), id.clone());
        Tracked {
            session: Arc::clone(self),
            token: token.clone(),
        }
    }

    /// Returns the request whose progress is `token`.
    pub(crate) fn request_of(&self, token: &ProgressToken) -> Option<Id> {
        self.progress().get(token).cloned()
    }

    fn progress(&self) -> MutexGuard<'_, HashMap<ProgressToken, Id>> {
        // As for the state: every update is one insert or remove.
        self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Forgets a progress token when its request ends.
pub(crate) struct Tracked {
    session: Arc<Session>,
    token: ProgressToken,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.session.progress().remove(&self.token);
    }
}

/// Holds the session in a connection's context (a private type: nobody else can put one there).
#[derive(Clone)]
pub(crate) struct SessionRef(pub(crate) Arc<Session>);

fn encode(encoding: PositionEncoding) -> u8 {
    match encoding {
        PositionEncoding::Utf8 => 8,
        PositionEncoding::Utf16 => 16,
        PositionEncoding::Utf32 => 32,
    }
}

fn decode(encoding: u8) -> PositionEncoding {
    match encoding {
        8 => PositionEncoding::Utf8,
        32 => PositionEncoding::Utf32,
        _ => PositionEncoding::Utf16,
    }
}
