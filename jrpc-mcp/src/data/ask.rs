//! Asks a handler's questions of its client (elicitation, sampling, roots), one API in both eras:
//!
//! | era | how a question is asked |
//! | --- | --- |
//! | legacy | a request to the client on the call's own stream (its SSE answer over HTTP, the pipe over stdio), answered while the handler waits |
//! | modern | the handler is run again from the start: a question whose answer came with the retry (`inputResponses`, or earlier rounds' answers in the signed `requestState`) is answered at once; the others end the run, and the request is answered `input_required` with them |
//!
//! So in the modern era a handler asks first and acts after: what it does before a question is
//! done again on each retry. Each question has a key, unique in its handler; the client needs
//! the capability it asks for (`elicitation`, `url` elicitation, `sampling`, `roots`), else the
//! request is answered `-32021` naming it.

use crate::McpContext as _;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::request::{McpError, McpRequest, lock};
use crate::protocol::base64;
use crate::protocol::content::Role;
use crate::protocol::types::Era;
use jrpc_runtime::Caller as _;
use jrpc_runtime::Context;

/// Says what an elicitation asks the user: a form (a message and the flat JSON Schema of what to
/// fill in), or to visit a URL.
///
/// ```
/// use jrpc_mcp::Form;
/// use serde_json::json;
///
/// let name = Form::string("What is your name?", "name");
/// let choice = Form::new("Pick one", json!({
///     "type": "object",
///     "properties": { "color": { "type": "string", "enum": ["red", "blue"] } },
///     "required": ["color"],
/// }));
/// let login = Form::url("Sign in to continue", "https://example.com/login");
/// # let _ = (name, choice, login);
/// ```
#[derive(Clone, Debug)]
pub struct Form {
    message: String,
    kind: FormKind,
}

#[derive(Clone, Debug)]
enum FormKind {
    Schema(Value),
    Url(String),
}

impl Form {
    /// Returns a form: `message`, and `requested_schema` (an object of primitive properties)
    /// exactly as given.
    pub fn new(message: impl Into<String>, requested_schema: Value) -> Self {
        Self {
            message: message.into(),
            kind: FormKind::Schema(requested_schema),
        }
    }

    /// Returns a form of one required string, `field`.
    pub fn string(message: impl Into<String>, field: &str) -> Self {
        let schema = json!({
            "type": "object",
            "properties": { field: { "type": "string" } },
            "required": [field],
        });
        Self::new(message, schema)
    }

    /// Returns a URL for the user to visit (consent is the only answer; the rest happens there).
    pub fn url(message: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            kind: FormKind::Url(url.into()),
        }
    }

    /// `elicitation/create`'s params, as `era` has them.
    fn params(&self, era: Era) -> Value {
        match &self.kind {
            FormKind::Schema(schema) => {
                json!({ "mode": "form", "message": self.message, "requestedSchema": schema })
            }
            FormKind::Url(url) if era == Era::Legacy => {
                let mut id = [0u8; 12];
                let _ = getrandom::fill(&mut id);
                json!({ "mode": "url", "message": self.message, "url": url,
                        "elicitationId": base64::encode_url(&id) })
            }
            FormKind::Url(url) => json!({ "mode": "url", "message": self.message, "url": url }),
        }
    }
}

/// Says what sampling asks the client's model: messages and a token limit, and whatever else
/// `sampling/createMessage` takes.
///
/// ```
/// use jrpc_mcp::Sampling;
///
/// let ask = Sampling::user_text("What is the capital of France?").max_tokens(100);
/// # let _ = ask;
/// ```
#[derive(Clone, Debug)]
pub struct Sampling(Value);

impl Sampling {
    /// Takes `sampling/createMessage`'s params exactly as given.
    pub fn new(params: Value) -> Self {
        Self(params)
    }

    /// Returns one message from the user, `text`, answered in at most 1 000 tokens.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self(json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": text.into() } }],
            "maxTokens": 1000,
        }))
    }

    /// Sets the most tokens the answer may take.
    #[must_use]
    pub fn max_tokens(mut self, tokens: u32) -> Self {
        self.0["maxTokens"] = tokens.into();
        self
    }

    /// Sets the system prompt.
    #[must_use]
    pub fn system(mut self, prompt: impl Into<String>) -> Self {
        self.0["systemPrompt"] = prompt.into().into();
        self
    }
}

/// Holds the user's answer to an elicitation.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Elicited {
    /// Accepted, with what was filled in (nothing, for a URL).
    Accept(Map<String, Value>),
    /// Declined.
    Decline,
    /// Dismissed without a choice.
    Cancel,
}

impl Elicited {
    /// Reads an `ElicitResult`; `None` when `answer` is none.
    fn read(answer: &Value) -> Option<Self> {
        let content = match answer.get("content") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(content)) => content.clone(),
            Some(_) => return None,
        };
        match answer.get("action")?.as_str()? {
            "accept" => Some(Self::Accept(content)),
            "decline" => Some(Self::Decline),
            "cancel" => Some(Self::Cancel),
            _ => None,
        }
    }

    /// Returns what was filled in, when accepted.
    pub fn content(&self) -> Option<&Map<String, Value>> {
        match self {
            Self::Accept(content) => Some(content),
            _ => None,
        }
    }

    /// Returns the field `name` of an accepted form, decoded.
    ///
    /// # Errors
    ///
    /// [`McpError::Declined`] when the user declined or cancelled; [`McpError::InvalidAnswer`]
    /// when the field is missing or does not decode.
    pub fn take<T: DeserializeOwned>(&self, name: &str) -> Result<T, McpError> {
        let content = self.content().ok_or(McpError::Declined)?;
        let value = content
            .get(name)
            .ok_or_else(|| McpError::InvalidAnswer(format!("no `{name}` in the answer")))?;
        T::deserialize(value).map_err(|err| McpError::InvalidAnswer(format!("`{name}`: {err}")))
    }
}

/// Holds the client's model's answer to sampling (`CreateMessageResult`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct SampledMessage {
    /// Who speaks (the model: `Assistant`).
    pub role: Role,
    /// What it says: a content block (or, for a model that used tools, several).
    pub content: Value,
    /// The model that answered.
    pub model: String,
    /// Why it stopped (`endTurn`, `maxTokens`...).
    #[serde(rename = "stopReason", default)]
    pub stop_reason: Option<String>,
}

impl SampledMessage {
    /// Returns the text it says, when its content is one text block.
    pub fn text(&self) -> Option<&str> {
        (self.content.get("type")? == "text")
            .then(|| self.content.get("text")?.as_str())
            .flatten()
    }
}

/// Describes a root the client shares: a `file://` URI, and a name.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct Root {
    /// Its URI.
    pub uri: String,
    /// Its name.
    #[serde(default)]
    pub name: Option<String>,
}

/// One question.
#[derive(Clone, Debug)]
enum Question {
    Elicit(Form),
    Sample(Sampling),
    Roots,
}

impl Question {
    fn method(&self) -> &'static str {
        match self {
            Self::Elicit(_) => "elicitation/create",
            Self::Sample(_) => "sampling/createMessage",
            Self::Roots => "roots/list",
        }
    }

    fn params(&self, era: Era) -> Value {
        match self {
            Self::Elicit(form) => form.params(era),
            Self::Sample(sampling) => sampling.0.clone(),
            Self::Roots => json!({}),
        }
    }

    /// Returns the capability the client must have declared, when it did not: `{"sampling": {}}`...
    fn missing(&self, declared: &Value) -> Option<Value> {
        let (name, inner) = match self {
            Self::Elicit(Form {
                kind: FormKind::Url(_),
                ..
            }) => ("elicitation", Some("url")),
            Self::Elicit(_) => ("elicitation", None),
            Self::Sample(_) => ("sampling", None),
            Self::Roots => ("roots", None),
        };
        let have = declared.get(name).filter(|v| v.is_object());
        let ok = match (have, inner) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(cap), Some(mode)) => cap.get(mode).is_some(),
        };
        (!ok).then(|| match inner {
            Some(mode) => json!({ name: { mode: {} } }),
            None => json!({ name: {} }),
        })
    }

    /// Reads the answer `value` as this question's, when it is one.
    fn read(&self, value: &Value) -> Option<Answer> {
        match self {
            Self::Elicit(_) => Elicited::read(value).map(Answer::Elicited),
            Self::Sample(_) => SampledMessage::deserialize(value).ok().map(Answer::Sampled),
            Self::Roots => {
                #[derive(Deserialize)]
                struct Listed {
                    roots: Vec<Root>,
                }
                Listed::deserialize(value)
                    .ok()
                    .map(|listed| Answer::Roots(listed.roots))
            }
        }
    }
}

/// One answer.
#[derive(Clone, Debug)]
enum Answer {
    Elicited(Elicited),
    Sampled(SampledMessage),
    Roots(Vec<Root>),
}

/// Asks several questions at once ([`Context::ask`]): in the modern era one round answers them
/// all; in the legacy era they are asked together.
#[derive(Debug)]
#[must_use = "the questions are asked by `send`"]
pub struct Ask<'a> {
    ctx: &'a Context,
    questions: Vec<(String, Question)>,
}

impl Ask<'_> {
    /// Asks the user to fill in `form`; its answer under `key`.
    pub fn elicit(mut self, key: &str, form: Form) -> Self {
        self.questions
            .push((key.to_owned(), Question::Elicit(form)));
        self
    }

    /// Asks the client's model; its answer under `key`.
    pub fn sample(mut self, key: &str, sampling: Sampling) -> Self {
        self.questions
            .push((key.to_owned(), Question::Sample(sampling)));
        self
    }

    /// Asks the client for its roots; the answer under `key`.
    pub fn roots(mut self, key: &str) -> Self {
        self.questions.push((key.to_owned(), Question::Roots));
        self
    }

    /// Asks, and gives the answers by key.
    ///
    /// # Errors
    ///
    /// [`McpError::MissingCapability`] when the client did not declare what a question needs;
    /// [`McpError::InputRequired`] in the modern era while answers are missing (the request is
    /// then answered `input_required`: return the error as it is);
    /// [`McpError::NoStream`] in the legacy era without a stream to ask on;
    /// [`McpError::NotSent`] when the client could not be asked or failed;
    /// [`McpError::InvalidAnswer`] for an answer that is not one; [`McpError::NotHere`] outside
    /// an MCP request, or in a modern request that cannot ask.
    pub async fn send(self) -> Result<Answers, McpError> {
        let req = self.ctx.mcp().ok_or(McpError::NotHere)?;
        let declared = req.client_capabilities();
        let missing = self
            .questions
            .iter()
            .find_map(|(_, question)| question.missing(declared));
        if let Some(required) = missing {
            lock(&req.inner.asks).missing = Some(required.clone());
            return Err(McpError::MissingCapability(required));
        }
        if let Some(task) = req.task_link() {
            return ask_task(&task, self.questions).await;
        }
        match req.era() {
            Era::Legacy => self.ask_now(req).await,
            _ => answered(req, self.questions),
        }
    }

    /// Asks in the legacy era: each question a request on the call's stream, together.
    async fn ask_now(self, req: &McpRequest) -> Result<Answers, McpError> {
        let peer = self.ctx.peer().ok_or(McpError::NoStream)?;
        let asked = self
            .questions
            .iter()
            .map(|(_, question)| peer.call::<Value>(question.method(), question.params(req.era())));
        let results = futures_util::future::join_all(asked).await;
        let mut answers = BTreeMap::new();
        for ((key, question), result) in self.questions.into_iter().zip(results) {
            let value = result?;
            let answer = question.read(&value).ok_or_else(|| {
                McpError::InvalidAnswer(format!("`{key}`: not an answer to {}", question.method()))
            })?;
            answers.insert(key, answer);
        }
        Ok(Answers(answers))
    }
}

/// Asks a task's questions through the task, the client answering with `tasks/update`.
async fn ask_task(
    task: &super::tasks::TaskLink,
    questions: Vec<(String, Question)>,
) -> Result<Answers, McpError> {
    let asked = questions
        .iter()
        .map(|(key, question)| {
            let request =
                json!({ "method": question.method(), "params": question.params(Era::Modern) });
            (key.clone(), request)
        })
        .collect();
    let mut given = task.ask(asked).await?;
    let mut answers = BTreeMap::new();
    for (key, question) in questions {
        let value = given.remove(&key).unwrap_or_default();
        let answer = question.read(&value).ok_or_else(|| {
            McpError::InvalidAnswer(format!("`{key}`: not an answer to {}", question.method()))
        })?;
        answers.insert(key, answer);
    }
    Ok(Answers(answers))
}

/// Returns, in the modern era, the answers the retry brought, or the questions left for the client.
fn answered(req: &McpRequest, questions: Vec<(String, Question)>) -> Result<Answers, McpError> {
    let mut asks = lock(&req.inner.asks);
    if !asks.open {
        return Err(McpError::NotHere);
    }
    let mut answers = BTreeMap::new();
    for (key, question) in questions {
        match asks
            .given
            .get(&key)
            .and_then(|value| Some((question.read(value)?, value)))
        {
            Some((answer, value)) => {
                let value = value.clone();
                asks.used.insert(key.clone(), value);
                answers.insert(key, answer);
            }
            None => {
                let request =
                    json!({ "method": question.method(), "params": question.params(Era::Modern) });
                asks.pending.insert(key, request);
            }
        }
    }
    if asks.pending.is_empty() {
        Ok(Answers(answers))
    } else {
        Err(McpError::InputRequired)
    }
}

/// Holds the answers to an [`Ask`], by key.
#[derive(Debug)]
pub struct Answers(BTreeMap<String, Answer>);

impl Answers {
    fn take(&mut self, key: &str) -> Result<Answer, McpError> {
        self.0
            .remove(key)
            .ok_or_else(|| McpError::InvalidAnswer(format!("no question `{key}` was asked")))
    }

    /// Returns the answer to the elicitation `key`.
    ///
    /// # Errors
    ///
    /// [`McpError::InvalidAnswer`] when no elicitation of that key was asked.
    pub fn elicited(&mut self, key: &str) -> Result<Elicited, McpError> {
        match self.take(key)? {
            Answer::Elicited(answer) => Ok(answer),
            _ => Err(McpError::InvalidAnswer(format!(
                "`{key}` was not an elicitation"
            ))),
        }
    }

    /// Returns the answer to the sampling `key`.
    ///
    /// # Errors
    ///
    /// [`McpError::InvalidAnswer`] when no sampling of that key was asked.
    pub fn sampled(&mut self, key: &str) -> Result<SampledMessage, McpError> {
        match self.take(key)? {
            Answer::Sampled(answer) => Ok(answer),
            _ => Err(McpError::InvalidAnswer(format!(
                "`{key}` was not a sampling"
            ))),
        }
    }

    /// Returns the roots asked as `key`.
    ///
    /// # Errors
    ///
    /// [`McpError::InvalidAnswer`] when no roots of that key were asked.
    pub fn roots(&mut self, key: &str) -> Result<Vec<Root>, McpError> {
        match self.take(key)? {
            Answer::Roots(roots) => Ok(roots),
            _ => Err(McpError::InvalidAnswer(format!("`{key}` was not roots"))),
        }
    }
}

pub(crate) fn ask(ctx: &Context) -> Ask<'_> {
    Ask {
        ctx,
        questions: Vec::new(),
    }
}

pub(crate) async fn elicit(ctx: &Context, key: &str, form: Form) -> Result<Elicited, McpError> {
    ctx.ask().elicit(key, form).send().await?.elicited(key)
}

pub(crate) async fn sample(
    ctx: &Context,
    key: &str,
    sampling: Sampling,
) -> Result<SampledMessage, McpError> {
    ctx.ask().sample(key, sampling).send().await?.sampled(key)
}

pub(crate) async fn roots(ctx: &Context, key: &str) -> Result<Vec<Root>, McpError> {
    ctx.ask().roots(key).send().await?.roots(key)
}
