//! The chain example, as Ethereum clients use a node: its contract through jrpc's own clients
//! (HTTP and WebSocket), then ethers 6 and viem (`tests/interop/chain.mjs`) and web3.py 8 with
//! its default binary frames (`tests/interop/chain_web3.py`) following its blocks. jsonrpsee's
//! client reads it in `jsonrpsee_subscriptions.rs`.
//!
//! Each runs against a chain of its own, on a free port, making a block every 50 ms. Each wait is
//! for an event (a head, an answer), within the drivers' and [`jrpc_tests::LIMIT`]'s bounds; none
//! checks how long anything took.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use futures_util::StreamExt as _;
use jrpc_runtime::http::HttpClient;
use jrpc_runtime::ws::WsClient;
use jrpc_runtime::{Caller, ClientError, ErrorCode, Methods, Subscriber, Subscription};
use jrpc_tests::examples::Calculator;
use jrpc_tests::process::run_bounded;
use jrpc_tests::{LIMIT, bounded, node, python, tools};
use serde_json::{Value, json};

/// The chain's executable, built once for the tests of this binary that start it.
pub(crate) fn chain_exe() -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match BUILT.get_or_init(|| {
        jrpc_tests::build_examples(&["chain"])
            .map(|mut found| found.remove("chain").unwrap_or_default())
    }) {
        Ok(exe) => exe.clone(),
        Err(why) => panic!("{why}"),
    }
}

/// A chain on a free port of 127.0.0.1 making a block every 50 ms; killed on drop.
pub(crate) fn chain() -> Calculator {
    Calculator::start_with(&chain_exe(), &["--block-ms", "50"])
}

/// The fields of a block, as Ethereum nodes answer `eth_getBlockByNumber`.
const BLOCK_FIELDS: [&str; 20] = [
    "number",
    "hash",
    "parentHash",
    "nonce",
    "sha3Uncles",
    "logsBloom",
    "transactionsRoot",
    "stateRoot",
    "receiptsRoot",
    "miner",
    "difficulty",
    "totalDifficulty",
    "extraData",
    "size",
    "gasLimit",
    "gasUsed",
    "timestamp",
    "baseFeePerGas",
    "transactions",
    "uncles",
];

/// Returns the hex quantity `value` holds.
fn quantity(value: &Value) -> u64 {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("no string: {value}"));
    let digits = text
        .strip_prefix("0x")
        .unwrap_or_else(|| panic!("no 0x: {text}"));
    assert!(
        digits == "0" || !digits.starts_with('0'),
        "a quantity has no leading zero: {text}"
    );
    u64::from_str_radix(digits, 16).unwrap_or_else(|err| panic!("{text}: {err}"))
}

/// Asserts `value` is `0x` and `bytes` bytes of lowercase hex.
fn assert_data(value: &Value, bytes: usize) {
    let text = value.as_str().unwrap_or_default();
    assert_eq!(text.len(), 2 + 2 * bytes, "{bytes} bytes: {value}");
    assert!(
        text.starts_with("0x")
            && text[2..]
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{value}"
    );
}

/// Asserts `header` has a header's fields, each of its kind.
fn assert_header(header: &Value) {
    for field in [
        "hash",
        "parentHash",
        "sha3Uncles",
        "transactionsRoot",
        "stateRoot",
        "receiptsRoot",
    ] {
        assert_data(&header[field], 32);
    }
    assert_data(&header["nonce"], 8);
    assert_data(&header["logsBloom"], 256);
    assert_data(&header["miner"], 20);
    for field in [
        "number",
        "difficulty",
        "gasLimit",
        "gasUsed",
        "timestamp",
        "baseFeePerGas",
    ] {
        quantity(&header[field]);
    }
}

/// Asserts the answer `err` is the JSON-RPC error `code`.
fn assert_code<T: std::fmt::Debug>(answer: Result<T, ClientError>, code: i32) {
    match answer {
        Err(ClientError::Failed(err)) => assert_eq!(err.code(), ErrorCode::new(code), "{err:?}"),
        other => panic!("expected the error {code}: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chain_answers_as_a_node_over_http() {
    let server = chain();
    let http = HttpClient::new(&format!("http://{}/rpc", server.addr)).unwrap();
    bounded(async {
        let id: String = http.call("eth_chainId", ()).await.unwrap();
        assert_eq!(id, "0x539");
        let net: String = http.call("net_version", ()).await.unwrap();
        assert_eq!(net, "1337");

        // Blocks are made while it runs: wait for the next one.
        let first = quantity(&http.call("eth_blockNumber", ()).await.unwrap());
        let mut latest = first;
        while latest == first {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            latest = quantity(&http.call("eth_blockNumber", ()).await.unwrap());
        }
        let block: Value = http
            .call("eth_getBlockByNumber", json!(["latest", false]))
            .await
            .unwrap();
        let fields: Vec<&str> = block
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        for field in BLOCK_FIELDS {
            assert!(fields.contains(&field), "{field} missing from {block}");
        }
        assert_header(&block);
        assert!(quantity(&block["number"]) >= latest, "{block}");
        assert_eq!(block["transactions"], json!([]));

        // By number, one field left out: the same block; its parent is the one before.
        let number = format!("{latest:#x}");
        let by_number: Value = http.call("eth_getBlockByNumber", [&number]).await.unwrap();
        assert_eq!(by_number["number"], number);
        let parent: Value = http
            .call(
                "eth_getBlockByNumber",
                json!([format!("{:#x}", latest - 1), true]),
            )
            .await
            .unwrap();
        assert_eq!(by_number["parentHash"], parent["hash"]);
        let by_hash: Value = http
            .call("eth_getBlockByHash", json!([by_number["hash"], false]))
            .await
            .unwrap();
        assert_eq!(by_hash, by_number);

        // A block not made yet is null; a tag that names none is refused.
        let unknown: Value = http
            .call("eth_getBlockByNumber", json!(["0xffffffffff", false]))
            .await
            .unwrap();
        assert_eq!(unknown, Value::Null);
        assert_code(
            http.call::<Value>("eth_getBlockByNumber", json!(["soon", false]))
                .await,
            -32602,
        );

        // Over a plain POST nothing can carry the heads: a server error that says so, neither
        // "method not found" nor "internal error".
        match http.call::<Value>("eth_subscribe", ["newHeads"]).await {
            Err(ClientError::Failed(err)) => {
                assert!((-32099..=-32000).contains(&err.code().code()), "{err:?}");
                assert!(err.message().contains("connection"), "{err:?}");
            }
            other => panic!("eth_subscribe over HTTP: {other:?}"),
        }
    })
    .await;
}

/// The next head of `heads`.
async fn next_head(heads: &mut Subscription<Value>) -> Value {
    match bounded(heads.next()).await {
        Some(Ok(head)) => head,
        other => panic!("no head ({:?}): {other:?}", heads.ended()),
    }
}

async fn new_heads(client: &WsClient) -> Subscription<Value> {
    bounded(client.subscribe(
        "eth_subscribe",
        ["newHeads"],
        "eth_subscription",
        "eth_unsubscribe",
    ))
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chain_sends_new_heads_over_websocket() {
    let server = chain();
    let url = format!("ws://{}/ws", server.addr);
    let a = bounded(WsClient::connect(&url, Methods::new()))
        .await
        .unwrap();
    let b = bounded(WsClient::connect(&url, Methods::new()))
        .await
        .unwrap();
    bounded(async {
        let mut heads = new_heads(&a).await;
        let id = heads.id().clone();
        assert!(id.to_string().trim_matches('"').starts_with("0x"), "{id}");

        // Each head is a block's, in order: the block by that number has its hash.
        let mut previous = next_head(&mut heads).await;
        for _ in 0..3 {
            let head = next_head(&mut heads).await;
            assert_header(&head);
            let (before, number) = (quantity(&previous["number"]), quantity(&head["number"]));
            assert!(number > before, "{before} then {number}");
            if number == before + 1 {
                assert_eq!(head["parentHash"], previous["hash"]);
            }
            let block: Value = a
                .call("eth_getBlockByNumber", json!([head["number"], false]))
                .await
                .unwrap();
            assert_eq!(block["hash"], head["hash"]);
            previous = head;
        }

        // Another connection cannot end it, and kinds other than newHeads are refused.
        let theirs: bool = b.call("eth_unsubscribe", [&id]).await.unwrap();
        assert!(!theirs);
        assert_code(a.call::<Value>("eth_subscribe", ["logs"]).await, -32602);
        assert_code(
            a.call::<Value>("eth_subscribe", ["newPendingTransactions"])
                .await,
            -32602,
        );
        next_head(&mut heads).await;
        assert_eq!(heads.ended(), None);

        // Its own connection ends it: true, then false.
        assert!(heads.unsubscribe().await.unwrap());
        let again: bool = a.call("eth_unsubscribe", [&id]).await.unwrap();
        assert!(!again);
    })
    .await;
}

#[test]
fn a_bad_command_line_is_a_usage_error() {
    for (args, problem) in [
        (&["--no-such-flag"][..], "--no-such-flag"),
        (&["--block-ms", "0"], "`--block-ms` takes a number"),
        (&["--block-ms", "soon"], "`--block-ms` takes a number"),
        (&["--block-ms"], "`--block-ms` needs a value"),
    ] {
        let output = run_bounded(Command::new(chain_exe()).args(args), LIMIT)
            .unwrap_or_else(|why| panic!("{why}"));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(problem), "{args:?}: {stderr}");
        assert!(stderr.contains("usage: chain"), "{args:?}: {stderr}");
    }
}

#[test]
fn ethers_follows_the_chains_blocks_and_unsubscribes() {
    node_driver("ethers");
}

#[test]
fn viem_watches_the_chains_blocks_and_unwatches() {
    node_driver("viem");
}

/// Runs `chain.mjs` with `client` (`ethers` or `viem`) against a chain of its own.
fn node_driver(client: &str) {
    let Some(dir) = tools::require("chain.mjs", node::setup(&["ethers", "viem"])) else {
        return;
    };
    let mut server = chain();
    let output = node::run_with(&dir, "chain.mjs", &[client.as_ref(), server.addr.as_ref()])
        .unwrap_or_else(|why| panic!("{why}"));
    assert!(
        output.status.success(),
        "chain.mjs {client} ({}):\n{}\n{}\n--- chain's stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        server.stderr()
    );
    print!("{}", String::from_utf8_lossy(&output.stdout));
    server.assert_alive();
}

#[test]
fn web3_py_subscribes_to_new_heads_in_binary_frames() {
    let Some((dir, python)) = tools::require("chain_web3.py", python::setup("web3", WEB3_VERSION))
    else {
        return;
    };
    let mut server = chain();
    let url = format!("ws://{}/ws", server.addr);
    let output = python::run(&dir, &python, "chain_web3.py", &[url.as_ref()])
        .unwrap_or_else(|why| panic!("{why}"));
    assert!(
        output.status.success(),
        "chain_web3.py ({}):\n{}\n{}\n--- chain's stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        server.stderr()
    );
    print!("{}", String::from_utf8_lossy(&output.stdout));
    server.assert_alive();
}

/// The web3.py of `tests/interop/requirements.txt`.
const WEB3_VERSION: &str = "8.0.0";
