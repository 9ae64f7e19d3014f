//! The protocol's lifecycle, kept by the crate: what is refused before `initialize` and after
//! `shutdown`, how serving ends and with which status.

use jrpc_lsp::{Exit, LspServer};
use jrpc_runtime::RpcError;
use serde_json::{Value, json};

use crate::editor::{basic, bounded, code, reported, start};

#[tokio::test(start_paused = true)]
async fn requests_before_initialize_are_refused_and_notifications_dropped() {
    bounded(async {
        let (mut methods, notes) = basic();
        let reports = reported(&mut methods);
        let (mut editor, serving) = start(LspServer::new(methods));
        let early = editor.call(1, "echo", json!({"text": "early"})).await;
        assert_eq!(code(&early), -32002, "ServerNotInitialized: {early}");
        editor.notify("note", json!({"text": "early"})).await;
        editor.initialize(None).await;
        editor.notify("note", json!({"text": "late"})).await;
        let echo = editor.call(2, "echo", json!({"text": "hi"})).await;
        assert_eq!(echo["result"], "hi");
        // The early note never ran, and was reported; the late one ran.
        assert_eq!(*notes.lock().unwrap(), ["late"]);
        assert_eq!(*reports.lock().unwrap(), ["note"]);
        editor.close().await;
        assert_eq!(serving.await.unwrap().unwrap(), Exit::InputEnded);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn initialize_is_taken_once_and_again_after_it_failed() {
    bounded(async {
        let (methods, _) = basic();
        let (mut editor, _serving) = start(LspServer::new(methods));
        let bad = editor
            .call(1, "initialize", json!({"capabilities": 7}))
            .await;
        assert_eq!(code(&bad), -32602, "{bad}");
        let still = editor.call(2, "echo", json!({"text": "x"})).await;
        assert_eq!(
            code(&still),
            -32002,
            "a failed initialize initializes nothing"
        );
        editor.initialize(None).await;
        let again = editor
            .call(3, "initialize", json!({"capabilities": {}}))
            .await;
        assert_eq!(code(&again), -32600, "{again}");
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn after_shutdown_requests_are_invalid_and_exit_is_clean() {
    bounded(async {
        let (mut methods, notes) = basic();
        let reports = reported(&mut methods);
        let (mut editor, serving) = start(LspServer::new(methods));
        editor.initialize(None).await;
        let shutdown = editor.call(1, "shutdown", Value::Null).await;
        assert_eq!(
            shutdown,
            json!({"jsonrpc": "2.0", "id": 1, "result": null}),
            "answered by the crate: the table has no `shutdown`"
        );
        let late = editor.call(2, "echo", json!({"text": "late"})).await;
        assert_eq!(code(&late), -32600, "{late}");
        let twice = editor.call(3, "shutdown", Value::Null).await;
        assert_eq!(code(&twice), -32600, "{twice}");
        editor.notify("note", json!({"text": "late"})).await;
        editor
            .send(json!({"jsonrpc": "2.0", "method": "exit"}))
            .await;
        assert_eq!(serving.await.unwrap().unwrap(), Exit::Clean);
        assert_eq!(Exit::Clean.code(), 0);
        assert!(notes.lock().unwrap().is_empty());
        assert_eq!(*reports.lock().unwrap(), ["note"]);
    })
    .await;
}

/// lsp4j's, Eglot's and Vim's clients send `"params": null`.
#[tokio::test(start_paused = true)]
async fn shutdown_and_exit_with_null_params_are_clean() {
    bounded(async {
        let (methods, _) = basic();
        let (mut editor, serving) = start(LspServer::new(methods));
        editor.initialize(None).await;
        let shutdown = editor.call(1, "shutdown", Value::Null).await;
        assert_eq!(shutdown["result"], Value::Null);
        assert!(shutdown.get("error").is_none(), "{shutdown}");
        editor
            .send(json!({"jsonrpc": "2.0", "method": "exit", "params": null}))
            .await;
        assert_eq!(serving.await.unwrap().unwrap(), Exit::Clean);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn exit_without_shutdown_and_end_of_input_are_status_1() {
    bounded(async {
        let (methods, _) = basic();
        let (mut editor, serving) = start(LspServer::new(methods.clone()));
        editor.initialize(None).await;
        editor.notify("exit", Value::Null).await;
        let exit = serving.await.unwrap().unwrap();
        assert_eq!((exit, exit.code()), (Exit::WithoutShutdown, 1));

        // `exit` before `initialize` ends serving too.
        let (mut editor, serving) = start(LspServer::new(methods.clone()));
        editor.notify("exit", Value::Null).await;
        assert_eq!(serving.await.unwrap().unwrap(), Exit::WithoutShutdown);

        let (mut editor, serving) = start(LspServer::new(methods));
        editor.initialize(None).await;
        editor.call(1, "shutdown", Value::Null).await;
        editor.close().await;
        let exit = serving.await.unwrap().unwrap();
        assert_eq!((exit, exit.code()), (Exit::InputEnded, 1));
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn the_tables_own_shutdown_runs_and_dollar_notifications_are_ignored() {
    bounded(async {
        let (mut methods, _) = basic();
        methods
            .register("shutdown", &[], |(): (), _ctx| async {
                Ok::<_, RpcError>("flushed")
            })
            .unwrap();
        let reports = reported(&mut methods);
        let (mut editor, serving) = start(LspServer::new(methods));
        editor.initialize(None).await;
        editor
            .notify("$/setTrace", json!({"value": "verbose"}))
            .await;
        editor.notify("unknown/thing", json!({})).await;
        let shutdown = editor.call(1, "shutdown", Value::Null).await;
        assert_eq!(shutdown["result"], "flushed");
        // `$/setTrace`, which the table lacks, is ignored as the specification allows; an
        // unknown notification of another name is reported.
        assert_eq!(*reports.lock().unwrap(), ["unknown/thing"]);
        let unknown = editor.call(2, "$/unknownRequest", json!({})).await;
        assert_eq!(code(&unknown), -32600, "after shutdown: {unknown}");
        editor.notify("exit", json!({})).await;
        assert_eq!(serving.await.unwrap().unwrap(), Exit::Clean);
    })
    .await;
}
