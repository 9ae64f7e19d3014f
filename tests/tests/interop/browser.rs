//! The calculator called by a page in a real browser: Debian's headless Chromium, driven by
//! `playwright-core` from `tests/interop/browser.mjs`, shows a page served from an origin of its
//! own (another port of 127.0.0.1), and the page calls the calculators over `fetch` and over its
//! `WebSocket`, as a web app would.
//!
//! The page's calls go through the client that `@open-rpc/generator` generates from the
//! calculator's pinned OpenRPC document, at each run into a temporary folder: OpenRPC's own
//! generator, kept by the OpenRPC project beside `@open-rpc/client-js`, which the other OpenRPC
//! test uses. Its output is a TypeScript package importing client-js by name; `esbuild` (one
//! call, no configuration file) strips the types and bundles it for the page. It needs three
//! adjustments, each explained where `browser.mjs` makes it (the first in `package.json`): the
//! generator's `@open-rpc/typings` is overridden to 1.13.1, whose schema tools take the
//! document's notifications (methods without `result`) where 1.13.0's crash; the number formats
//! schemars writes (`int64`, `double`...) are left out of the document it is given, since the
//! generated client's param checker (ajv 6) throws on formats it does not know; and a batch is
//! sent one task after its calls, which reach the client's batch only after awaits of their own.
//!
//! Without `node`, the packages of `tests/interop` (`npm ci --prefix tests/interop`) or
//! `/usr/bin/chromium` (`apt-get install chromium`), the test fails under CI and elsewhere prints
//! why it is skipped and passes (`jrpc_tests::tools`). The driver runs within the Node drivers'
//! limit ([`node::LIMIT`]); nothing else is timed.

use std::process::Command;
use std::time::Duration;

use super::calculator_topics::calculator_exe;
use jrpc_tests::examples::Calculator;
use jrpc_tests::process::run_bounded;
use jrpc_tests::{node, tools};
use serde_json::{Value, json};

const SCRIPT: &str = "browser.mjs";
/// What `browser.mjs` imports, and what the generated client imports.
const PACKAGES: [&str; 6] = [
    "playwright-core",
    "@open-rpc/generator",
    "esbuild",
    "@open-rpc/client-js",
    "@open-rpc/schema-utils-js",
    "lodash",
];
/// Where Debian's `chromium` package puts the browser; `browser.mjs` starts that one.
const CHROMIUM: &str = "/usr/bin/chromium";
/// How long `chromium --version` may run.
const VERSION_LIMIT: Duration = Duration::from_secs(20);
/// The token of the calculator started with `--token`.
const SECRET: &str = "page-secret";

/// Returns `Ok` when `chromium` runs here, or why it does not.
fn chromium_found() -> Result<(), String> {
    let version = run_bounded(Command::new(CHROMIUM).arg("--version"), VERSION_LIMIT)
        .map_err(|_| format!("`{CHROMIUM}` is not installed (`apt-get install chromium`)"))?;
    if !version.status.success() {
        return Err(format!("`{CHROMIUM} --version` failed"));
    }
    Ok(())
}

/// Asserts what the generated client's WebSocket calls answered, and the notifications the page
/// took: the `announcement` of `announce("news", "hi")`, after `watch("news")`.
fn assert_websocket_calls(seen: &Value, what: &str) {
    let announcement = json!({"topic": "news", "text": "hi"});
    assert_eq!(
        *seen,
        json!({
            "add": 5,
            "whoami": "ws",
            "watch": null,
            "announce": null,
            "notifications": [{"jsonrpc": "2.0", "method": "announcement", "params": announcement}],
        }),
        "{what}"
    );
}

/// Asserts what a page sees of a calculator that does not allow its origin: its `fetch` fails (a
/// `TypeError`, as for any CORS refusal) because the preflight's answer names no allowed origin,
/// and its `WebSocket` closes without opening (1006: abnormal closure, the handshake refused).
fn assert_refused(seen: &Value, preflight: u16, what: &str) {
    assert_eq!(seen["fetch"], json!({"error": "TypeError"}), "{what}");
    assert_eq!(
        seen["network"]["posts"],
        json!([{"methods": ["add"], "corsError": "PreflightMissingAllowOriginHeader"}]),
        "{what}"
    );
    assert_eq!(seen["network"]["preflights"], json!([preflight]), "{what}");
    assert_eq!(seen["ws"], json!({"opened": false, "code": 1006}), "{what}");
}

#[test]
fn a_page_in_chromium_calls_from_allowed_origins_only() {
    let Some(dir) = tools::require(
        SCRIPT,
        node::setup(&PACKAGES).and_then(|dir| chromium_found().map(|()| dir)),
    ) else {
        return;
    };
    // Built before the driver starts, so that a cold build does not eat the driver's limit.
    let exe = calculator_exe();
    let mut driver = node::Driver::spawn(&dir, SCRIPT).unwrap_or_else(|why| panic!("{why}"));
    let first = driver.read_line().unwrap_or_else(|why| panic!("{why}"));
    let first: Value = serde_json::from_str(&first).unwrap_or_else(|err| panic!("{err}: {first}"));
    let origin = first["origin"]
        .as_str()
        .expect("the page's origin")
        .to_owned();
    let page_port = origin.rsplit(':').next().expect("a port");
    // The same port by another name is another origin.
    let other_origin = format!("http://localhost:{page_port}");

    let mut allowed = Calculator::start_with(&exe, &["--allow-origin", &origin]);
    let mut unlisted = Calculator::start(&exe);
    let mut other = Calculator::start_with(&exe, &["--allow-origin", &other_origin]);
    let mut token = Calculator::start_with(&exe, &["--allow-origin", &origin, "--token", SECRET]);
    let calculators = json!({
        "allowed": allowed.addr,
        "unlisted": unlisted.addr,
        "other": other.addr,
        "token": token.addr,
        "secret": SECRET,
    });
    driver
        .write_line(&calculators.to_string())
        .unwrap_or_else(|why| panic!("{why}"));
    let output = driver.finish().unwrap_or_else(|why| panic!("{why}"));
    let stderrs = || {
        format!(
            "--- allowed calculator's stderr\n{}\n--- token calculator's stderr\n{}",
            allowed.stderr(),
            token.stderr()
        )
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "node {SCRIPT} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr),
        stderrs()
    );
    let seen: Value = serde_json::from_str(stdout.trim_end())
        .unwrap_or_else(|err| panic!("{err}: what the page saw, as JSON: {stdout}"));

    // The page's own origin is allowed: fetch and WebSocket, through the generated client.
    let page = &seen["allowed"];
    let fetched = &page["fetch"];
    assert_eq!(fetched["calls"]["add"], json!({"result": 5}));
    assert_eq!(fetched["calls"]["whoami"], json!({"result": "http"}));
    assert_eq!(
        fetched["calls"]["divide"],
        json!({"error": {"code": 1, "message": "division by zero"}})
    );
    assert_eq!(
        fetched["batch"],
        json!([
            {"result": 3},
            {"error": {"code": 1, "message": "division by zero"}},
            {"result": ["hello", 5]},
        ])
    );
    // Each call was a POST of its own after a preflight, and the batch one POST.
    assert_eq!(
        page["network"],
        json!({
            "posts": [
                {"methods": ["add"], "status": 200},
                {"methods": ["whoami"], "status": 200},
                {"methods": ["divide"], "status": 200},
                {"methods": ["add", "divide", "get_data"], "status": 200},
            ],
            "preflights": [200],
        })
    );
    assert_websocket_calls(&page["ws"], "allowed origin");

    // No --allow-origin: the preflight is refused (403) like any other request from the page.
    assert_refused(&seen["unlisted"], 403, "no --allow-origin");
    // Another origin allowed: the preflight is answered, but for that origin only.
    assert_refused(&seen["other"], 200, "--allow-origin of another origin");

    // With --token: the page's fetch sends `Authorization` (allowed by the preflight) and its
    // WebSocket, which cannot, sends `?access_token=`; without them, neither gets in.
    let page = &seen["token"];
    assert_eq!(
        page["fetch"],
        json!({"status": 200, "body": {"jsonrpc": "2.0", "result": 5, "id": 1}})
    );
    // The 401 reaches the page (its CORS headers are there), so a page can ask for a token.
    assert_eq!(page["fetchWithout"]["status"], 401);
    assert_eq!(page["fetchWithout"]["body"]["error"]["code"], -32600);
    assert_eq!(
        page["network"],
        json!({
            "posts": [
                {"methods": ["add"], "status": 200},
                {"methods": ["add"], "status": 401},
            ],
            "preflights": [200],
        })
    );
    assert_websocket_calls(&page["ws"], "?access_token=");
    assert_eq!(page["wsWithout"], json!({"opened": false, "code": 1006}));

    for server in [&mut allowed, &mut unlisted, &mut other, &mut token] {
        server.assert_alive();
    }
}
