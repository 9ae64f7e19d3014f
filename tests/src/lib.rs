//! Test-only crate: the tests live under `tests/`; this library holds what several of them share.
//!
//! - here: time limits for async tests ([`bounded`], [`bounded_by`], [`eventually`]);
//! - [`examples`]: building the examples, and a running `calculator`;
//! - [`process`]: child processes under a time limit, their output;
//! - [`node`]: the Node drivers in `tests/interop`;
//! - [`python`]: the Python drivers in `tests/interop`;
//! - [`servers`]: an `HttpServer` or `WsServer` on a free local port;
//! - [`raw_http`]: HTTP/1.1 written and read by hand;
//! - [`raw_ws`]: a WebSocket client written by hand, frame by frame;
//! - [`redis`]: a real `redis-server` as a child process, and a proxy that cuts it off;
//! - [`haproxy`]: a real HAProxy balancing replicas round robin, as a child process;
//! - [`tools`]: what a test does when an outside tool is missing (fails under CI, else skips);
//! - [`fixtures`]: methods several tests register;
//! - [`cancel`]: a method that never answers and reports its cancellation;
//! - [`logs`]: what a `tracing` subscriber writes, for a test to read;
//! - [`tls`]: certificates made for the run.

use std::future::Future;
use std::time::Duration;

pub mod cancel;
pub mod examples;
pub mod fixtures;
pub mod haproxy;
pub mod logs;
pub mod node;
pub mod process;
pub mod python;
pub mod raw_http;
pub mod raw_ws;
pub mod redis;
pub mod servers;
pub mod tls;
pub mod tools;

pub use examples::{build_examples, workspace_root};

/// How long [`bounded`] lets a test run; none needs more than a fraction of it.
pub const LIMIT: Duration = Duration::from_secs(60);

/// Runs `fut`, failing the test if it does not finish within [`LIMIT`].
pub async fn bounded<F: Future>(fut: F) -> F::Output {
    bounded_by(LIMIT, fut).await
}

/// Runs `fut`, failing the test if it does not finish within `limit` of the wall clock.
///
/// The limit is kept by a thread, not by a tokio timer: on a paused clock, tokio moves time on to
/// its next timer whenever no task can run, and a test waiting for bytes the kernel has not
/// delivered yet (loopback delivery is deferred under load) would then be failed at once, as if
/// it had hung.
pub async fn bounded_by<F: Future>(limit: Duration, fut: F) -> F::Output {
    let (expired, expiry) = tokio::sync::oneshot::channel::<()>();
    // Dropped when `fut` finishes (or the test fails), which ends the watchdog thread early.
    let (_finished, finish) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = finish.recv_timeout(limit) {
            let _ = expired.send(());
        }
    });
    tokio::select! {
        biased;
        output = fut => output,
        _ = expiry => panic!("the test hung: it did not finish within {limit:?}"),
    }
}

/// Polls `check` until it holds, within [`LIMIT`].
pub async fn eventually(mut check: impl FnMut() -> bool) {
    bounded(async {
        while !check() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}
