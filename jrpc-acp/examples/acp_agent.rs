//! An ACP agent: one JSON message a line on stdio, protocol version 1, as editors start agents.
//!
//! ```text
//! cargo run -p jrpc-acp --example acp_agent
//! ```
//!
//! `session/new` gives a session id. `session/prompt` reads the prompt's text: `count N` sends
//! the chunks "1" .. "N", 100 ms apart, then ends the turn; `ask` asks the client's permission
//! (options `allow` and `reject`), then says the option chosen (or `cancelled`); anything else
//! is echoed. `session/cancel` ends the running turn `cancelled`, with no chunk after;
//! `$/cancel_request` naming a prompt answers it `-32800`; a prompt for an unknown session is an
//! error. Logs go to stderr only: stdout carries the protocol.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use jrpc_acp::schema::{
    Error, NewSessionRequest, NewSessionResponse, PermissionOption, PermissionOptionKind,
    PromptRequest, PromptResponse, RequestPermissionOutcome, StopReason, ToolCallUpdate,
    ToolCallUpdateFields,
};
use jrpc_acp::{Acp, Agent, Client, Session};

/// The agent: it counts, asks and echoes.
#[derive(Debug, Default)]
pub struct Example {
    sessions: AtomicU64,
}

impl Agent for Example {
    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: Client,
    ) -> Result<NewSessionResponse, Error> {
        let n = self.sessions.fetch_add(1, Ordering::Relaxed) + 1;
        Ok(NewSessionResponse::new(format!("session-{n}")))
    }

    async fn prompt(
        &self,
        request: PromptRequest,
        session: Session,
    ) -> Result<PromptResponse, Error> {
        let text = jrpc_acp::text_of(&request.prompt);
        if let Some(n) = text.strip_prefix("count ") {
            let n: u32 = n.trim().parse().map_err(|_| Error::invalid_params())?;
            for i in 1..=n {
                if i > 1 {
                    // A `session/cancel` drops the turn here, answered `cancelled`.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                session.say(i.to_string()).await?;
            }
        } else if text == "ask" {
            let options = vec![
                PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
                PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
            ];
            let tool_call = ToolCallUpdate::new("ask", ToolCallUpdateFields::new().title("ask"));
            let chosen = match session.request_permission(tool_call, options).await? {
                RequestPermissionOutcome::Selected(selected) => selected.option_id.to_string(),
                _ => "cancelled".to_owned(),
            };
            session.say(chosen).await?;
        } else {
            session.say(text).await?;
        }
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    jrpc_examples::log_to_stderr();
    let acp = Acp::builder(Example::default())
        .info("acp_agent", env!("CARGO_PKG_VERSION"))
        .build()?;
    acp.serve_stdio().await?;
    Ok(())
}
