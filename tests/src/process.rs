//! Child processes under a time limit, and what they write.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Runs `command` to completion with its output captured; kills it past `limit`.
///
/// # Errors
///
/// When it cannot start, or does not finish within `limit` (the error holds what it wrote).
pub fn run_bounded(command: &mut Command, limit: Duration) -> Result<Output, String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| format!("could not start {command:?}: {err}"))?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = wait_bounded(&mut child, limit);
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    match status {
        Some(status) => Ok(Output {
            status,
            stdout,
            stderr,
        }),
        None => Err(format!(
            "{command:?} did not finish within {limit:?}; killed.\n--- stdout\n{}\n--- stderr\n{}",
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        )),
    }
}

/// Reads a pipe to its end on a thread of its own.
pub fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut out = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut out);
        }
        out
    })
}

/// Waits for `child` up to `limit`; kills it and answers `None` past it.
pub fn wait_bounded(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// A pipe read on a thread of its own into a buffer that can be looked at while it fills (a
/// server's stderr, shown when a test fails).
pub struct Capture {
    bytes: Arc<Mutex<Vec<u8>>>,
    reader: Option<thread::JoinHandle<()>>,
}

impl Capture {
    /// Starts reading `pipe`.
    pub fn start<R: Read + Send + 'static>(mut pipe: R) -> Capture {
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let reader = {
            let bytes = Arc::clone(&bytes);
            thread::spawn(move || {
                let mut chunk = [0; 4096];
                while let Ok(n @ 1..) = pipe.read(&mut chunk) {
                    bytes.lock().unwrap().extend_from_slice(&chunk[..n]);
                }
            })
        };
        Capture {
            bytes,
            reader: Some(reader),
        }
    }

    /// What has arrived so far, as (lossy) UTF-8.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes.lock().unwrap()).into_owned()
    }

    /// Waits for the end of the pipe, so that [`Capture::text`] has all of it.
    pub fn wait(&mut self) {
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// Resident memory of this process, in bytes (Linux; `None` elsewhere).
pub fn rss() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Marks a test binary started by [`alone`] to run one test by itself.
const ALONE: &str = "JRPC_TESTS_ALONE";

/// For a test that measures this process (its resident memory, say), which other tests running
/// beside it in the same binary would disturb: returns `true` in a process of its own, where the
/// test goes on; otherwise runs the test binary again with only that test (`module` is the
/// test's `module_path!()`, `test` its function name), asserts that it passed, and returns
/// `false`, where the test returns at once.
///
/// # Panics
///
/// When the test binary cannot be started, runs past [`LIMIT`](crate::LIMIT), or the test fails
/// or is not found in it.
pub fn alone(module: &str, test: &str) -> bool {
    if std::env::var_os(ALONE).is_some() {
        return true;
    }
    // libtest names a test by its path inside the binary, without the crate's name.
    let path = match module.split_once("::") {
        Some((_, inside)) => format!("{inside}::{test}"),
        None => test.to_owned(),
    };
    let exe = std::env::current_exe().unwrap_or_else(|err| panic!("the test binary: {err}"));
    let mut command = Command::new(exe);
    command
        .args([&path, "--exact", "--test-threads=1", "--nocapture"])
        .env(ALONE, "1");
    let output = run_bounded(&mut command, crate::LIMIT).unwrap_or_else(|err| panic!("{err}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprint!("{stderr}");
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{path} in a process of its own ({}):\n{stdout}\n{stderr}",
        output.status
    );
    false
}
