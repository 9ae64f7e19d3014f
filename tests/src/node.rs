//! The Node drivers in `tests/interop`: clients nobody here wrote, run against the examples.
//!
//! They need `node` and the packages of `tests/interop/package.json` (`npm ci --prefix
//! tests/interop`); without them the tests that use them fail under CI and are skipped elsewhere
//! ([`tools::require`](crate::tools::require)).

use std::ffi::OsStr;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::process::{Capture, run_bounded, wait_bounded};

/// How long a whole Node driver may run.
pub const LIMIT: Duration = Duration::from_secs(90);
/// How long `node --version` may run.
const VERSION_LIMIT: Duration = Duration::from_secs(20);

/// The interop directory, or why the Node drivers cannot run here.
///
/// # Errors
///
/// When `node` does not run, or one of `packages` is not in `tests/interop/node_modules`.
pub fn setup(packages: &[&str]) -> Result<PathBuf, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("interop");
    let node = run_bounded(Command::new("node").arg("--version"), VERSION_LIMIT)
        .map_err(|_| "`node` is not installed".to_owned())?;
    if !node.status.success() {
        return Err("`node --version` failed".to_owned());
    }
    for package in packages {
        if !dir.join("node_modules").join(package).is_dir() {
            return Err(format!(
                "{package} is not installed in tests/interop/node_modules (run `npm ci --prefix tests/interop`)"
            ));
        }
    }
    Ok(dir)
}

/// Runs `node <dir>/<script> <arg>` in `dir` (from [`setup`]) to completion, within [`LIMIT`].
///
/// # Errors
///
/// When it cannot start or runs past the limit.
pub fn run(dir: &Path, script: &str, arg: impl AsRef<OsStr>) -> Result<Output, String> {
    run_with(dir, script, &[arg.as_ref()])
}

/// [`run`] with several arguments.
///
/// # Errors
///
/// When it cannot start or runs past the limit.
pub fn run_with(dir: &Path, script: &str, args: &[&OsStr]) -> Result<Output, String> {
    run_bounded(
        Command::new("node")
            .current_dir(dir)
            .arg(dir.join(script))
            .args(args),
        LIMIT,
    )
}

/// Runs `node <args>` in `dir` (from [`setup`]) to completion, within `limit`: for a package's
/// own command line (`--import` a preload, then its script).
///
/// # Errors
///
/// When it cannot start or runs past the limit.
pub fn run_args(dir: &Path, args: &[&OsStr], limit: Duration) -> Result<Output, String> {
    run_bounded(Command::new("node").current_dir(dir).args(args), limit)
}

/// A Node driver that talks with its test while it runs, a line at a time each way: the test
/// reads what it prints on stdout and answers on its stdin (the page of `browser.mjs` must be
/// served before the calculators that allow its origin can start). The whole run, every wait
/// included, is bounded by [`LIMIT`] from its start; killed on drop.
pub struct Driver {
    child: Child,
    script: String,
    stdin: Option<ChildStdin>,
    stdout: mpsc::Receiver<String>,
    stderr: Capture,
    deadline: Instant,
}

impl Driver {
    /// Starts `node <dir>/<script>` in `dir` (from [`setup`]).
    ///
    /// # Errors
    ///
    /// When it cannot start.
    pub fn spawn(dir: &Path, script: &str) -> Result<Driver, String> {
        let mut child = Command::new("node")
            .current_dir(dir)
            .arg(dir.join(script))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|err| format!("could not start node {script}: {err}"))?;
        let stderr = Capture::start(child.stderr.take().expect("piped stderr"));
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let (lines, stdout_lines) = mpsc::channel();
        thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Driver {
            stdin: child.stdin.take(),
            child,
            script: script.to_owned(),
            stdout: stdout_lines,
            stderr,
            deadline: Instant::now() + LIMIT,
        })
    }

    /// Returns the next line it prints.
    ///
    /// # Errors
    ///
    /// When its stdout ends first, or the run's limit passes.
    pub fn read_line(&mut self) -> Result<String, String> {
        self.stdout
            .recv_timeout(self.left())
            .map_err(|err| self.failure(&format!("no line on its stdout ({err})")))
    }

    /// Writes `line` and a newline on its stdin.
    ///
    /// # Errors
    ///
    /// When it has closed its stdin (it ended, say).
    pub fn write_line(&mut self, line: &str) -> Result<(), String> {
        let written = match self.stdin.as_mut() {
            Some(stdin) => writeln!(stdin, "{line}").and_then(|()| stdin.flush()),
            None => return Err(self.failure("its stdin is closed")),
        };
        written.map_err(|err| self.failure(&format!("writing on its stdin: {err}")))
    }

    /// Closes its stdin and waits for its end; returns its exit status, the lines of its stdout
    /// that [`read_line`](Self::read_line) has not returned, and its stderr.
    ///
    /// # Errors
    ///
    /// When it does not end within the run's limit (it is killed).
    pub fn finish(mut self) -> Result<Output, String> {
        drop(self.stdin.take());
        let left = self.left();
        let Some(status) = wait_bounded(&mut self.child, left) else {
            return Err(self.failure("it did not end; killed"));
        };
        let mut stdout = String::new();
        loop {
            match self.stdout.recv_timeout(self.left()) {
                Ok(line) => {
                    stdout.push_str(&line);
                    stdout.push('\n');
                }
                // Its pipes are closed: its stderr has all it wrote.
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    self.stderr.wait();
                    break;
                }
                // A process it started holds its stdout open: keep what arrived.
                Err(mpsc::RecvTimeoutError::Timeout) => break,
            }
        }
        Ok(Output {
            status,
            stdout: stdout.into_bytes(),
            stderr: self.stderr.text().into_bytes(),
        })
    }

    /// What is left of the run's limit.
    fn left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// `what` went wrong, with what it wrote on stderr so far.
    fn failure(&self, what: &str) -> String {
        format!(
            "node {} (limit {LIMIT:?}): {what}\n--- stderr\n{}",
            self.script,
            self.stderr.text()
        )
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
