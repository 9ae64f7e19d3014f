//! The Node drivers in `tests/interop`: clients nobody here wrote, run against the examples.
//!
//! They need `node` and the packages of `tests/interop/package.json` (`npm ci --prefix
//! tests/interop`); without them the tests that use them fail under CI and are skipped elsewhere
//! ([`tools::require`](crate::tools::require)).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use crate::process::run_bounded;

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
