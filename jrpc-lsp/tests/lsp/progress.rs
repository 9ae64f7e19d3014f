//! Work-done progress: `begin`, reports, then `end` before the answer, whether the request
//! finishes, fails, panics or is cancelled (by `$/cancelRequest` or the progress' cancel button).

use std::time::Duration;

use jrpc_lsp::lsp_types::{InitializeParams, InitializeResult, WorkDoneProgressParams};
use jrpc_lsp::{LspContext as _, LspServer};
use jrpc_runtime::{Context, RpcError, rpc_service};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::editor::{Editor, bounded, start};

#[derive(Deserialize)]
struct CountParams {
    n: u32,
    #[serde(default)]
    fail: bool,
    #[serde(default)]
    panic: bool,
    #[serde(flatten)]
    progress: WorkDoneProgressParams,
}

struct Counter;

#[rpc_service]
impl Counter {
    #[rpc(params = whole)]
    async fn initialize(&self, _params: InitializeParams) -> InitializeResult {
        InitializeResult::default()
    }

    /// Counts to `n`, a second a step, reporting each; then fails, panics or answers `n`.
    #[rpc(name = "test/count", params = whole)]
    async fn count(&self, ctx: &Context, params: CountParams) -> Result<u32, RpcError> {
        let token = params.progress.work_done_token;
        let work = ctx.work_done(token, "Counting").cancellable(true);
        work.run(|progress| async move {
            for i in 1..=params.n {
                tokio::time::sleep(Duration::from_secs(1)).await;
                progress
                    .report(Some(&i.to_string()), Some(i * 100 / params.n))
                    .await;
            }
            assert!(!params.panic, "miscounted");
            if params.fail {
                return Err(RpcError::new(1, "counted wrong"));
            }
            Ok(params.n)
        })
        .await
    }
}

/// What a message is, in a word or two: `begin Counting`, `report 1`, `end cancelled`, `answer
/// 3`, `error -32800`.
fn summary(message: &Value) -> String {
    if message["method"] == "$/progress" {
        assert_eq!(message["params"]["token"], "t", "{message}");
        let value = &message["params"]["value"];
        let text = match value["kind"].as_str() {
            Some("begin") => value["title"].as_str(),
            Some("report" | "end") => value["message"].as_str(),
            _ => panic!("not a work-done progress: {message}"),
        };
        return format!(
            "{} {}",
            value["kind"].as_str().unwrap_or_default(),
            text.unwrap_or("-")
        );
    }
    match message.get("error") {
        Some(error) => format!("error {}", error["code"]),
        None => format!("answer {}", message["result"]),
    }
}

/// Starts a counter, initialized, and asks it to count with `params` (id 7, token `"t"`).
async fn counting(params: Value) -> Editor {
    let (mut editor, _serving) = start(LspServer::new(Counter.into_methods()));
    editor.initialize(None).await;
    let mut params = params;
    params["workDoneToken"] = json!("t");
    editor
        .send(json!({"jsonrpc": "2.0", "id": 7, "method": "test/count", "params": params}))
        .await;
    editor
}

async fn summaries(editor: &mut Editor, n: usize) -> Vec<String> {
    let mut seen = Vec::new();
    for _ in 0..n {
        seen.push(summary(&editor.recv().await));
    }
    seen
}

#[tokio::test(start_paused = true)]
async fn end_follows_the_reports_and_precedes_the_answer() {
    bounded(async {
        let mut editor = counting(json!({"n": 2})).await;
        assert_eq!(
            summaries(&mut editor, 5).await,
            [
                "begin Counting",
                "report 1",
                "report 2",
                "end -",
                "answer 2"
            ]
        );
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_failure_ends_the_progress_with_its_message_then_answers() {
    bounded(async {
        let mut editor = counting(json!({"n": 1, "fail": true})).await;
        assert_eq!(
            summaries(&mut editor, 4).await,
            ["begin Counting", "report 1", "end counted wrong", "error 1"]
        );
        let mut editor = counting(json!({"n": 1, "panic": true})).await;
        assert_eq!(
            summaries(&mut editor, 4).await,
            ["begin Counting", "report 1", "end -", "error -32603"]
        );
    })
    .await;
}

/// Cancelled by `$/cancelRequest` or by the progress' cancel button: `end`, then `-32800`,
/// then nothing more of the request (the next message is the next call's answer).
#[tokio::test(start_paused = true)]
async fn a_cancelled_request_ends_its_progress_then_answers_cancelled() {
    bounded(async {
        for cancel in [
            json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 7}}),
            json!({"jsonrpc": "2.0", "method": "window/workDoneProgress/cancel",
                   "params": {"token": "t"}}),
        ] {
            let mut editor = counting(json!({"n": 3})).await;
            let begin = editor.recv().await;
            assert_eq!(begin["params"]["value"]["cancellable"], true, "{begin}");
            assert_eq!(summary(&editor.recv().await), "report 1");
            editor.send(cancel.clone()).await;
            assert_eq!(
                summaries(&mut editor, 2).await,
                ["end cancelled", "error -32800"],
                "{cancel}"
            );
            let next = editor.call(8, "shutdown", Value::Null).await;
            assert_eq!(next["result"], Value::Null, "{next}");
        }
    })
    .await;
}

/// Without a token nothing is sent but the answer, and a cancel drops the request as any
/// other's (the connection answers `-32800`).
#[tokio::test(start_paused = true)]
async fn without_a_token_the_work_runs_alone() {
    bounded(async {
        let (mut editor, _serving) = start(LspServer::new(Counter.into_methods()));
        editor.initialize(None).await;
        let counted = editor.call(1, "test/count", json!({"n": 2})).await;
        assert_eq!(counted["result"], 2);
        editor
            .send(json!({"jsonrpc": "2.0", "id": 2, "method": "test/count", "params": {"n": 5}}))
            .await;
        editor.notify("$/cancelRequest", json!({"id": 2})).await;
        let cancelled = editor.recv().await;
        assert_eq!(summary(&cancelled), "error -32800");
    })
    .await;
}
