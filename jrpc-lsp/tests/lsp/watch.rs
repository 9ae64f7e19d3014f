//! The client's process, named by `initialize`'s `processId`, is watched: serving ends when it is
//! gone. A real child process gives a process id that is gone; the paused clock runs the checks.

use std::time::Duration;

use jrpc_lsp::{Exit, LspServer};
use serde_json::{Value, json};

use crate::editor::{basic, bounded, start};

/// The id of a process that has ended and been reaped.
fn gone_process() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

fn initialize(process_id: u32) -> Value {
    let params = json!({"processId": process_id, "rootUri": null, "capabilities": {}});
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
}

#[tokio::test(start_paused = true)]
async fn serving_ends_when_the_clients_process_is_gone() {
    bounded(async {
        let (methods, _) = basic();
        let (mut editor, serving) = start(LspServer::new(methods));
        // Not awaiting the answer: serving may end before it is written.
        editor.send(initialize(gone_process())).await;
        let exit = serving.await.unwrap().unwrap();
        assert_eq!((exit, exit.code()), (Exit::ClientGone, 1));
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_live_client_or_no_watch_keeps_serving() {
    bounded(async {
        for (process, watch) in [
            (std::process::id(), Some(Duration::from_secs(1))),
            (gone_process(), None),
        ] {
            let (methods, _) = basic();
            let server = LspServer::new(methods).watch_client(watch);
            let (mut editor, serving) = start(server);
            editor.send(initialize(process)).await;
            assert_eq!(editor.recv().await["id"], 0);
            // An hour of checks (none, without the watch).
            tokio::time::sleep(Duration::from_secs(3600)).await;
            let echo = editor.call(1, "echo", json!({"text": "still here"})).await;
            assert_eq!(echo["result"], "still here");
            editor.notify("exit", Value::Null).await;
            assert_eq!(serving.await.unwrap().unwrap(), Exit::WithoutShutdown);
        }
    })
    .await;
}
