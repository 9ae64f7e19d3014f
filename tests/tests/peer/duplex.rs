//! Peers on the two ends of a `tokio::io::duplex`, for the modules of this binary that test
//! the two-way `Peer` in memory: a second `Peer` on the other end, or a hand-driven end
//! ([`RawLines`], [`RawLsp`]) where the exact bytes on the wire matter; and handlers that report
//! what happens to them ([`hold`], [`hang`]).
//!
//! Every test runs under [`bounded`], which fails it rather than let it hang, and none asserts
//! how fast anything is: where a test needs a handler to still be running, a gate holds it.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use jrpc_runtime::{Caller as _, ClientError, Framing, Methods, Peer, PeerConfig, RpcError};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::{
    AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream, ReadHalf,
    WriteHalf,
};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinHandle;

/// Longer than any test needs; reaching it means the test hung.
const LIMIT: Duration = Duration::from_secs(20);
/// A call timeout or drain budget that passes quickly.
pub(crate) const SHORT: Duration = Duration::from_millis(50);

/// Runs a test body, failing it if it does not finish within [`LIMIT`].
pub(crate) async fn bounded<T>(test: impl Future<Output = T>) -> T {
    jrpc_tests::bounded_by(LIMIT, test).await
}

/// One end of a connection: the handle and its spawned loop.
pub(crate) struct Side {
    pub(crate) peer: Peer,
    pub(crate) driver: JoinHandle<std::io::Result<()>>,
}

/// A peer serving `methods` on `io` in `framing`, its loop spawned.
pub(crate) fn side(
    io: DuplexStream,
    framing: Framing,
    methods: Methods,
    config: PeerConfig,
) -> Side {
    let (peer, driver) = Peer::connect(io, methods, config.with_framing(framing));
    Side {
        peer,
        driver: tokio::spawn(driver),
    }
}

/// Two peers on the two ends of one in-memory stream.
pub(crate) fn pair(
    framing: Framing,
    a: (Methods, PeerConfig),
    b: (Methods, PeerConfig),
) -> (Side, Side) {
    let (x, y) = tokio::io::duplex(64 * 1024);
    (side(x, framing, a.0, a.1), side(y, framing, b.0, b.1))
}

/// A [`pair`], one message a line, with default settings: `a` only calls, `b` serves `methods`.
pub(crate) fn calling(methods: Methods) -> (Side, Side) {
    pair(
        Framing::Lines,
        (Methods::new(), PeerConfig::default()),
        (methods, PeerConfig::default()),
    )
}

/// `peer.call(method, ())` on a task of its own, for a call that is to be held or dropped.
pub(crate) fn spawn_call<T: DeserializeOwned + Send + 'static>(
    peer: &Peer,
    method: &'static str,
) -> JoinHandle<Result<T, ClientError>> {
    let peer = peer.clone();
    tokio::spawn(async move { peer.call::<T>(method, ()).await })
}

/// The end of a connection driven by hand, one JSON message a line.
pub(crate) struct RawLines {
    pub(crate) reader: BufReader<ReadHalf<DuplexStream>>,
    pub(crate) writer: WriteHalf<DuplexStream>,
}

impl RawLines {
    pub(crate) async fn send(&mut self, text: &str) {
        self.writer.write_all(text.as_bytes()).await.unwrap();
        self.writer.write_all(b"\n").await.unwrap();
    }

    pub(crate) async fn send_json(&mut self, message: Value) {
        self.send(&message.to_string()).await;
    }

    /// The next message; `None` at the end of the stream.
    pub(crate) async fn next(&mut self) -> Option<Value> {
        let mut line = String::new();
        let n = self.reader.read_line(&mut line).await.unwrap();
        (n > 0).then(|| serde_json::from_str(&line).unwrap())
    }

    pub(crate) async fn recv(&mut self) -> Value {
        self.next().await.expect("the connection ended")
    }
}

/// The end of a connection driven by hand, with `Content-Length` framing.
pub(crate) struct RawLsp {
    pub(crate) reader: BufReader<ReadHalf<DuplexStream>>,
    pub(crate) writer: WriteHalf<DuplexStream>,
}

impl RawLsp {
    pub(crate) async fn send_bytes(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.unwrap();
    }

    pub(crate) async fn send_json(&mut self, message: Value) {
        let body = message.to_string();
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        self.send_bytes(frame.as_bytes()).await;
    }

    /// The next message; `None` at the end of the stream.
    pub(crate) async fn next(&mut self) -> Option<Value> {
        let mut len = None;
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line).await.unwrap() == 0 {
                return None;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').expect("a header line");
            if name.eq_ignore_ascii_case("content-length") {
                len = Some(value.trim().parse::<usize>().unwrap());
            }
        }
        let mut body = vec![0; len.expect("a Content-Length header")];
        self.reader.read_exact(&mut body).await.unwrap();
        Some(serde_json::from_slice(&body).unwrap())
    }

    pub(crate) async fn recv(&mut self) -> Value {
        self.next().await.expect("the connection ended")
    }
}

/// A peer serving `methods`, and the raw lines end that talks to it.
pub(crate) fn lines_peer(methods: Methods, config: PeerConfig) -> (Side, RawLines) {
    narrow_lines_peer(methods, config, 64 * 1024)
}

/// Does what [`lines_peer`] does over a pipe that holds `capacity` bytes each way.
pub(crate) fn narrow_lines_peer(
    methods: Methods,
    config: PeerConfig,
    capacity: usize,
) -> (Side, RawLines) {
    let (x, y) = tokio::io::duplex(capacity);
    let (read, writer) = tokio::io::split(y);
    let raw = RawLines {
        reader: BufReader::new(read),
        writer,
    };
    (side(x, Framing::Lines, methods, config), raw)
}

/// A peer serving `methods` with `Content-Length` framing, and the raw end that talks to it.
pub(crate) fn lsp_peer(methods: Methods, config: PeerConfig) -> (Side, RawLsp) {
    let (x, y) = tokio::io::duplex(64 * 1024);
    let (read, writer) = tokio::io::split(y);
    let raw = RawLsp {
        reader: BufReader::new(read),
        writer,
    };
    (side(x, Framing::ContentLength, methods, config), raw)
}

/// What handlers report, in order: `"started"`, `"dropped"`, log lines.
pub(crate) type Events = mpsc::UnboundedSender<String>;

pub(crate) fn events() -> (Events, mpsc::UnboundedReceiver<String>) {
    mpsc::unbounded_channel()
}

/// Held by a handler: reports `"dropped"` when the handler's future is dropped (cancelled, or
/// finished).
pub(crate) struct DropGuard(pub(crate) Events);

impl Drop for DropGuard {
    fn drop(&mut self) {
        let _ = self.0.send("dropped".to_owned());
    }
}

/// `hold`: reports `"started"`, holds a [`DropGuard`], and answers `"released"` once `gate` gives
/// it a permit.
pub(crate) fn hold(methods: &mut Methods, events: &Events, gate: &Arc<Semaphore>) {
    let (events, gate) = (events.clone(), Arc::clone(gate));
    methods
        .register("hold", &[], move |(): (), _ctx| {
            let (events, gate) = (events.clone(), Arc::clone(&gate));
            async move {
                let _guard = DropGuard(events.clone());
                let _ = events.send("started".to_owned());
                gate.acquire().await.unwrap().forget();
                Ok::<_, RpcError>("released")
            }
        })
        .unwrap();
}

/// Methods with only [`hold`], the gate that lets it answer, and the events it reports.
pub(crate) fn holding() -> (Methods, Arc<Semaphore>, mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = events();
    let gate = Arc::new(Semaphore::new(0));
    let mut methods = Methods::new();
    hold(&mut methods, &tx, &gate);
    (methods, gate, rx)
}

/// `hang`: never answers.
pub(crate) fn hang(methods: &mut Methods) {
    methods
        .register("hang", &[], |(): (), _ctx| async {
            std::future::pending::<()>().await;
            Ok::<_, RpcError>(())
        })
        .unwrap();
}

pub(crate) fn code_of(err: &ClientError) -> i32 {
    match err {
        ClientError::Failed(err) => err.code().code(),
        other => panic!("expected an error answer, got {other:?}"),
    }
}
