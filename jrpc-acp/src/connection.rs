//! Keeps what one connection's requests share: what the client said in `initialize`, and the
//! sessions it opened. Each connection's context carries its own, as an extension.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agent_client_protocol_schema::v1::{
    ClientCapabilities, Error, Implementation, InitializeRequest, SessionId,
};
use jrpc_runtime::Context;

/// Holds one connection's state; shared by its requests through their context.
#[derive(Debug)]
pub(crate) struct Connection {
    client: Mutex<Arc<ClientSide>>,
    sessions: Mutex<HashSet<SessionId>>,
    max_sessions: usize,
}

/// Holds what the client said of itself in `initialize`.
#[derive(Debug, Default)]
pub(crate) struct ClientSide {
    pub(crate) capabilities: ClientCapabilities,
    pub(crate) info: Option<Implementation>,
}

/// Locks `mutex`, whatever panicked while holding it: the values stay whole (each change is
/// one insert, remove or swap).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Connection {
    /// Returns a connection's state with no client info yet (every capability unsupported, as
    /// ACP says of capabilities not declared) and no session.
    pub(crate) fn new(max_sessions: usize) -> Self {
        Self {
            client: Mutex::default(),
            sessions: Mutex::default(),
            max_sessions,
        }
    }

    /// Returns the state of the connection `ctx` belongs to.
    ///
    /// # Errors
    ///
    /// An internal error when `ctx` is no ACP connection's (a table served some other way).
    pub(crate) fn of(ctx: &Context) -> Result<&Arc<Connection>, Error> {
        ctx.extension::<Arc<Connection>>()
            .ok_or_else(|| Error::internal_error().data("not an ACP connection"))
    }

    /// Keeps what `initialize` said of the client; a second `initialize` replaces it.
    pub(crate) fn initialize(&self, request: &InitializeRequest) {
        *lock(&self.client) = Arc::new(ClientSide {
            capabilities: request.client_capabilities.clone(),
            info: request.client_info.clone(),
        });
    }

    /// Returns what the client said of itself.
    pub(crate) fn client(&self) -> Arc<ClientSide> {
        Arc::clone(&lock(&self.client))
    }

    /// Returns whether the connection may open one more session.
    ///
    /// # Errors
    ///
    /// When `max_sessions` are open.
    pub(crate) fn has_room(&self) -> Result<(), Error> {
        if lock(&self.sessions).len() >= self.max_sessions {
            return Err(Error::internal_error().data(format!(
                "{} sessions are open on this connection, the most it keeps: close one first",
                self.max_sessions
            )));
        }
        Ok(())
    }

    /// Records `id` as a session of this connection.
    pub(crate) fn open(&self, id: &SessionId) {
        lock(&self.sessions).insert(id.clone());
    }

    /// Forgets session `id`; returns whether it was open.
    pub(crate) fn close(&self, id: &SessionId) -> bool {
        lock(&self.sessions).remove(id)
    }

    /// Checks that `id` is a session of this connection.
    ///
    /// # Errors
    ///
    /// ACP's "resource not found" (`-32002`) naming the session.
    pub(crate) fn known(&self, id: &SessionId) -> Result<(), Error> {
        if lock(&self.sessions).contains(id) {
            Ok(())
        } else {
            Err(Error::session_not_found(id.clone()))
        }
    }
}
