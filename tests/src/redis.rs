//! A real `redis-server` for the tests: started as a child on a free port, killed by its PID,
//! started again on the same port; a cuttable TCP proxy in front of it; a few raw commands.
//!
//! `.ci/run` installs `redis-server`. Where it is missing a test fails under CI and is skipped
//! elsewhere ([`tools::require`](crate::tools::require)).

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

/// How long `redis-server` may take to answer its first `PING`.
const START_LIMIT: Duration = Duration::from_secs(20);

/// A `redis-server` child on a port of 127.0.0.1; killed on drop.
pub struct RedisServer {
    child: Option<Child>,
    /// The port it listens on (kept across restarts).
    pub port: u16,
}

impl RedisServer {
    /// Starts `redis-server` on a free port and waits until it answers `PING`; `None`, with a
    /// message on stderr, where `redis-server` is not installed (and not under CI).
    ///
    /// # Panics
    ///
    /// When it is missing under CI, or does not answer in time.
    pub fn start(test: &str) -> Option<RedisServer> {
        let found = Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
            .then_some(())
            .ok_or_else(|| {
                "redis-server is not installed (apt-get install -y redis-server)".to_owned()
            });
        crate::tools::require(test, found)?;
        let port = free_port();
        let mut server = RedisServer { child: None, port };
        server.restart();
        Some(server)
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Kills the server by its PID (`SIGKILL`: no goodbye to its clients) and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server (again) on its port, with nothing persisted, and waits for `PING`.
    ///
    /// # Panics
    ///
    /// When it cannot start or does not answer in time.
    pub fn restart(&mut self) {
        self.kill();
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|err| panic!("could not start redis-server: {err}"));
        self.child = Some(child);
        let deadline = Instant::now() + START_LIMIT;
        while command(self.port, &["PING"]).as_deref() != Some("+PONG") {
            assert!(
                Instant::now() < deadline,
                "redis-server did not answer PING within {START_LIMIT:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Returns how many times Redis ran `command` since it started (`INFO commandstats`, lowercase
    /// names: `evalsha`, `script|load`); 0 for one it never ran, `None` if it did not answer.
    pub fn calls(&self, command_name: &str) -> Option<u64> {
        let stats = command(self.port, &["INFO", "commandstats"])?;
        let prefix = format!("cmdstat_{command_name}:calls=");
        Some(
            stats
                .lines()
                .find_map(|line| line.strip_prefix(&prefix)?.split(',').next()?.parse().ok())
                .unwrap_or(0),
        )
    }

    /// How many clients are subscribed to `channel` (`PUBSUB NUMSUB`); `None` if Redis did not
    /// answer.
    pub fn subscribers(&self, channel: &str) -> Option<u64> {
        // The answer is `*2 $len channel :count`: the count is the last line.
        let answer = command(self.port, &["PUBSUB", "NUMSUB", channel])?;
        answer.lines().last()?.strip_prefix(':')?.parse().ok()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A port of 127.0.0.1 that was free a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .unwrap_or_else(|err| panic!("no free port: {err}"))
}

/// Sends one command and reads its answer (a short wait at most), as text with `\r\n` made
/// `\n`; `None` when nothing could be sent or read.
fn command(port: u16, args: &[&str]) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .ok()?;
    let mut request = format!("*{}\r\n", args.len());
    for arg in args {
        request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
    }
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = Vec::new();
    let mut chunk = [0; 512];
    loop {
        let n = stream.read(&mut chunk).ok()?;
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&chunk[..n]);
        let whole = if answer.starts_with(b"*") {
            complete_array(&answer)
        } else if answer.starts_with(b"$") {
            complete_bulk(&answer)
        } else {
            answer.ends_with(b"\r\n")
        };
        if whole {
            break;
        }
    }
    (!answer.is_empty()).then(|| {
        String::from_utf8_lossy(&answer)
            .trim_end()
            .replace("\r\n", "\n")
    })
}

/// Returns whether a RESP bulk string (what `INFO` answers) is whole: its length's bytes and
/// `\r\n`.
fn complete_bulk(bytes: &[u8]) -> bool {
    let Some(head) = bytes.windows(2).position(|pair| pair == b"\r\n") else {
        return false;
    };
    let length = std::str::from_utf8(&bytes[1..head])
        .ok()
        .and_then(|length| length.parse::<usize>().ok());
    length.is_none_or(|length| bytes.len() >= head + 2 + length + 2)
}

/// Returns whether a RESP array of bulk strings and integers (what `PUBSUB NUMSUB` answers) is
/// whole.
fn complete_array(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    let mut lines = text.split("\r\n");
    let Some(count) = lines
        .next()
        .and_then(|l| l.strip_prefix('*')?.parse::<usize>().ok())
    else {
        return true;
    };
    let mut seen = 0;
    while seen < count {
        match lines.next() {
            Some(line) if line.starts_with('$') => {
                if lines.next().is_none() {
                    return false;
                }
            }
            Some(line) if line.starts_with(':') => {}
            _ => return false,
        }
        seen += 1;
    }
    lines.next() == Some("")
}

/// A TCP proxy on a free port of 127.0.0.1 in front of a Redis: [`cut`](Proxy::cut) drops every
/// connection through it and refuses new ones (Redis is unreachable for its clients, and up for
/// everyone else) until [`restore`](Proxy::restore).
pub struct Proxy {
    /// The port clients connect to.
    pub port: u16,
    open: Arc<watch::Sender<bool>>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Starts forwarding to 127.0.0.1:`target`.
    pub async fn start(target: u16) -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let open = Arc::new(watch::Sender::new(true));
        let state = Arc::clone(&open);
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut client, _)) = listener.accept().await else {
                    continue;
                };
                let mut open = state.subscribe();
                if !*open.borrow_and_update() {
                    drop(client);
                    continue;
                }
                tokio::spawn(async move {
                    let Ok(mut upstream) =
                        tokio::net::TcpStream::connect(("127.0.0.1", target)).await
                    else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut upstream) => {}
                        _ = open.wait_for(|open| !*open) => {}
                    }
                });
            }
        });
        Proxy { port, open, task }
    }

    /// `redis://127.0.0.1:PORT` through the proxy.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Drops every connection through the proxy and refuses new ones.
    pub fn cut(&self) {
        self.open.send_replace(false);
    }

    /// Accepts connections again.
    pub fn restore(&self) {
        self.open.send_replace(true);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}
