//! What both of the gate's servers run in: a tokio runtime with one worker thread, a listener on
//! a free port of 127.0.0.1 (`listening PORT` printed), served until standard input closes.

use std::io::Write as _;

use tokio::io::AsyncReadExt as _;
use tokio::net::TcpListener;

pub type Result<T, E = Box<dyn std::error::Error + Send + Sync>> = std::result::Result<T, E>;

/// The bearer token of the `jrpc-auth` server, which `jrpc-gate client ... --token` sends.
#[allow(dead_code, reason = "the floor's server has no use for it")]
pub const TOKEN: &str = "gate-token-0123456789abcdef";

/// Runs `serve` on the listener, then waits for standard input to close and exits.
pub fn serve_until_stdin_closes(serve: impl FnOnce(TcpListener) -> Result<()>) -> Result<()> {
    // One worker: a second one would take some of the wake-ups, which ones by timing.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        serve(listener)?;
        println!("listening {port}");
        std::io::stdout().flush()?;
        let mut stdin = tokio::io::stdin();
        let mut buf = [0u8; 64];
        while stdin.read(&mut buf).await? > 0 {}
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    })?;
    // The runtime's blocking stdin reader would keep a graceful shutdown waiting.
    std::process::exit(0)
}
