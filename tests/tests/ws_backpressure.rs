//! A client that never reads while the server pushes: the connection is dropped once its
//! outgoing queue overflows, so what the server holds for it stays bounded.

mod ws_support;

use std::time::Duration;

use jrpc_runtime::ws::{ContextExt as _, WsServer};
use jrpc_runtime::{Context, Methods, RpcError};
use tokio::net::TcpListener;
use ws_support::{RawWs, bounded, eventually};

/// Resident memory of this process, in bytes (Linux).
fn rss() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

#[tokio::test]
async fn a_client_that_never_reads_is_dropped_after_its_queue_overflows() {
    let mut methods = Methods::new();
    methods
        .typed("watch", &[], |(): (), ctx: Context| async move {
            Ok::<_, RpcError>(ctx.subscribe("firehose")?)
        })
        .unwrap();
    let server = WsServer::builder(methods)
        .queue(8)
        .ping_interval(None)
        .build()
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = server.clone();
    tokio::spawn(async move { serving.serve(listener).await });

    let mut ws = RawWs::connect(addr, "/", &[]).await;
    ws.send_text(r#"{"jsonrpc":"2.0","method":"watch","id":1}"#)
        .await;
    assert_eq!(ws.next_json().await["result"], true);
    // From here on the client reads nothing.

    let before = rss();
    let chunk = "x".repeat(64 * 1024);
    let mut published = 0u64;
    // Unbounded buffering would hold all of it: 2 000 x 64 KiB = 125 MiB.
    for _ in 0..2_000 {
        if server.publish("firehose", "chunk", [&chunk]).unwrap() == 0 {
            break;
        }
        published += 1;
        // Let the connection write what it can.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert!(published < 2_000, "the connection was never dropped");
    eventually(|| server.connections() == 0).await;
    assert_eq!(server.topics().subscribers("firehose"), 0);
    if let (Some(before), Some(after)) = (before, rss()) {
        let grown = after.saturating_sub(before);
        // The queue (8), the write buffer and one message in each hand-off: a few MiB at most.
        assert!(grown < 32 << 20, "grew by {grown} bytes");
    }
    // The client finds the socket dropped, with no close frame (its way in was clogged).
    let code = bounded(async {
        let mut code = None;
        while let Some(frame) = ws.next_frame().await {
            if frame.opcode == ws_support::CLOSE {
                code = Some(frame.close_code());
            }
        }
        code
    })
    .await;
    assert_eq!(code, None);
}
