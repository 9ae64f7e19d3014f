//! Test-only crate: the tests live under `tests/`; this library holds what several of them share.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace's root folder.
pub fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."))
}

/// Builds the named examples of `jrpc-examples` and returns their executables by name.
///
/// # Errors
///
/// When cargo fails or does not report every executable.
pub fn build_examples(names: &[&str]) -> Result<HashMap<String, PathBuf>, String> {
    let mut cargo = Command::new(env!("CARGO"));
    cargo.current_dir(workspace_root()).args([
        "build",
        "-q",
        "--message-format=json-render-diagnostics",
        "-p",
        "jrpc-examples",
    ]);
    for name in names {
        cargo.args(["--example", name]);
    }
    let output = cargo
        .output()
        .map_err(|err| format!("cannot run cargo: {err}"))?;
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
