//! The `acp_agent` example of jrpc-acp on the official ACP Rust SDK (`agent-client-protocol`
//! 5.2.0): the same behaviour, for counting lines side by side (bench/README.md).
//!
//! `session/new` gives a session id. `session/prompt` reads the prompt's text: `count N` sends
//! the chunks "1" .. "N", 100 ms apart, then ends the turn; `ask` asks the client's permission
//! (options `allow` and `reject`), then says the option chosen (or `cancelled`); anything else
//! is echoed. `session/cancel` ends the running turn `cancelled`, with no chunk after;
//! `$/cancel_request` naming a prompt answers it `-32800`; a prompt for an unknown session is an
//! error.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, ContentChunk, Implementation, InitializeRequest,
    InitializeResponse, NewSessionRequest, NewSessionResponse, PermissionOption,
    PermissionOptionKind, PromptRequest, PromptResponse, RequestPermissionOutcome,
    RequestPermissionRequest, SessionId, SessionNotification, SessionUpdate, StopReason,
    ToolCallUpdate, ToolCallUpdateFields,
};
use agent_client_protocol::v1::{ConnectionTo, Responder, schema};
use agent_client_protocol::{Agent, Client, Error, Stdio};
use tokio::sync::watch;

/// The sessions opened, each with the count of `session/cancel`s it received, which its turn
/// watches.
#[derive(Clone, Default)]
struct Sessions(Arc<Mutex<HashMap<SessionId, watch::Sender<u64>>>>);

impl Sessions {
    fn open(&self) -> SessionId {
        let mut sessions = self.0.lock().expect("not poisoned");
        let id = SessionId::new(format!("session-{}", sessions.len() + 1));
        sessions.insert(id.clone(), watch::channel(0).0);
        id
    }

    fn cancels(&self, id: &SessionId) -> Option<watch::Receiver<u64>> {
        self.0
            .lock()
            .expect("not poisoned")
            .get(id)
            .map(watch::Sender::subscribe)
    }

    fn cancel(&self, id: &SessionId) {
        if let Some(cancels) = self.0.lock().expect("not poisoned").get(id) {
            cancels.send_modify(|n| *n += 1);
        }
    }
}

/// Runs a turn to its end; the caller drops it when the turn is cancelled.
async fn turn(request: PromptRequest, cx: ConnectionTo<Client>) -> Result<StopReason, Error> {
    let say = |text: String| {
        let chunk = ContentChunk::new(ContentBlock::from(text));
        let update = SessionUpdate::AgentMessageChunk(chunk);
        cx.send_notification(SessionNotification::new(request.session_id.clone(), update))
    };
    let text: String = request
        .prompt
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect();
    if let Some(n) = text.strip_prefix("count ") {
        let n: u32 = n.trim().parse().map_err(|_| Error::invalid_params())?;
        for i in 1..=n {
            if i > 1 {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            say(i.to_string())?;
        }
    } else if text == "ask" {
        let options = vec![
            PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
        ];
        let tool_call = ToolCallUpdate::new("ask", ToolCallUpdateFields::new().title("ask"));
        let ask = RequestPermissionRequest::new(request.session_id.clone(), tool_call, options);
        let chosen = match cx.send_request(ask).block_task().await?.outcome {
            RequestPermissionOutcome::Selected(selected) => selected.option_id.to_string(),
            _ => "cancelled".to_owned(),
        };
        say(chosen)?;
    } else {
        say(text)?;
    }
    Ok(StopReason::EndTurn)
}

#[tokio::main]
async fn main() -> agent_client_protocol::Result<()> {
    let sessions = Sessions::default();
    let (opened, cancelled) = (sessions.clone(), sessions.clone());
    Agent
        .v1()
        .name("acp_agent")
        .on_receive_request(
            async move |_: InitializeRequest, responder: Responder<InitializeResponse>, _| {
                let info = Implementation::new("acp_agent", env!("CARGO_PKG_VERSION"));
                responder.respond(InitializeResponse::new(ProtocolVersion::V1).agent_info(info))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_: NewSessionRequest, responder: Responder<NewSessionResponse>, _| {
                responder.respond(NewSessionResponse::new(opened.open()))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest,
                        responder: Responder<PromptResponse>,
                        cx: ConnectionTo<Client>| {
                let Some(mut cancels) = sessions.cancels(&request.session_id) else {
                    let unknown = schema::Error::session_not_found(request.session_id);
                    return responder.respond_with_error(unknown.into());
                };
                // A long turn holds no handler: it runs in a task of its own, until it ends, the
                // session is cancelled (`cancelled`), or its request is (`-32800`).
                let cancellation = responder.cancellation();
                cx.clone().spawn(async move {
                    let turn = cancellation.run_until_cancelled(turn(request, cx));
                    let stop = tokio::select! {
                        stop = turn => stop,
                        _ = cancels.changed() => Ok(StopReason::Cancelled),
                    };
                    responder.respond_with_result(stop.map(PromptResponse::new))
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notice: CancelNotification, _| {
                cancelled.cancel(&notice.session_id);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await
}
