//! Reconnects a [`WsClient`](super::WsClient) whose connection closed: [`Reconnect`], its
//! settings, and the task that watches the connection, dials again with backoff, and subscribes
//! the client's subscriptions again on each new connection.
//!
//! The task's states:
//!
//! | state | the link says | what ends it |
//! | --- | --- | --- |
//! | connected | the connection | it closes: to reconnecting |
//! | reconnecting | `None` (calls wait) | a dial succeeds: its subscriptions are subscribed again, the count goes up, to connected; the attempts run out: the client gives up |
//! | gave up | `None`, and the link is dropped (calls fail `Closed`) | - |
//!
//! In any state, the task ends once nothing holds the link any more (every clone of the client,
//! and every subscription made through it, dropped), and with it the connection.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher as _;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::dial::Dialer;
use crate::error::{ConfigError, check};
use crate::peer::{Peer, Resubscriptions};

/// Says how a [`WsClient`](super::WsClient) connects again when its connection closes (see
/// [`WsClientBuilder::reconnect`](super::WsClientBuilder::reconnect)).
///
/// It waits [`initial_delay`](Self::initial_delay) before the first attempt, and twice as long
/// before each next one, up to [`max_delay`](Self::max_delay); it gives up after
/// [`max_attempts`](Self::max_attempts) attempts in a row fail. A connection made starts the
/// count again. Each wait is drawn at random between half its delay and the whole
/// ([`jitter`](Self::jitter)): the clients a server's restart cut off together do not all dial it
/// again at the same instant, and no wait is longer than the schedule says.
///
/// The default waits 250 ms, doubling up to 30 s, with jitter, and never gives up: a client that
/// holds subscriptions is there to outlive a server's restart, however long it takes; set
/// `max_attempts` for one that should give up.
///
/// ```
/// use std::time::Duration;
/// use jrpc_runtime::ws::Reconnect;
///
/// let reconnect = Reconnect::new()
///     .initial_delay(Duration::from_millis(100))
///     .max_delay(Duration::from_secs(5))
///     .max_attempts(Some(10));
/// # let _ = reconnect;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reconnect {
    initial_delay: Duration,
    max_delay: Duration,
    max_attempts: Option<u32>,
    jitter: bool,
}

impl Default for Reconnect {
    fn default() -> Self {
        Self::new()
    }
}

impl Reconnect {
    /// Returns the default settings: 250 ms before the first attempt, doubling up to 30 s, with
    /// jitter, and no limit on attempts.
    pub const fn new() -> Self {
        Self {
            initial_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(30),
            max_attempts: None,
            jitter: true,
        }
    }

    /// Sets the wait before the first attempt after the connection closed (default 250 ms);
    /// above zero.
    #[must_use]
    pub const fn initial_delay(mut self, delay: Duration) -> Self {
        self.initial_delay = delay;
        self
    }

    /// Sets the longest wait between two attempts (default 30 s); at least `initial_delay`.
    #[must_use]
    pub const fn max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// Sets how many attempts in a row may fail before the client gives up (default `None`:
    /// never). `Some(0)` gives up as soon as the connection closes.
    #[must_use]
    pub const fn max_attempts(mut self, attempts: Option<u32>) -> Self {
        self.max_attempts = attempts;
        self
    }

    /// Sets whether each wait is drawn at random between half its delay and the whole (default
    /// `true`), so that clients cut off together come back spread out; `false` waits each delay
    /// exactly.
    #[must_use]
    pub const fn jitter(mut self, jitter: bool) -> Self {
        self.jitter = jitter;
        self
    }

    /// Refuses a zero initial delay (a dead server would be dialed in a busy loop) and a
    /// maximum below it.
    pub(super) fn check(&self) -> Result<(), ConfigError> {
        check::limit("initial_delay", self.initial_delay)?;
        if self.max_delay < self.initial_delay {
            return Err(ConfigError::new(
                "max_delay",
                format!(
                    "must be at least `initial_delay` ({:?})",
                    self.initial_delay
                ),
            ));
        }
        Ok(())
    }

    /// Returns the wait before attempt `attempt` (from 0) of one outage.
    fn delay(&self, attempt: u32) -> Duration {
        let doubled = 2u32
            .checked_pow(attempt)
            .and_then(|factor| self.initial_delay.checked_mul(factor));
        doubled.map_or(self.max_delay, |delay| delay.min(self.max_delay))
    }

    /// Returns how long to wait before attempt `attempt` (from 0) of one outage: its delay, or
    /// with jitter a part of it drawn at random.
    fn wait(&self, attempt: u32) -> Duration {
        let delay = self.delay(attempt);
        if !self.jitter {
            return delay;
        }
        // Std's hasher keys are drawn at random (per thread, then stepped): a fresh draw each
        // time, without a dependency.
        jittered(delay, RandomState::new().hash_one(attempt))
    }
}

/// Returns a wait between half of `delay` (`draw` 0) and the whole (`draw` `u64::MAX`), where
/// `draw` (any `u64`) picks.
fn jittered(delay: Duration, draw: u64) -> Duration {
    let half = delay / 2;
    let rest = delay - half;
    let share = u32::try_from(draw >> 32).unwrap_or(u32::MAX);
    // Past `Duration`'s range (a delay of centuries): the whole delay.
    rest.checked_mul(share)
        .map_or(delay, |scaled| half + scaled / u32::MAX)
}

/// Keeps a reconnecting client connected, in a task of its own (see the module's table).
pub(super) struct Supervisor {
    pub(super) dialer: Dialer,
    pub(super) reconnect: Reconnect,
    /// The connection calls go over; `None` while there is none.
    pub(super) link: watch::Sender<Option<Peer>>,
    /// How many times the client connected again.
    pub(super) reconnects: watch::Sender<u64>,
    pub(super) subscriptions: Arc<Resubscriptions>,
}

/// Says how an outage ended.
enum Redialed {
    Connected(Peer),
    GaveUp,
    /// Nothing holds the client any more.
    Unused,
}

impl Supervisor {
    /// Runs until the client gives up, or nothing holds it any more.
    pub(super) async fn run(self) {
        loop {
            let closed = match self.link.borrow().as_ref() {
                Some(peer) => peer.closed(),
                None => return,
            };
            tokio::select! {
                () = closed => {}
                () = self.link.closed() => return,
            }
            // Calls wait for the next connection rather than fail on this one.
            self.link.send_replace(None);
            tracing::info!(
                url = self.dialer.url(),
                "the connection closed: reconnecting"
            );
            let peer = match self.redial().await {
                Redialed::Connected(peer) => peer,
                Redialed::Unused => return,
                Redialed::GaveUp => {
                    tracing::warn!(
                        url = self.dialer.url(),
                        attempts = self.reconnect.max_attempts,
                        "reconnecting gave up: the client is closed"
                    );
                    // Dropping the senders tells waiting calls and `reconnected` it is over.
                    self.subscriptions.close();
                    return;
                }
            };
            self.link.send_replace(Some(peer.clone()));
            self.subscriptions.resubscribe(&peer).await;
            self.reconnects.send_modify(|count| *count += 1);
            tracing::info!(url = self.dialer.url(), "reconnected");
        }
    }

    /// Dials until a connection is made, the attempts run out, or nothing holds the client.
    async fn redial(&self) -> Redialed {
        let mut attempt = 0;
        loop {
            if self
                .reconnect
                .max_attempts
                .is_some_and(|max| attempt >= max)
            {
                return Redialed::GaveUp;
            }
            tokio::select! {
                () = tokio::time::sleep(self.reconnect.wait(attempt)) => {}
                () = self.link.closed() => return Redialed::Unused,
            }
            attempt += 1;
            let dialed = tokio::select! {
                dialed = self.dialer.dial(None) => dialed,
                () = self.link.closed() => return Redialed::Unused,
            };
            match dialed {
                Ok(peer) => return Redialed::Connected(peer),
                Err(err) => tracing::debug!(
                    url = self.dialer.url(),
                    attempt,
                    error = %err,
                    "a reconnect attempt failed"
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{Reconnect, jittered};

    #[test]
    fn the_delay_doubles_up_to_the_maximum() {
        let reconnect = Reconnect::new()
            .initial_delay(Duration::from_millis(100))
            .max_delay(Duration::from_secs(1));
        let delays: Vec<_> = (0..6).map(|attempt| reconnect.delay(attempt)).collect();
        let ms = Duration::from_millis;
        assert_eq!(
            delays,
            [ms(100), ms(200), ms(400), ms(800), ms(1000), ms(1000)]
        );
        // Far past any doubling that fits: the maximum, not an overflow.
        assert_eq!(reconnect.delay(40), ms(1000));
        assert_eq!(reconnect.delay(u32::MAX), ms(1000));
    }

    #[test]
    fn a_jittered_wait_lies_between_half_its_delay_and_the_whole() {
        let ms = Duration::from_millis;
        assert_eq!(jittered(ms(1000), 0), ms(500));
        assert_eq!(jittered(ms(1000), u64::MAX), ms(1000));
        assert_eq!(
            jittered(ms(1000), u64::MAX / 2),
            ms(750) - Duration::from_nanos(1)
        );
        // No overflow at the edge of `Duration`'s range.
        assert!(jittered(Duration::MAX, u64::MAX) >= Duration::MAX / 2);
        let reconnect = Reconnect::new().initial_delay(ms(100)).max_delay(ms(1000));
        let waits: Vec<_> = (0..64).map(|_| reconnect.wait(2)).collect();
        assert!(
            waits.iter().all(|wait| (ms(200)..=ms(400)).contains(wait)),
            "{waits:?}"
        );
        // Drawn each time: 64 draws alike would be a broken draw, not chance.
        assert!(waits.iter().any(|wait| *wait != waits[0]), "{waits:?}");
        let exact = reconnect.jitter(false);
        assert!((0..8).all(|_| exact.wait(2) == ms(400)));
    }

    #[test]
    fn a_zero_delay_or_a_maximum_below_it_is_refused() {
        let key = |reconnect: Reconnect| reconnect.check().unwrap_err().key();
        assert_eq!(
            key(Reconnect::new().initial_delay(Duration::ZERO)),
            "initial_delay"
        );
        assert_eq!(
            key(Reconnect::new()
                .initial_delay(Duration::from_secs(2))
                .max_delay(Duration::from_secs(1))),
            "max_delay"
        );
        assert!(Reconnect::new().check().is_ok());
    }
}
