//! The `acp_agent` example as a process on stdio, driven by the official ACP TypeScript SDK
//! (`@agentclientprotocol/sdk`, pinned in `tests/interop/package.json`) as the client:
//! `tests/interop/acp.mjs` counts, asks (allow and reject), cancels a turn with `session/cancel`
//! and a prompt with `$/cancel_request`, and prompts a session the agent never opened.
//!
//! Without `node` or the package (`npm ci --prefix tests/interop`), it fails under CI and
//! elsewhere prints why it is skipped and passes (`jrpc_tests::tools`).

use jrpc_tests::{node, tools};

#[test]
fn acp_agent_with_the_official_sdk_client() {
    let Some(dir) = tools::require("acp.mjs", node::setup(&["@agentclientprotocol/sdk"])) else {
        return;
    };
    let built = jrpc_tests::build_examples(&["acp_agent"]).unwrap_or_else(|why| panic!("{why}"));
    let output =
        node::run(&dir, "acp.mjs", &built["acp_agent"]).unwrap_or_else(|why| panic!("{why}"));
    assert!(
        output.status.success(),
        "node acp.mjs failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
