//! The examples of `jrpc-examples` as the tests run them: built by cargo, started as processes.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use crate::process::{Capture, run_bounded};

/// Building the examples may compile much of the workspace on a cold cache.
const BUILD_LIMIT: Duration = Duration::from_secs(20 * 60);
/// How long the calculator may take to print its address.
const START_LIMIT: Duration = Duration::from_secs(20);

/// The workspace's root folder.
pub fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."))
}

/// Builds the named examples of `jrpc-examples` and returns their executables by name. The
/// executables are found through cargo's own report of what it built, so a custom target
/// directory works.
///
/// They are built for the whole workspace, with the features `cargo test --workspace` resolves,
/// so under that command (which has built the examples already) cargo finds them fresh rather
/// than building the runtime and the examples again with the examples' features alone. For the
/// same reason cargo runs without the variables it set for this test (`CARGO_MANIFEST_DIR`...):
/// a build script that reads one (ring's) would be run again, and all that depends on it
/// rebuilt, once here and once more by the next cargo command.
///
/// # Errors
///
/// When cargo fails, runs past its time limit or does not report every executable.
pub fn build_examples(names: &[&str]) -> Result<HashMap<String, PathBuf>, String> {
    let mut cargo = Command::new(env!("CARGO"));
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(set_for_the_test) {
            cargo.env_remove(name);
        }
    }
    cargo.current_dir(workspace_root()).args([
        "build",
        "-q",
        "--message-format=json-render-diagnostics",
        "--workspace",
    ]);
    for name in names {
        cargo.args(["--example", name]);
    }
    let output = run_bounded(&mut cargo, BUILD_LIMIT)?;
    if !output.status.success() {
        return Err(format!(
            "building the examples failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let mut found = HashMap::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if let (Some(name), Some(exe)) = (
            message["target"]["name"].as_str(),
            message["executable"].as_str(),
        ) && names.contains(&name)
        {
            found.insert(name.to_owned(), PathBuf::from(exe));
        }
    }
    if found.len() == names.len() {
        Ok(found)
    } else {
        Err(format!(
            "cargo did not report every executable of {names:?}: {found:?}"
        ))
    }
}

/// Returns whether cargo sets the variable `name` for a crate it builds or runs (its package, its
/// manifest), rather than the user for cargo.
fn set_for_the_test(name: &str) -> bool {
    name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_BIN_")
        || matches!(
            name,
            "CARGO_MANIFEST_DIR"
                | "CARGO_MANIFEST_PATH"
                | "CARGO_CRATE_NAME"
                | "CARGO_PRIMARY_PACKAGE"
                | "CARGO_TARGET_TMPDIR"
                | "CARGO_RUSTC_CURRENT_DIR"
                | "OUT_DIR"
        )
}

/// Where the calculator's OpenRPC document is pinned.
pub const OPENRPC_SNAPSHOT: &str = "data/calculator.openrpc.json";

/// The calculator's OpenRPC document as pinned in `tests/data/calculator.openrpc.json`.
///
/// # Panics
///
/// When the file cannot be read or is not JSON.
pub fn openrpc_snapshot() -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(OPENRPC_SNAPSHOT);
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// With `JRPC_BLESS=1` in the environment, pins `document` as the calculator's document (to
/// record a change made on purpose); otherwise does nothing.
///
/// # Panics
///
/// When the file cannot be written.
pub fn bless_openrpc_snapshot(document: &serde_json::Value) {
    if std::env::var_os("JRPC_BLESS").is_some_and(|v| v == "1") {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(OPENRPC_SNAPSHOT);
        std::fs::write(&path, format!("{document:#}\n"))
            .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    }
}

/// An example server (the `calculator`, or `mcp_server --http`) listening on a free port of
/// 127.0.0.1, its stderr kept; killed on drop.
pub struct Calculator {
    child: Child,
    /// `host:port` it listens on.
    pub addr: String,
    stderr: Capture,
}

impl Calculator {
    /// Starts the executable `calculator` with `--listen 127.0.0.1:0` and waits for the address
    /// it prints.
    ///
    /// # Panics
    ///
    /// When it cannot start, or prints no address in time.
    pub fn start(calculator: &Path) -> Calculator {
        Self::start_with(calculator, &[])
    }

    /// [`start`](Self::start), with more arguments after `--listen 127.0.0.1:0` (`--redis URL`, say).
    ///
    /// # Panics
    ///
    /// When it cannot start, or prints no address in time.
    pub fn start_with(calculator: &Path, args: &[&str]) -> Calculator {
        let mut all = vec!["--listen", "127.0.0.1:0"];
        all.extend_from_slice(args);
        Self::start_as(calculator, &all, "http://")
    }

    /// Starts the executable `server` (an example that prints `listening on http://ADDR` first:
    /// the calculator, `mcp_server --http 127.0.0.1:0`) with exactly `args`, and waits for the
    /// address it prints.
    ///
    /// # Panics
    ///
    /// When it cannot start, or prints no address in time.
    pub fn spawn(server: &Path, args: &[&str]) -> Calculator {
        Self::start_as(server, args, "http://")
    }

    /// Starts the executable `server` with `args` (and no others) and waits for the line
    /// `listening on PREFIX...`; [`addr`](Self::addr) is what follows `prefix`.
    ///
    /// # Panics
    ///
    /// When it cannot start, or prints no such line in time.
    pub fn start_as(server: &Path, args: &[&str], prefix: &str) -> Calculator {
        Self::start_in(server, args, prefix, &[])
    }

    /// [`start_as`](Self::start_as), with `env` added to its environment (`RUST_LOG=debug`, say).
    ///
    /// # Panics
    ///
    /// When it cannot start, or prints no such line in time.
    pub fn start_in(
        server: &Path,
        args: &[&str],
        prefix: &str,
        env: &[(&str, &str)],
    ) -> Calculator {
        let mut child = Command::new(server)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|err| panic!("could not start the calculator: {err}"));
        let stderr = Capture::start(child.stderr.take().expect("piped stderr"));
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, first_line) = mpsc::channel();
        thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            let mut line = String::new();
            let _ = tx.send(stdout.read_line(&mut line).map(|_| line));
            // Keep reading, so the server never blocks on a full pipe.
            let _ = std::io::copy(&mut stdout, &mut std::io::sink());
        });
        let mut server = Calculator {
            child,
            addr: String::new(),
            stderr,
        };
        let line = match first_line.recv_timeout(START_LIMIT) {
            Ok(Ok(line)) => line,
            Ok(Err(err)) => panic!("reading the calculator's stdout: {err}"),
            Err(_) => panic!(
                "the calculator printed no address within {START_LIMIT:?}\n{}",
                server.stderr()
            ),
        };
        server.addr = line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|rest| rest.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("unexpected first line {line:?}\n{}", server.stderr()))
            .to_owned();
        server
    }

    /// What the calculator wrote on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.text()
    }

    /// Sends it `SIGINT` (Ctrl-C), as a terminal would, and waits (within `limit`) for it to
    /// exit; returns its exit code (`None` if it ended by a signal or did not end in time).
    pub fn interrupt(&mut self, limit: Duration) -> Option<i32> {
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let status = crate::process::wait_bounded(&mut self.child, limit);
        // Gone, it has written all it will: read its stderr to the end.
        self.stderr.wait();
        status?.code()
    }

    /// Kills it by its PID (`SIGKILL`: no drain, no goodbye to its clients), as a replica dies,
    /// and waits for it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.stderr.wait();
    }

    /// Asserts the server is still running (a client must not have brought it down).
    ///
    /// # Panics
    ///
    /// When it has exited.
    pub fn assert_alive(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("the calculator exited ({status})\n{}", self.stderr());
        }
    }
}

impl Drop for Calculator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
