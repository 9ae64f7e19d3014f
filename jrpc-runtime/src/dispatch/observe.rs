//! Tells the application about the requests the dispatcher handled: the reports of the
//! [`Methods::on_error`](super::Methods::on_error) and [`Methods::observe`](super::Methods::observe) hooks.

use std::fmt;
use std::time::Duration;

use crate::transport::Transport;
use crate::wire::{ErrorCode, Id};

/// Reports a failure that was answered `-32603 Internal error` (or not answered, for a
/// notification), given to the [`Methods::on_error`](super::Methods::on_error) hook with the reason
/// the client does not see.
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

/// Says how a request went, as [`Methods::observe`](super::Methods::observe) sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The handler answered a result (or, for a notification, finished).
    Success,
    /// The request failed with this code: the handler's error, bad params (`-32602`), an unknown
    /// method (`-32601`), or an internal failure (`-32603`).
    Error(ErrorCode),
    /// Its answer (or, for a push, the notification or call itself; `id` is then `None`) did not
    /// fit in what the connection may hold for a peer that does not read (its `max_buffered`
    /// budget or its `queue`), so the connection was closed and the message dropped. Reported
    /// once per closed connection, besides the handler's own observation; `elapsed` is zero and
    /// `method` empty for a batch's answer.
    Overflowed,
    /// Its future was dropped before it finished: its caller went away (a dropped call, a closed
    /// connection, a reset stream, a gone event stream), a cancel notice named it, or a
    /// shutdown's drain budget ran out. Nothing was answered (over LSP's notices the connection
    /// answers `-32800` itself).
    Cancelled,
}

impl fmt::Display for Outcome {
    /// `ok`, `error` and the code, `overflowed` or `cancelled`: what the log lines show.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Success => f.write_str("ok"),
            Self::Error(code) => write!(f, "error {code}"),
            Self::Overflowed => f.write_str("overflowed"),
            Self::Cancelled => f.write_str("cancelled"),
        }
    }
}

/// Reports one request handled, given to the [`Methods::observe`](super::Methods::observe) hook:
/// for metrics and access logs.
#[derive(Debug)]
#[non_exhaustive]
pub struct Observation<'a> {
    /// The method called.
    pub method: &'a str,
    /// The request id; `None` for a notification.
    pub id: Option<&'a Id>,
    /// The transport the request arrived on.
    pub transport: Transport,
    /// From the dispatcher taking the request to its answer; the read of the request may count in
    /// it (a call whose params are decoded while it is read).
    pub elapsed: Duration,
    /// How it went.
    pub outcome: Outcome,
}
