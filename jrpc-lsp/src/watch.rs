//! Watches the editor's process: a server whose client died without closing its pipes (killed,
//! crashed) would otherwise run on, so the protocol asks it to exit when the process `initialize`
//! named (`processId`) is gone.
//!
//! It checks every few seconds whether the process still exists (`kill(pid, 0)` on Unix; ESRCH
//! means gone, EPERM means it exists under another user), as vscode-languageserver does every
//! 3 s. A process id that cannot be checked (not Unix, or out of range) is taken as alive. A
//! client in another PID namespace (an editor outside the server's container) names a process the
//! server cannot see: turn the watch off there ([`LspServer::watch_client`]).
//!
//! [`LspServer::watch_client`]: crate::LspServer::watch_client

use std::time::Duration;

use tokio::time::MissedTickBehavior;

use crate::session::Session;

/// Resolves once the client's process, known from `initialize`, is gone; never before
/// `initialize`, nor when it named none.
pub(crate) async fn client_gone(session: &Session, every: Duration) {
    let pid = session.client_process().await;
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        if !alive(pid) {
            tracing::info!(pid, "the client's process is gone");
            return;
        }
    }
}

/// Returns whether process `pid` exists.
#[cfg(unix)]
fn alive(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return true;
    };
    match rustix::process::test_kill_process(pid) {
        Ok(()) => true,
        Err(err) => err != rustix::io::Errno::SRCH,
    }
}

/// Returns `true`: there is no check here.
#[cfg(not(unix))]
fn alive(_pid: u32) -> bool {
    true
}

#[cfg(all(test, unix))]
mod tests {
    use super::alive;

    #[test]
    fn this_process_is_alive_and_a_reaped_child_is_not() {
        assert!(alive(std::process::id()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!alive(pid));
    }
}
