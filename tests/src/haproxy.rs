//! A real HAProxy (Debian's `haproxy`) in front of replicas, as a child process: round robin, no
//! stickiness (every request is balanced on its own), a dead replica's requests sent to another,
//! its configuration written for the test and the process killed by its PID.
//!
//! `.ci/run` installs `haproxy`. Where it is missing a test fails under CI and is skipped
//! elsewhere ([`tools::require`](crate::tools::require)).

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::process::Capture;
use crate::redis::free_port;

/// Where Debian installs it (`/usr/sbin` is not on every user's `PATH`).
const HAPROXY: &str = "/usr/sbin/haproxy";
/// How long HAProxy may take to accept its first connection.
const START_LIMIT: Duration = Duration::from_secs(20);

/// An `haproxy` child balancing a port of 127.0.0.1 over some replicas; killed on drop.
pub struct Haproxy {
    child: Option<Child>,
    stderr: Capture,
    /// The port clients connect to.
    pub port: u16,
    /// Its configuration file, removed on drop.
    config: PathBuf,
}

impl Haproxy {
    /// Starts HAProxy on a free port in front of `replicas` (each `host:port`) and waits until it
    /// accepts connections; `None`, with a message on stderr, where it is not installed (and
    /// not under CI).
    ///
    /// Every request is balanced on its own (`option http-server-close`, no cookie): round robin,
    /// whatever connection it came on. Each replica is checked every 200 ms and taken out at
    /// its first failed check; a request whose replica refuses the connection meanwhile is sent
    /// to another (`option redispatch 1`, `retries 3`). Streams may stay open an hour.
    ///
    /// # Panics
    ///
    /// When it is missing under CI, cannot start, or does not accept connections in time.
    pub fn start(test: &str, replicas: &[&str]) -> Option<Haproxy> {
        let found = Command::new(HAPROXY)
            .arg("-v")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
            .then_some(())
            .ok_or_else(|| "haproxy is not installed (apt-get install -y haproxy)".to_owned());
        crate::tools::require(test, found)?;
        let port = free_port();
        let mut servers = String::new();
        for (n, replica) in replicas.iter().enumerate() {
            servers.push_str(&format!(
                "  server r{n} {replica} check inter 200ms fall 1 rise 1\n"
            ));
        }
        let config = format!(
            "global\n  maxconn 2000\n\
             defaults\n  mode http\n  timeout connect 2s\n  timeout client 1h\n  timeout server 1h\n\
             \x20 option http-server-close\n  option redispatch 1\n  retries 3\n\
             frontend mcp\n  bind 127.0.0.1:{port}\n  default_backend replicas\n\
             backend replicas\n  balance roundrobin\n{servers}"
        );
        let path = std::env::temp_dir().join(format!("jrpc-haproxy-{port}.cfg"));
        std::fs::write(&path, config).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        let mut child = Command::new(HAPROXY)
            .arg("-f")
            .arg(&path)
            .arg("-db")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|err| panic!("could not start haproxy: {err}"));
        let stderr = Capture::start(child.stderr.take().expect("piped stderr"));
        let haproxy = Haproxy {
            child: Some(child),
            stderr,
            port,
            config: path,
        };
        let deadline = Instant::now() + START_LIMIT;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "haproxy did not accept connections within {START_LIMIT:?}:\n{}",
                haproxy.stderr.text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(haproxy)
    }

    /// `host:port` clients connect to.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// What it wrote on stderr so far (its warnings, a replica taken out).
    pub fn stderr(&self) -> String {
        self.stderr.text()
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_file(&self.config);
    }
}
