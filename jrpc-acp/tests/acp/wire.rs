//! The client's side of a connection as lines of JSON: the test writes each message and reads
//! each one the agent sends, in order.

use std::time::Duration;

use jrpc_acp::Acp;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream, Lines};
use tokio::io::{ReadHalf, WriteHalf};

/// How long (virtual time) a test waits for a message before it fails: far longer than any
/// agent here takes, so that a missing message fails the test rather than hanging it.
const PATIENCE: Duration = Duration::from_secs(600);

/// A connection to an agent, from the client's side.
pub struct Wire {
    write: WriteHalf<DuplexStream>,
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
}

impl Wire {
    /// Serves `acp` on a new in-memory connection.
    pub fn start(acp: &Acp) -> Wire {
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(theirs);
        let (_peer, driver) = acp.connect(read, write).expect("valid settings");
        tokio::spawn(driver);
        let (read, write) = tokio::io::split(ours);
        Wire {
            write,
            lines: BufReader::new(read).lines(),
        }
    }

    /// Serves `acp`, and has the client initialize with `capabilities`.
    pub async fn initialized(acp: &Acp, capabilities: Value) -> Wire {
        let mut wire = Wire::start(acp);
        let answer = wire
            .call(
                0,
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": capabilities}),
            )
            .await;
        assert_eq!(answer["result"]["protocolVersion"], 1, "{answer}");
        wire
    }

    /// Writes `text` and a newline.
    pub async fn send_text(&mut self, text: &str) {
        self.write
            .write_all(format!("{text}\n").as_bytes())
            .await
            .expect("the agent reads");
    }

    /// Writes `message`.
    pub async fn send(&mut self, message: Value) {
        self.send_text(&message.to_string()).await;
    }

    /// Sends the request `method` with `id`.
    pub async fn request(&mut self, id: i64, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
    }

    /// Sends the notification `method`.
    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// Sends a request and returns the next message, which must be its answer.
    pub async fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.request(id, method, params).await;
        let answer = self.recv().await;
        assert_eq!(
            answer["id"], id,
            "expected the answer to {method}, got {answer}"
        );
        answer
    }

    /// Returns the next message the agent sends.
    pub async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE, self.lines.next_line())
            .await
            .expect("a message within the test's patience")
            .expect("the connection reads")
            .expect("the agent is still there");
        serde_json::from_str(&line).unwrap_or_else(|err| panic!("{line}: {err}"))
    }

    /// Returns the messages the agent sends up to and with the answer to `id`.
    pub async fn until_answer(&mut self, id: i64) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let message = self.recv().await;
            if message["id"] == id && message.get("method").is_none() {
                return (before, message);
            }
            before.push(message);
        }
    }

    /// Asserts that the agent sends nothing for a while (virtual time).
    pub async fn assert_quiet(&mut self) {
        let next = tokio::time::timeout(Duration::from_secs(5), self.lines.next_line()).await;
        assert!(next.is_err(), "unexpected message: {next:?}");
    }

    /// Opens a session and returns its id.
    pub async fn new_session(&mut self, id: i64) -> String {
        let answer = self
            .call(id, "session/new", json!({"cwd": "/tmp", "mcpServers": []}))
            .await;
        answer["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("a session id in {answer}"))
            .to_owned()
    }

    /// Sends the prompt `text` to `session` as request `id`.
    pub async fn prompt(&mut self, id: i64, session: &str, text: &str) {
        let prompt = json!([{"type": "text", "text": text}]);
        self.request(
            id,
            "session/prompt",
            json!({"sessionId": session, "prompt": prompt}),
        )
        .await;
    }
}

/// Returns the text of the agent message chunks among `messages`, each checked to be an update of
/// `session`.
pub fn chunks(messages: &[Value], session: &str) -> Vec<String> {
    messages
        .iter()
        .map(|message| {
            assert_eq!(message["method"], "session/update", "{message}");
            assert_eq!(message["params"]["sessionId"], session, "{message}");
            let update = &message["params"]["update"];
            assert_eq!(update["sessionUpdate"], "agent_message_chunk", "{message}");
            update["content"]["text"]
                .as_str()
                .unwrap_or_else(|| panic!("a text chunk in {message}"))
                .to_owned()
        })
        .collect()
}
