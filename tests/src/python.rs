//! The Python drivers in `tests/interop`: clients nobody here wrote, run against the examples
//! (the MCP SDK's client as a script, pytest-lsp's tests under pytest).
//!
//! They need the virtual environment `tests/interop/.venv` with the packages of
//! `tests/interop/requirements.txt` (`.ci/run` makes it: `python3 -m venv tests/interop/.venv`,
//! then `pip install -r tests/interop/requirements.txt`); without it the tests that use them fail
//! under CI and are skipped elsewhere ([`tools::require`](crate::tools::require)).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use crate::process::run_bounded;

/// How long a whole Python driver may run.
pub const LIMIT: Duration = Duration::from_secs(90);
/// How long the check that the packages import may run.
const CHECK_LIMIT: Duration = Duration::from_secs(30);

/// The interop directory and its interpreter, or why the Python drivers cannot run here.
///
/// # Errors
///
/// When the virtual environment is missing, or `module` does not import in it at `version`.
pub fn setup(module: &str, version: &str) -> Result<(PathBuf, PathBuf), String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("interop");
    let python = dir.join(".venv").join("bin").join("python");
    if !python.is_file() {
        return Err(
            "tests/interop/.venv is missing (python3 -m venv tests/interop/.venv && tests/interop/.venv/bin/pip install -r tests/interop/requirements.txt)"
                .to_owned(),
        );
    }
    let check = format!(
        "import importlib.metadata as m; assert m.version({module:?}) == {version:?}, m.version({module:?})"
    );
    let output = run_bounded(Command::new(&python).args(["-c", &check]), CHECK_LIMIT)?;
    if !output.status.success() {
        return Err(format!(
            "{module} {version} is not installed in tests/interop/.venv: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok((dir, python))
}

/// Runs `<python> <dir>/<script> <args>` in `dir` (both from [`setup`]) to completion, within
/// [`LIMIT`].
///
/// # Errors
///
/// When it cannot start or runs past the limit.
pub fn run(dir: &Path, python: &Path, script: &str, args: &[&OsStr]) -> Result<Output, String> {
    run_bounded(
        Command::new(python)
            .current_dir(dir)
            .arg(dir.join(script))
            .args(args),
        LIMIT,
    )
}

/// Runs the pytest file `<dir>/<file>` with `<python> -m pytest` in `dir` (both from [`setup`]),
/// with `env` set, to completion within [`LIMIT`]; `-W error::...` and the like go in `args`.
/// pytest writes no cache and Python no bytecode into the tree.
///
/// # Errors
///
/// When it cannot start or runs past the limit.
pub fn pytest(
    dir: &Path,
    python: &Path,
    file: &str,
    args: &[&str],
    env: &[(&str, &OsStr)],
) -> Result<Output, String> {
    let mut command = Command::new(python);
    command
        .current_dir(dir)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args(["-m", "pytest", "-p", "no:cacheprovider"])
        .arg(dir.join(file))
        .args(args);
    for (name, value) in env {
        command.env(name, value);
    }
    run_bounded(&mut command, LIMIT)
}
