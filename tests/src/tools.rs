//! Outside tools some tests need (`node` and the packages of `tests/interop`, its Python virtual
//! environment, `curl`, `redis-server`, the MCP conformance suite), and the one rule for when one
//! is missing.
//!
//! `.ci/run` installs every one of them, so under CI (`CI` set in the environment) a missing tool
//! is a broken setup: the test fails, saying which tool and why. Elsewhere the test prints why it
//! is skipped and passes, so that `cargo test` runs on a machine without them.

/// Whether this run is under CI, where every outside tool must be installed.
fn under_ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// Returns the tool `found` holds, or `None` once `what` (a test, or the driver it runs) has
/// been skipped for want of it, with why on stderr.
///
/// # Panics
///
/// Under CI, when `found` is an error: the test fails with why.
pub fn require<T>(what: &str, found: Result<T, String>) -> Option<T> {
    match found {
        Ok(tool) => Some(tool),
        Err(why) => {
            assert!(
                !under_ci(),
                "{what}: {why} (`CI` is set: .ci/run installs every outside tool)"
            );
            eprintln!("{what}: SKIPPED: {why}");
            None
        }
    }
}
