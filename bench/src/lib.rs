//! What the benchmark binaries share: a server child's lifetime, WebSocket connects, the
//! descriptor limit.

use std::time::Duration;

use tokio::io::AsyncReadExt as _;
use tokio::net::TcpStream;

/// A boxed error that crosses tasks.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A WebSocket client stream.
pub type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>;

/// Waits until standard input closes (the parent exited or let go) or `max` passes; a server
/// child serves until then.
pub async fn until_stdin_closes(max: Duration, name: &str) {
    let mut stdin = tokio::io::stdin();
    let mut buf = [0u8; 64];
    let closed = async {
        while let Ok(n) = stdin.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
    };
    tokio::select! {
        () = closed => {}
        () = tokio::time::sleep(max) => eprintln!("{name}: --max-seconds reached, exiting"),
    }
}

/// Opens a WebSocket to `url`, with Nagle off, within `limit`.
///
/// # Errors
///
/// When the connect or the handshake fails, or takes longer than `limit`.
pub async fn ws_connect(url: &str, limit: Duration) -> Result<Ws, BoxError> {
    let (ws, _) = tokio::time::timeout(
        limit,
        tokio_tungstenite::connect_async_with_config(url, None, true),
    )
    .await
    .map_err(|_| "WebSocket connect timed out")??;
    Ok(ws)
}

/// Raises the soft limit on open files to `wanted` (within the hard limit), for thousands of
/// sockets.
pub fn raise_nofile(wanted: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < wanted {
            limit.rlim_cur = wanted.min(limit.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}
