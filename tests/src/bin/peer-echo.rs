//! A small JSON-RPC server on stdin and stdout, for the stdio tests.
//!
//! ```text
//! peer-echo [--content-length] [--linger]
//! ```
//!
//! `--content-length` picks LSP framing (the default is one message a line); `--linger` keeps the
//! process alive for ten minutes after its input ends, so a test can tell a killed child from one
//! that exited by itself.

use std::time::Duration;

use jrpc_runtime::{Caller as _, Context, Framing, Methods, PeerConfig, RpcError, Whole, stdio};
use serde_json::Value;

fn methods() -> Result<Methods, jrpc_runtime::RegisterError> {
    let mut methods = Methods::new();
    methods
        .register("pid", &[], |(): (), _ctx| async {
            Ok::<_, RpcError>(std::process::id())
        })?
        .register("add", &["a", "b"], |(a, b): (i64, i64), _ctx| async move {
            Ok::<_, RpcError>(a.wrapping_add(b))
        })?
        .register(
            "echo",
            &[],
            |Whole(params): Whole<Value>, _ctx| async move { Ok::<_, RpcError>(params) },
        )?
        .register("sleep", &["ms"], |(ms,): (u64,), _ctx| async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok::<_, RpcError>(ms)
        })?
        .register("hang", &[], |(): (), _ctx| async {
            std::future::pending::<()>().await;
            Ok::<_, RpcError>(())
        })?
        // Calls the parent's `answer` with `question` and answers what the parent said.
        .register(
            "ask",
            &["question"],
            |(question,): (String,), ctx: Context| async move {
                let peer = ctx.peer().ok_or_else(|| RpcError::new(1, "no peer"))?;
                peer.call::<Value>("answer", [question])
                    .await
                    .map_err(|err| RpcError::new(2, err.to_string()))
            },
        )?
        // Sends `tick [n]` for n in 1..=count, then answers `count`.
        .register(
            "ticks",
            &["count"],
            |(count,): (u32,), ctx: Context| async move {
                let peer = ctx.peer().ok_or_else(|| RpcError::new(1, "no peer"))?;
                for n in 1..=count {
                    peer.notify("tick", [n])
                        .await
                        .map_err(|err| RpcError::new(2, err.to_string()))?;
                }
                Ok::<_, RpcError>(count)
            },
        )?
        // Calls the parent's `answer` in the background: the parent is called while it calls
        // nothing itself.
        .register_notification("call_me", &[], |(): (), ctx: Context| async move {
            if let Some(peer) = ctx.peer().cloned() {
                tokio::spawn(async move {
                    let _ = peer.call::<Value>("answer", ["later"]).await;
                });
            }
        })?
        .register_notification("quit", &[], |(): (), _ctx| async { std::process::exit(0) })?;
    Ok(methods)
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let has = |flag: &str| args.iter().any(|arg| arg == flag);
    let framing = if has("--content-length") {
        Framing::ContentLength
    } else {
        Framing::Lines
    };
    let methods = methods().map_err(std::io::Error::other)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(stdio::serve(
        methods,
        PeerConfig::default().with_framing(framing),
    ))?;
    if has("--linger") {
        std::thread::sleep(Duration::from_secs(600));
    }
    Ok(())
}
