//! What the benchmark binaries share: a server child ([`ServerChild`]) and its lifetime,
//! WebSocket connects, CPU time from `/proc`, the descriptor limit, the system-wide clock, and the
//! fan-out benchmark's servers ([`fanout`]).

use std::ffi::OsStr;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, ChildStdin, Command};

pub mod fanout;

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

/// Holds a server child: this binary run again with the arguments of its serving side, which
/// prints `listening ...` once it serves and serves until its standard input closes
/// ([`until_stdin_closes`]).
pub struct ServerChild {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl ServerChild {
    /// Starts this binary again with `args`; returns the child, and what its first line says after
    /// `listening ` (its address, and whatever else it tells).
    ///
    /// # Errors
    ///
    /// Fails when it cannot start, or does not say it listens within `limit`.
    pub async fn start<I, S>(args: I, limit: Duration) -> Result<(Self, String), BoxError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut child = Command::new(std::env::current_exe()?)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut line = String::new();
        tokio::time::timeout(limit, BufReader::new(stdout).read_line(&mut line))
            .await
            .map_err(|_| format!("a server child did not start within {limit:?}"))??;
        let rest = line
            .trim()
            .strip_prefix("listening ")
            .ok_or_else(|| format!("a server child's unexpected first line {line:?}"))?
            .to_owned();
        Ok((Self { child, stdin }, rest))
    }

    /// Returns its process id, as `/proc` names it.
    ///
    /// # Errors
    ///
    /// Fails when it has exited.
    pub fn pid(&self) -> Result<String, BoxError> {
        Ok(self
            .child
            .id()
            .ok_or("the server child exited")?
            .to_string())
    }

    /// Returns its resident set, in KiB.
    ///
    /// # Errors
    ///
    /// Fails when it has exited.
    pub fn rss_kib(&self) -> Result<u64, BoxError> {
        rss_kib(&self.pid()?)
    }

    /// Returns its standard input, for a child that takes commands there.
    pub fn stdin(&mut self) -> Option<&mut ChildStdin> {
        self.stdin.as_mut()
    }

    /// Stops it: closes its standard input, and kills it if it has not exited 3 s later.
    pub async fn stop(mut self) {
        drop(self.stdin.take());
        if tokio::time::timeout(Duration::from_secs(3), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
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

/// CPU time (user and system, all threads) process `pid` (or `"self"`) has used, in seconds.
///
/// # Errors
///
/// When `/proc/PID/stat` cannot be read or parsed.
pub fn cpu_seconds(pid: &str) -> Result<f64, BoxError> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after_name = stat.rsplit_once(')').ok_or("bad /proc stat")?.1;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // Fields 14 and 15 of proc(5), counted from the state (field 3).
    let utime: u64 = fields.get(11).ok_or("no utime")?.parse()?;
    let stime: u64 = fields.get(12).ok_or("no stime")?.parse()?;
    // SAFETY: sysconf reads a constant.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Ok((utime + stime) as f64 / ticks)
}

/// CPU time (user and system, all threads alive) process `pid` (or `"self"`) has used, in
/// nanoseconds, from the scheduler's own count (`/proc/PID/task/*/schedstat`): exact to the
/// nanosecond, where `/proc/PID/stat` counts in ticks of 10 ms.
///
/// # Errors
///
/// When the process's tasks cannot be read.
pub fn cpu_ns(pid: &str) -> Result<u64, BoxError> {
    let mut total = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        // A thread that ends meanwhile takes its time with it (the benchmarks' threads live as
        // long as their process).
        let Ok(stat) = std::fs::read_to_string(task?.path().join("schedstat")) else {
            continue;
        };
        let on_cpu: u64 = stat
            .split_whitespace()
            .next()
            .ok_or("bad schedstat")?
            .parse()?;
        total += on_cpu;
    }
    Ok(total)
}

/// Returns CLOCK_MONOTONIC in nanoseconds: one clock for every process of the machine on Linux,
/// so that a time taken in a server child compares with one taken in the load generator.
pub fn monotonic_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the struct given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// Resident set of process `pid` (or `"self"`), in KiB.
///
/// # Errors
///
/// When `/proc/PID/status` cannot be read or has no `VmRSS` line.
pub fn rss_kib(pid: &str) -> Result<u64, BoxError> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .ok_or("no VmRSS")?;
    Ok(line
        .trim_start_matches("VmRSS:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()?)
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
