//! What the dispatcher tells the application about the requests it handled: the reports of the
//! [`Methods::on_error`](super::Methods::on_error) and [`Methods::observe`](super::Methods::observe) hooks.

use std::fmt;
use std::time::Duration;

use super::Transport;
use crate::{ErrorCode, Id};

/// A failure that was answered `-32603 Internal error` (or not answered, for a notification),
/// given to the [`Methods::on_error`](super::Methods::on_error) hook with the reason the client does not see.
#[derive(Debug)]
#[non_exhaustive]
pub struct ErrorReport<'a> {
    /// The method called.
    pub method: &'a str,
    /// The request id; `None` for a notification.
    pub id: Option<&'a Id>,
    /// What went wrong: a panic message, a timeout, an encoding error, a reserved code.
    pub reason: &'a str,
}

/// How a request went, as [`Methods::observe`](super::Methods::observe) sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The handler answered a result (or, for a notification, finished).
    Success,
    /// The request failed with this code: the handler's error, bad params (`-32602`), an unknown
    /// method (`-32601`), or an internal failure (`-32603`).
    Error(ErrorCode),
}

impl fmt::Display for Outcome {
    /// `ok`, or `error` and the code: what the per-request log line shows.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Success => f.write_str("ok"),
            Self::Error(code) => write!(f, "error {code}"),
        }
    }
}

/// One request handled, given to the [`Methods::observe`](super::Methods::observe) hook: for metrics and access logs.
#[derive(Debug)]
#[non_exhaustive]
pub struct Observation<'a> {
    /// The method called.
    pub method: &'a str,
    /// The request id; `None` for a notification.
    pub id: Option<&'a Id>,
    /// The transport the request arrived on.
    pub transport: Transport,
    /// From reading the request to its answer (parsing excluded).
    pub elapsed: Duration,
    /// How it went.
    pub outcome: Outcome,
}
