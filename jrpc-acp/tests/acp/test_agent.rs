//! An agent whose prompts exercise the rest of the crate: the client's file and terminal methods,
//! a turn that runs on when cancelled, a session loaded.

use jrpc_acp::schema::{
    Error, LoadSessionRequest, LoadSessionResponse, NewSessionRequest, NewSessionResponse,
    PromptRequest, PromptResponse, StopReason,
};
use jrpc_acp::{Agent, Client, Session};

/// Reads its prompt as a command: `read PATH`, `write PATH TEXT`, `run COMMAND` (a terminal:
/// its output when it exits), `linger` (runs on when cancelled, says `bye`, and claims
/// `end_turn`), `fail`; and loads any session, replaying `replayed`.
#[derive(Debug, Default)]
pub struct TestAgent;

impl Agent for TestAgent {
    async fn new_session(
        &self,
        request: NewSessionRequest,
        _: Client,
    ) -> Result<NewSessionResponse, Error> {
        Ok(NewSessionResponse::new(format!(
            "in-{}",
            request.cwd.display()
        )))
    }

    async fn prompt(
        &self,
        request: PromptRequest,
        session: Session,
    ) -> Result<PromptResponse, Error> {
        let text = jrpc_acp::text_of(&request.prompt);
        let mut words = text.splitn(3, ' ');
        match (words.next(), words.next(), words.next()) {
            (Some("read"), Some(path), None) => {
                let content = session.read_text_file(path).await?;
                session.say(content).await?;
            }
            (Some("write"), Some(path), Some(content)) => {
                session.write_text_file(path, content).await?;
                session.say("written").await?;
            }
            (Some("run"), Some(command), None) => {
                let terminal = session.create_terminal(command, vec![]).await?;
                let status = terminal.wait_for_exit().await?;
                let output = terminal.output().await?;
                terminal.release().await?;
                session
                    .say(format!("{} {:?}", output.output, status.exit_code))
                    .await?;
            }
            (Some("linger"), None, None) => {
                session.keep_running_when_cancelled();
                session.cancelled().await;
                assert!(session.is_cancelled());
                session.say("bye").await?;
            }
            (Some("fail"), None, None) => {
                session.keep_running_when_cancelled();
                session.cancelled().await;
                return Err(Error::internal_error().data("interrupted"));
            }
            _ => return Err(Error::invalid_params().data(text)),
        }
        Ok(PromptResponse::new(StopReason::EndTurn))
    }

    async fn load_session(
        &self,
        _: LoadSessionRequest,
        session: Session,
    ) -> Result<LoadSessionResponse, Error> {
        assert!(!session.is_cancelled());
        session.say("replayed").await?;
        Ok(LoadSessionResponse::new())
    }
}
