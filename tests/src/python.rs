//! The Python drivers in `tests/interop`: clients nobody here wrote, run against the examples.
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
