//! A client that never reads while the server pushes: the connection is dropped once its
//! outgoing queue overflows, so what the server holds for it stays bounded.

use std::time::Duration;

use jrpc_runtime::ws::{WsServer, WsSettings};
use jrpc_runtime::{Context, Methods, RpcError};
use jrpc_tests::process::{alone, rss};
use jrpc_tests::raw_ws::{CLOSE, RawWs};
use jrpc_tests::servers::serve_ws;
use jrpc_tests::{bounded, eventually};

#[tokio::test]
async fn a_client_that_never_reads_is_dropped_after_its_queue_overflows() {
    // It measures this process's memory, which other tests would add to.
    if !alone(
        module_path!(),
        "a_client_that_never_reads_is_dropped_after_its_queue_overflows",
    ) {
        return;
    }
    let mut methods = Methods::new();
    methods
        .register("watch", &[], |(): (), ctx: Context| async move {
            Ok::<_, RpcError>(ctx.subscribe("firehose")?)
        })
        .unwrap();
    let server = WsServer::builder(methods)
        .settings(WsSettings::new().queue(8).ping_interval(None))
        .build()
        .unwrap();
    let (addr, _) = serve_ws(server.clone()).await;

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
        if server
            .topics()
            .publish("firehose", "chunk", [&chunk])
            .unwrap()
            == 0
        {
            break;
        }
        published += 1;
        // Let the connection write what it can. The real clock: the client is a real socket,
        // whose kernel buffers fill, and the server's write deadline runs on that clock. No
        // assertion depends on the pause, only on the connection being dropped at all.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert!(published < 2_000, "the connection was never dropped");
    eventually(|| server.shutdown_handle().connections() == 0).await;
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
            if frame.opcode == CLOSE {
                code = Some(frame.close_code());
            }
        }
        code
    })
    .await;
    assert_eq!(code, None);
}
