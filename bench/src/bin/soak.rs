//! Soak run: starts the `calculator` example and drives it, over 127.0.0.1 only, with a mix of
//! well-behaved and hostile clients for a bounded time; reports the server's peak RSS, its RSS at
//! the end, the calls answered and the calls lost. Before the mix it measures, each on a fresh
//! server, what one WebSocket and one HTTP client that never read make the server hold. With
//! `--only defaults` it measures instead, at the calculator's defaults, 1, 100 and 1 000
//! clients that ask for 4 MiB answers and never read: the server's peak RSS against its byte
//! budget, when each is cut, and whether a well-behaved client was refused meanwhile.
//!
//! ```text
//! cargo run --release --bin soak -- [--seconds N] [--calculator PATH]
//!                                    [--only nonreaders|mix|defaults] [--message-bytes B]
//!                                    [--transport websocket|http] [--clients 1,100,1000]
//! ```

use std::error::Error;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

type Result<T> = std::result::Result<T, Box<dyn Error + Send + Sync>>;

/// The longest any one step may take (a connect, a call, a read).
const STEP: Duration = Duration::from_secs(10);

/// How long a well-behaved call may wait while non-readers hold the server's budget: longer than
/// the default `write_timeout` (30 s), after which they are cut and the budget frees.
const WAIT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------------------------

struct Calculator {
    child: Child,
    addr: String,
}

impl Calculator {
    fn start(exe: &Path) -> Result<Calculator> {
        let mut child = Command::new(exe)
            .args(["--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut stdout = BufReader::new(stdout);
        let mut line = String::new();
        stdout.read_line(&mut line)?;
        std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .ok_or_else(|| format!("unexpected first line {line:?}"))?
            .to_owned();
        Ok(Calculator { child, addr })
    }

    /// A field of `/proc/PID/status`, in KiB.
    fn status_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    fn rss_kib(&self) -> u64 {
        self.status_kib("VmRSS:")
    }

    /// Ctrl-C, then the exit code (within 60 s).
    fn interrupt(mut self) -> Option<i32> {
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        None
    }
}

impl Drop for Calculator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Builds the calculator (release) in the workspace next to this crate; returns its path.
fn build_calculator() -> Result<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("no workspace")?;
    let output = Command::new(env!("CARGO"))
        .current_dir(root)
        .args([
            "build",
            "-q",
            "--release",
            "--message-format=json",
            "-p",
            "jrpc-examples",
            "--example",
            "calculator",
        ])
        .stderr(Stdio::inherit())
        .output()?;
    if !output.status.success() {
        return Err("building the calculator failed".into());
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|m| m["target"]["name"] == "calculator" && m["executable"].is_string())
        .and_then(|m| m["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| "cargo did not report the calculator".into())
}

/// Samples the server's RSS every 20 ms until `stop`; returns the highest seen (KiB).
fn sample_peak(server: &Calculator, stop: &AtomicBool) -> u64 {
    let mut peak = 0;
    while !stop.load(Ordering::Relaxed) {
        peak = peak.max(server.rss_kib());
        std::thread::sleep(Duration::from_millis(20));
    }
    peak.max(server.rss_kib())
}

// ---------------------------------------------------------------------------------------------
// Raw clients: a WebSocket written by hand (to never read), HTTP/1.1 by hand
// ---------------------------------------------------------------------------------------------

/// Opens a WebSocket on `/ws` and reads the `101`; nothing else is read.
async fn raw_ws(addr: &str) -> Result<TcpStream> {
    let mut stream = TcpStream::connect(addr).await?;
    let request = format!(
        "GET /ws HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await?;
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(stream.read_u8().await?);
    }
    if !head.starts_with(b"HTTP/1.1 101") {
        return Err("upgrade refused".into());
    }
    Ok(stream)
}

/// A masked text frame.
fn text_frame(payload: &[u8]) -> Vec<u8> {
    let mut frame = vec![0x81];
    match payload.len() {
        n if n < 126 => frame.push(0x80 | n as u8),
        n if n <= 0xFFFF => {
            frame.push(0x80 | 126);
            frame.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            frame.push(0x80 | 127);
            frame.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    let mask = [0x12, 0x34, 0x56, 0x78];
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    frame
}

fn post(body: &str) -> Vec<u8> {
    format!(
        "POST /rpc HTTP/1.1\r\nhost: soak\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Reads one HTTP reply (head and a `content-length` body): its status and body.
async fn read_reply(stream: &mut TcpStream) -> Result<(u16, String)> {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(stream.read_u8().await?);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or("no status")?;
    let len = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0; len];
    stream.read_exact(&mut body).await?;
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

fn echo_call(id: u64, bytes: usize) -> String {
    json!({"jsonrpc": "2.0", "method": "echo", "params": ["x".repeat(bytes)], "id": id}).to_string()
}

// ---------------------------------------------------------------------------------------------
// One client that never reads, measured alone
// ---------------------------------------------------------------------------------------------

/// Starts a fresh server, runs one client against it that never reads, and returns the server's
/// RSS before, at its peak and at the end, in KiB, and how long the connection lasted.
fn measure_nonreader(
    exe: &Path,
    websocket: bool,
    bytes: usize,
) -> Result<(u64, u64, u64, Duration)> {
    let server = Calculator::start(exe)?;
    let runtime = tokio::runtime::Runtime::new()?;
    let addr = server.addr.clone();
    // One answered call first, so that what every connection shares is allocated.
    runtime.block_on(async {
        let mut stream = TcpStream::connect(&addr).await?;
        stream
            .write_all(&post(
                r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}"#,
            ))
            .await?;
        read_reply(&mut stream).await.map(drop)
    })?;
    std::thread::sleep(Duration::from_millis(300));
    let before = server.rss_kib();
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let lasted = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| sample_peak(&server, &stop));
        let lasted = runtime.block_on(async {
            // `bytes` a message (100 KB by default), answers for 1 000.
            let mut stream = if websocket {
                raw_ws(&addr).await?
            } else {
                TcpStream::connect(&addr).await?
            };
            let body = echo_call(1, bytes);
            let message = if websocket {
                text_frame(body.as_bytes())
            } else {
                post(&body)
            };
            // Writes stop being taken once the server stops reading; then only small ones are
            // sent, until the server has dropped the connection (a write fails) or 60 s pass.
            let writing = async {
                for _ in 0..1000 {
                    stream.write_all(&message).await?;
                }
                Ok::<_, std::io::Error>(())
            };
            let _ = tokio::time::timeout(Duration::from_secs(60), writing).await;
            let mut stream = stream;
            while started.elapsed() < Duration::from_secs(60) {
                let probe = if websocket {
                    text_frame(br#"{"jsonrpc":"2.0","method":"update","params":[1]}"#)
                } else {
                    b"\r\n".to_vec()
                };
                match tokio::time::timeout(Duration::from_millis(500), stream.write_all(&probe))
                    .await
                {
                    Ok(Err(_)) => break,
                    _ => tokio::time::sleep(Duration::from_millis(200)).await,
                }
            }
            Ok::<_, Box<dyn Error + Send + Sync>>(started.elapsed())
        });
        std::thread::sleep(Duration::from_millis(500));
        stop.store(true, Ordering::Relaxed);
        let peak = sampler.join().unwrap_or(0);
        lasted.map(|lasted| (peak, lasted))
    });
    let (peak, lasted) = lasted?;
    let end = server.rss_kib();
    Ok((before, peak, end, lasted))
}

// ---------------------------------------------------------------------------------------------
// Many clients that never read, at the defaults
// ---------------------------------------------------------------------------------------------

/// The calculator's default byte budget on this machine: a quarter of its memory, 64 MiB to
/// 1 GiB (what `jrpc_runtime` computes), in MiB.
fn default_budget_mib() -> u64 {
    let total_kib: u64 = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(4 << 20);
    (total_kib / 4 / 1024).clamp(64, 1024)
}

/// What [`measure_many`] saw.
struct Many {
    before: u64,
    peak: u64,
    /// Seconds from the start until each non-reader was dropped, in order.
    cuts: Vec<f64>,
    answered: u64,
    failed: u64,
    /// The longest a well-behaved call waited for its answer, in milliseconds.
    longest_wait: u64,
}

/// One client with a small receive window (so that the kernel does not take whole answers for
/// it) that sends `calls` twice and never reads; returns when the server dropped it (a write
/// failed), with the time since `start`.
async fn never_reads(
    addr: String,
    websocket: bool,
    call: Arc<Vec<u8>>,
    start: Instant,
) -> Option<f64> {
    let socket = tokio::net::TcpSocket::new_v4().ok()?;
    socket.set_recv_buffer_size(16 * 1024).ok()?;
    let mut stream = socket.connect(addr.parse().ok()?).await.ok()?;
    let probe = if websocket {
        let request = format!(
            "GET /ws HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            head.push(stream.read_u8().await.ok()?);
        }
        text_frame(br#"{"jsonrpc":"2.0","method":"update","params":[1]}"#)
    } else {
        b"\r\n".to_vec()
    };
    let deadline = start + Duration::from_secs(600);
    for _ in 0..2 {
        if stream.write_all(&call).await.is_err() {
            return Some(start.elapsed().as_secs_f64());
        }
    }
    while Instant::now() < deadline {
        if let Ok(Err(_)) =
            tokio::time::timeout(Duration::from_secs(1), stream.write_all(&probe)).await
        {
            return Some(start.elapsed().as_secs_f64());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// Starts a fresh calculator at its defaults; `clients` clients each ask for two echoes of
/// `bytes` and never read, while one well-behaved HTTP and one WebSocket client call `add` in a
/// loop (each call may wait up to [`WAIT`]) until every non-reader is dropped.
fn measure_many(exe: &Path, websocket: bool, clients: usize, bytes: usize) -> Result<Many> {
    let server = Calculator::start(exe)?;
    let runtime = tokio::runtime::Runtime::new()?;
    let addr = server.addr.clone();
    runtime.block_on(async {
        let mut stream = TcpStream::connect(&addr).await?;
        stream
            .write_all(&post(
                r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}"#,
            ))
            .await?;
        read_reply(&mut stream).await.map(drop)
    })?;
    std::thread::sleep(Duration::from_millis(300));
    let before = server.rss_kib();
    let stop = Arc::new(AtomicBool::new(false));
    let body = echo_call(1, bytes);
    let call = Arc::new(if websocket {
        text_frame(body.as_bytes())
    } else {
        post(&body)
    });
    let counts = Arc::new(Counts::default());
    let longest = Arc::new(AtomicU64::new(0));
    let (peak, cuts) = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| sample_peak(&server, &stop));
        let cuts = runtime.block_on(async {
            let start = Instant::now();
            let done = Arc::new(AtomicBool::new(false));
            let mut served = Vec::new();
            for ws in [false, true] {
                let (addr, counts, done) = (addr.clone(), Arc::clone(&counts), Arc::clone(&done));
                let longest = Arc::clone(&longest);
                served.push(tokio::spawn(async move {
                    let mut n = 0u64;
                    let mut socket = if ws { ws_connect(&addr).await.ok() } else { None };
                    let client = TcpStream::connect(&addr).await.ok();
                    let mut http = client;
                    while !done.load(Ordering::Relaxed) {
                        n += 1;
                        let (call, want) = one_of(n * 4);
                        let asked = Instant::now();
                        let ok = match (ws, socket.as_mut(), http.as_mut()) {
                            (true, Some(socket), _) => {
                                matches!(ws_call_within(socket, &call, WAIT).await,
                                    Ok(answer) if answer["result"] == want)
                            }
                            (false, _, Some(stream)) => {
                                let exchange = async {
                                    stream.write_all(&post(&call.to_string())).await?;
                                    read_reply(stream).await
                                };
                                matches!(tokio::time::timeout(WAIT, exchange).await,
                                    Ok(Ok((200, body))) if serde_json::from_str::<Value>(&body).is_ok_and(|a| a["result"] == want))
                            }
                            _ => false,
                        };
                        counts.tally(ok);
                        if !ok {
                            break;
                        }
                        let waited = u64::try_from(asked.elapsed().as_millis()).unwrap_or(u64::MAX);
                        longest.fetch_max(waited, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }));
            }
            let readers: Vec<_> = (0..clients)
                .map(|_| tokio::spawn(never_reads(addr.clone(), websocket, Arc::clone(&call), start)))
                .collect();
            let mut cuts = Vec::new();
            for reader in readers {
                if let Ok(Some(at)) = reader.await {
                    cuts.push(at);
                }
            }
            done.store(true, Ordering::Relaxed);
            for task in served {
                let _ = tokio::time::timeout(Duration::from_secs(70), task).await;
            }
            cuts
        });
        stop.store(true, Ordering::Relaxed);
        (sampler.join().unwrap_or(0), cuts)
    });
    let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let mut cuts = cuts;
    cuts.sort_by(f64::total_cmp);
    Ok(Many {
        before,
        peak: peak.max(server.status_kib("VmHWM:")),
        cuts,
        answered: get(&counts.answered),
        failed: get(&counts.lost),
        longest_wait: get(&longest),
    })
}

/// The rows of `--only defaults`: over `transport` (`websocket` or `http`; both unless named),
/// for each count of `clients`.
fn defaults(exe: &Path, transport: Option<&str>, clients: &[usize]) -> Result<()> {
    let bytes = 4 * 1024 * 1024;
    println!(
        "clients asking for two 4 MiB echoes each and never reading, at the defaults (budget {} MiB, write_timeout 30 s):",
        default_budget_mib()
    );
    for (name, websocket) in [("WebSocket", true), ("HTTP", false)] {
        if transport.is_some_and(|only| !only.eq_ignore_ascii_case(name)) {
            continue;
        }
        for &clients in clients {
            let many = measure_many(exe, websocket, clients, bytes)?;
            let (first, last) = (
                many.cuts.first().copied().unwrap_or(f64::NAN),
                many.cuts.last().copied().unwrap_or(f64::NAN),
            );
            println!(
                "  {name}, {clients}: RSS {} MiB before, peak {} MiB (+{} MiB); {} of {clients} cut, the first after {first:.1} s, the last after {last:.1} s; well-behaved calls answered {}, refused or lost {}, the longest waited {:.1} s",
                many.before / 1024,
                many.peak / 1024,
                many.peak.saturating_sub(many.before) / 1024,
                many.cuts.len(),
                many.answered,
                many.failed,
                many.longest_wait as f64 / 1000.0
            );
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The mix
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct Counts {
    /// Calls of well-behaved clients answered correctly.
    answered: AtomicU64,
    /// Calls of well-behaved clients that got no answer, or a wrong one.
    lost: AtomicU64,
    /// Oversize messages and malformed bodies refused as documented.
    refused: AtomicU64,
    /// Connections of clients that never read, dropped by the server.
    cut: AtomicU64,
    /// Connections opened and closed by the churn clients.
    churned: AtomicU64,
}

impl Counts {
    fn tally(&self, ok: bool) {
        if ok {
            self.answered.fetch_add(1, Ordering::Relaxed);
        } else {
            self.lost.fetch_add(1, Ordering::Relaxed);
        }
    }
}

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>;

async fn ws_connect(addr: &str) -> Result<Ws> {
    let url = format!("ws://{addr}/ws");
    let (ws, _) = tokio::time::timeout(STEP, tokio_tungstenite::connect_async(url)).await??;
    Ok(ws)
}

/// Sends `call` and reads its answer (skipping anything else), within [`STEP`].
async fn ws_call(ws: &mut Ws, call: &Value) -> Result<Value> {
    ws_call_within(ws, call, STEP).await
}

/// [`ws_call`], its answer waited for up to `within`.
async fn ws_call_within(ws: &mut Ws, call: &Value, within: Duration) -> Result<Value> {
    ws.send(Message::text(call.to_string())).await?;
    tokio::time::timeout(within, async {
        while let Some(message) = ws.next().await {
            if let Message::Text(text) = message? {
                let answer: Value = serde_json::from_str(&text)?;
                if answer["id"] == call["id"] {
                    return Ok(answer);
                }
            }
        }
        Err("closed".into())
    })
    .await?
}

/// A call and what its answer's `result` must be.
fn one_of(n: u64) -> (Value, Value) {
    match n % 4 {
        0 => (
            json!({"jsonrpc": "2.0", "method": "add", "params": [n, 1], "id": n}),
            json!(n + 1),
        ),
        1 => (
            json!({"jsonrpc": "2.0", "method": "sum", "params": [1, 2, n], "id": n}),
            json!(n + 3),
        ),
        2 => (
            json!({"jsonrpc": "2.0", "method": "get_data", "id": n}),
            json!(["hello", 5]),
        ),
        _ => (
            json!({"jsonrpc": "2.0", "method": "echo", "params": {"n": n}, "id": n}),
            json!({"n": n}),
        ),
    }
}

/// Well-behaved WebSocket callers, one call at a time; `pause` between reading answers makes a
/// slow reader, `bytes` the size of each echo (0: the small mix).
async fn ws_caller(
    addr: String,
    until: Instant,
    counts: Arc<Counts>,
    pause: Duration,
    bytes: usize,
) {
    let mut n = 0u64;
    while Instant::now() < until {
        let Ok(mut ws) = ws_connect(&addr).await else {
            counts.tally(false);
            continue;
        };
        while Instant::now() < until {
            n += 1;
            let (call, want) = if bytes > 0 {
                let params = "y".repeat(bytes);
                (
                    json!({"jsonrpc": "2.0", "method": "echo", "params": [params], "id": n}),
                    json!([params]),
                )
            } else {
                one_of(n)
            };
            match ws_call(&mut ws, &call).await {
                Ok(answer) => counts.tally(answer["result"] == want),
                Err(_) => {
                    counts.tally(false);
                    break;
                }
            }
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
        }
    }
}

/// A well-behaved HTTP caller on one keep-alive connection.
async fn http_caller(addr: String, until: Instant, counts: Arc<Counts>) {
    let mut n = 0u64;
    while Instant::now() < until {
        let Ok(Ok(mut stream)) = tokio::time::timeout(STEP, TcpStream::connect(&addr)).await else {
            counts.tally(false);
            continue;
        };
        while Instant::now() < until {
            n += 1;
            let (call, want) = one_of(n);
            let exchange = async {
                stream.write_all(&post(&call.to_string())).await?;
                read_reply(&mut stream).await
            };
            match tokio::time::timeout(STEP, exchange).await {
                Ok(Ok((200, body))) => {
                    let answer: Value = serde_json::from_str(&body).unwrap_or_default();
                    counts.tally(answer["result"] == want && answer["id"] == call["id"]);
                }
                _ => {
                    counts.tally(false);
                    break;
                }
            }
        }
    }
}

/// A client that sends calls for `answers` echoes of 100 KB and never reads: over WebSocket or
/// HTTP (pipelined). Once the server stops taking its writes it only probes, until a write fails
/// (the server dropped it), then comes back.
async fn non_reader(addr: String, until: Instant, counts: Arc<Counts>, websocket: bool) {
    let body = echo_call(1, 100_000);
    let message = if websocket {
        text_frame(body.as_bytes())
    } else {
        post(&body)
    };
    while Instant::now() < until {
        let stream = if websocket {
            raw_ws(&addr).await.ok()
        } else {
            TcpStream::connect(&addr).await.ok()
        };
        let Some(mut stream) = stream else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let writing = async {
            for _ in 0..200 {
                stream.write_all(&message).await?;
            }
            Ok::<_, std::io::Error>(())
        };
        let _ = tokio::time::timeout_at(until.into(), writing).await;
        loop {
            if Instant::now() >= until {
                return;
            }
            let probe = if websocket {
                text_frame(br#"{"jsonrpc":"2.0","method":"update","params":[1]}"#)
            } else {
                b"\r\n".to_vec()
            };
            if let Ok(Err(_)) =
                tokio::time::timeout(Duration::from_millis(500), stream.write_all(&probe)).await
            {
                counts.cut.fetch_add(1, Ordering::Relaxed);
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Messages over the cap (an 11 MB WebSocket frame: close 1009; an 11 MB body: `413`) and
/// malformed ones (not JSON: `-32700`; not a request: `-32600`), each refused as documented.
async fn hostile_messages(addr: String, until: Instant, counts: Arc<Counts>) {
    let oversize = echo_call(1, 11_000_000);
    while Instant::now() < until {
        let refused = async {
            let mut ws = ws_connect(&addr).await?;
            ws.send(Message::text("not json")).await?;
            let Some(Ok(Message::Text(a))) = ws.next().await else {
                return Err::<bool, Box<dyn Error + Send + Sync>>("no answer".into());
            };
            let a: Value = serde_json::from_str(&a)?;
            ws.send(Message::text(r#"{"jsonrpc":"2.0","id":7}"#))
                .await?;
            let Some(Ok(Message::Text(b))) = ws.next().await else {
                return Err("no answer".into());
            };
            let b: Value = serde_json::from_str(&b)?;
            ws.send(Message::text(oversize.clone())).await?;
            let mut code = None;
            while let Some(Ok(message)) = ws.next().await {
                if let Message::Close(Some(frame)) = message {
                    code = Some(u16::from(frame.code));
                }
            }
            let mut stream = TcpStream::connect(&addr).await?;
            stream.write_all(&post(&oversize)).await?;
            let (status, _) = read_reply(&mut stream).await?;
            let mut stream = TcpStream::connect(&addr).await?;
            stream.write_all(&post("{")).await?;
            let (_, body) = read_reply(&mut stream).await?;
            let c: Value = serde_json::from_str(&body)?;
            Ok(a["error"]["code"] == -32700
                && b["error"]["code"] == -32600
                && b["id"] == 7
                && code == Some(1009)
                && status == 413
                && c["error"]["code"] == -32700)
        };
        match tokio::time::timeout(STEP, refused).await {
            Ok(Ok(true)) => {
                counts.refused.fetch_add(1, Ordering::Relaxed);
            }
            // A refusal that did not come as documented counts as a lost call.
            _ => counts.tally(false),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Connects, makes one call, disconnects: WebSocket and HTTP (`connection: close`) in turn.
async fn churn(addr: String, until: Instant, counts: Arc<Counts>) {
    let mut n = 0u64;
    while Instant::now() < until {
        n += 1;
        let (call, want) = one_of(n);
        let ok = if n.is_multiple_of(2) {
            match ws_connect(&addr).await {
                Ok(mut ws) => {
                    let ok = ws_call(&mut ws, &call)
                        .await
                        .is_ok_and(|a| a["result"] == want);
                    let _ = ws.close(None).await;
                    ok
                }
                Err(_) => false,
            }
        } else {
            let exchange = async {
                let mut stream = TcpStream::connect(&addr).await?;
                let body = call.to_string();
                let request = format!(
                    "POST /rpc HTTP/1.1\r\nhost: soak\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
                stream.write_all(request.as_bytes()).await?;
                read_reply(&mut stream).await
            };
            matches!(tokio::time::timeout(STEP, exchange).await, Ok(Ok((200, body)))
                if serde_json::from_str::<Value>(&body).is_ok_and(|a| a["result"] == want))
        };
        counts.tally(ok);
        counts.churned.fetch_add(1, Ordering::Relaxed);
    }
}

fn mix(exe: &Path, seconds: u64) -> Result<()> {
    let server = Calculator::start(exe)?;
    let before = server.rss_kib();
    let counts = Arc::new(Counts::default());
    let stop = Arc::new(AtomicBool::new(false));
    let runtime = tokio::runtime::Runtime::new()?;
    let until = Instant::now() + Duration::from_secs(seconds);
    let peak = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| sample_peak(&server, &stop));
        runtime.block_on(async {
            let mut tasks = Vec::new();
            let addr = &server.addr;
            for _ in 0..8 {
                tasks.push(tokio::spawn(ws_caller(
                    addr.clone(),
                    until,
                    Arc::clone(&counts),
                    Duration::ZERO,
                    0,
                )));
            }
            for _ in 0..4 {
                tasks.push(tokio::spawn(http_caller(
                    addr.clone(),
                    until,
                    Arc::clone(&counts),
                )));
            }
            for _ in 0..2 {
                // Slow readers: 50 KB answers, read one every 100 ms.
                tasks.push(tokio::spawn(ws_caller(
                    addr.clone(),
                    until,
                    Arc::clone(&counts),
                    Duration::from_millis(100),
                    50_000,
                )));
            }
            for websocket in [true, false] {
                tasks.push(tokio::spawn(non_reader(
                    addr.clone(),
                    until,
                    Arc::clone(&counts),
                    websocket,
                )));
            }
            tasks.push(tokio::spawn(hostile_messages(
                addr.clone(),
                until,
                Arc::clone(&counts),
            )));
            for _ in 0..2 {
                tasks.push(tokio::spawn(churn(
                    addr.clone(),
                    until,
                    Arc::clone(&counts),
                )));
            }
            for task in tasks {
                let _ = tokio::time::timeout(Duration::from_secs(30), task).await;
            }
        });
        stop.store(true, Ordering::Relaxed);
        sampler.join().unwrap_or(0)
    });
    drop(runtime);
    std::thread::sleep(Duration::from_secs(1));
    let end = server.rss_kib();
    let hwm = server.status_kib("VmHWM:");
    let code = server.interrupt();
    let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
    println!("mix of {seconds} s:");
    println!(
        "  server RSS: {before} KiB at start, peak {} KiB (VmHWM {hwm} KiB), {end} KiB at the end",
        peak.max(hwm)
    );
    println!(
        "  calls answered {}, calls lost {}; refusals as documented {}; non-reading connections cut {}; connections churned {}",
        get(&counts.answered),
        get(&counts.lost),
        get(&counts.refused),
        get(&counts.cut),
        get(&counts.churned)
    );
    println!("  exit status after Ctrl-C: {code:?}");
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|at| args.get(at + 1))
            .cloned()
    };
    let seconds: u64 = value("--seconds").map_or(Ok(60), |s| s.parse())?;
    if seconds == 0 || seconds > 3600 {
        return Err("--seconds takes 1 to 3600".into());
    }
    let exe = match value("--calculator") {
        Some(path) => PathBuf::from(path),
        None => build_calculator()?,
    };
    let only = value("--only");
    if only.as_deref() == Some("defaults") {
        let clients = match value("--clients") {
            None => vec![1, 100, 1000],
            Some(list) => list
                .split(',')
                .map(str::parse)
                .collect::<std::result::Result<_, _>>()?,
        };
        return defaults(&exe, value("--transport").as_deref(), &clients);
    }
    let bytes: usize = value("--message-bytes").map_or(Ok(100_000), |s| s.parse())?;
    if bytes > 10_000_000 {
        return Err("--message-bytes must stay under the default cap of 10 MiB".into());
    }
    if only.as_deref() != Some("mix") {
        for (name, websocket) in [("WebSocket", true), ("HTTP", false)] {
            let (before, peak, end, lasted) = measure_nonreader(&exe, websocket, bytes)?;
            println!(
                "one {name} client that never reads ({bytes}-byte echo calls): server RSS {before} KiB before, peak {peak} KiB (+{} KiB), {end} KiB at the end; connection dropped after {:.1} s",
                peak.saturating_sub(before),
                lasted.as_secs_f64()
            );
        }
    }
    if only.as_deref() != Some("nonreaders") {
        mix(&exe, seconds)?;
    }
    Ok(())
}
