//! What both of the gate's servers run in: a tokio runtime with one worker thread, a listener on
//! a free port of 127.0.0.1 (`listening PORT` printed), served until standard input closes. A
//! fan-out server has a second listener, its control (`listening PORT CONTROL`): each byte a
//! client writes there publishes one header.

use std::io::Write as _;

use tokio::io::AsyncReadExt as _;
use tokio::net::TcpListener;

/// Publishes the next header, numbered from 1: what a byte on the control connection does.
pub type Publish = Box<dyn FnMut() + Send>;

pub type Result<T, E = Box<dyn std::error::Error + Send + Sync>> = std::result::Result<T, E>;

/// The bearer token of the `jrpc-auth` server, which `jrpc-gate client ... --token` sends.
#[allow(dead_code, reason = "the floor's server has no use for it")]
pub const TOKEN: &str = "gate-token-0123456789abcdef";

/// Runs `serve` on the listener, then waits for standard input to close and exits.
pub fn serve_until_stdin_closes(serve: impl FnOnce(TcpListener) -> Result<()>) -> Result<()> {
    serve_publishing_until_stdin_closes(|listener| serve(listener).map(|()| None))
}

/// Runs `serve` on the listener, and its publisher (if it returns one) on a control listener,
/// then waits for standard input to close and exits.
pub fn serve_publishing_until_stdin_closes(
    serve: impl FnOnce(TcpListener) -> Result<Option<Publish>>,
) -> Result<()> {
    // One worker: a second one would take some of the wake-ups, which ones by timing.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        match serve(listener)? {
            None => println!("listening {port}"),
            Some(publish) => {
                let control = TcpListener::bind("127.0.0.1:0").await?;
                println!("listening {port} {}", control.local_addr()?.port());
                tokio::spawn(publisher(control, publish));
            }
        }
        std::io::stdout().flush()?;
        let mut stdin = tokio::io::stdin();
        let mut buf = [0u8; 64];
        while stdin.read(&mut buf).await? > 0 {}
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    })?;
    // The runtime's blocking stdin reader would keep a graceful shutdown waiting.
    std::process::exit(0)
}

/// Publishes one header for each byte the control connection brings, in the server's runtime.
async fn publisher(control: TcpListener, mut publish: Publish) {
    let Ok((mut stream, _)) = control.accept().await else {
        return;
    };
    let mut bytes = [0u8; 64];
    while let Ok(n @ 1..) = stream.read(&mut bytes).await {
        for _ in 0..n {
            publish();
        }
    }
}
