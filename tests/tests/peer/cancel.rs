//! Cancellation on a `Peer`: a caller that gives up a call (its future dropped), the other side's
//! cancel notice, and the drain budget spent at the end of input each drop the handler, resolve
//! its context's `cancelled()` and are observed `cancelled`.

use std::time::Duration;

use jrpc_runtime::{Caller as _, Cancellation, Methods, Peer, PeerConfig};
use jrpc_tests::cancel::hang;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

/// A server peer on one end of an in-memory stream, one message a line, speaking `cancellation`
/// and draining for `drain`; the raw other end, to write and read lines.
fn serve_lines(
    methods: Methods,
    cancellation: Cancellation,
    drain: Duration,
) -> (
    tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    tokio::io::WriteHalf<tokio::io::DuplexStream>,
) {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let config = PeerConfig::builder()
        .cancellation(cancellation)
        .drain_timeout(drain)
        .build()
        .unwrap();
    let (_peer, driver) = Peer::connect(theirs, methods, config);
    tokio::spawn(driver);
    let (read, write) = tokio::io::split(ours);
    (BufReader::new(read).lines(), write)
}

async fn send(write: &mut tokio::io::WriteHalf<tokio::io::DuplexStream>, message: Value) {
    write
        .write_all(format!("{message}\n").as_bytes())
        .await
        .unwrap();
}

#[tokio::test]
async fn a_call_given_up_cancels_the_handler_on_the_other_side() {
    let mut methods = Methods::new();
    let mut hang = hang(&mut methods);
    let (x, y) = tokio::io::duplex(64 * 1024);
    let config = || {
        PeerConfig::builder()
            .cancellation(Cancellation::Lsp)
            .build()
            .unwrap()
    };
    let (_server, server_loop) = Peer::connect(x, methods, config());
    tokio::spawn(server_loop);
    let (client, client_loop) = Peer::connect(y, Methods::new(), config());
    tokio::spawn(client_loop);
    let mut call = Box::pin(client.call::<()>("hang", ()));
    hang.started_while(&mut call).await;
    drop(call);
    hang.cancelled().await;
}

#[tokio::test]
async fn a_cancel_notice_cancels_the_handler_and_lsp_answers_at_once() {
    for (cancellation, notice, answered) in [
        (
            Cancellation::Lsp,
            json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 7}}),
            true,
        ),
        (
            Cancellation::Mcp,
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}),
            false,
        ),
    ] {
        let mut methods = Methods::new();
        let mut hang = hang(&mut methods);
        jrpc_tests::fixtures::add(&mut methods);
        let (mut lines, mut write) = serve_lines(methods, cancellation, Duration::from_secs(30));
        send(
            &mut write,
            json!({"jsonrpc": "2.0", "method": "hang", "id": 7}),
        )
        .await;
        hang.started().await;
        send(&mut write, notice).await;
        hang.cancelled().await;
        // Under LSP the call is answered `-32800`; under MCP not at all: the next answer is the
        // next call's.
        send(
            &mut write,
            json!({"jsonrpc": "2.0", "method": "add", "params": [1, 2], "id": 8}),
        )
        .await;
        let first: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        if answered {
            assert_eq!(first["id"], 7, "{first}");
            assert_eq!(first["error"]["code"], -32800, "{first}");
            let next = lines.next_line().await.unwrap().unwrap();
            assert!(next.contains("\"result\":3"), "{next}");
        } else {
            assert_eq!(first["id"], 8, "{first}");
        }
    }
}

#[tokio::test]
async fn a_call_cancelled_before_its_task_runs_is_observed_cancelled() {
    let mut methods = Methods::new();
    let mut hang = hang(&mut methods);
    let (mut lines, mut write) = serve_lines(methods, Cancellation::Lsp, Duration::from_secs(30));
    // One write: the loop reads the notice before the call's task has run.
    let call = json!({"jsonrpc": "2.0", "method": "hang", "id": 7});
    let notice = json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 7}});
    write
        .write_all(format!("{call}\n{notice}\n").as_bytes())
        .await
        .unwrap();
    let first: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(first["error"]["code"], -32800, "{first}");
    hang.wait_cancelled_observed(1).await;
    assert_eq!(hang.cancelled_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn the_drain_budget_spent_cancels_the_handler() {
    let mut methods = Methods::new();
    let mut hang = hang(&mut methods);
    let (_lines, mut write) = serve_lines(methods, Cancellation::Off, Duration::from_secs(1));
    send(
        &mut write,
        json!({"jsonrpc": "2.0", "method": "hang", "id": 1}),
    )
    .await;
    hang.started().await;
    // The end of input: the call has the drain budget to finish, then is cancelled.
    write.shutdown().await.unwrap();
    hang.cancelled().await;
}
