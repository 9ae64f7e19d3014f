//! The MCP endpoint: one HTTP request in, one response out, by the rules of Streamable HTTP
//! (see the [module docs](crate::mcp)).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use ::http::header::{ALLOW, HeaderName};
use ::http::request::Parts;
use ::http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use hyper::body::Body;
use serde_json::value::RawValue;

use super::config::Settings;
use super::modern;
use super::session::{Cancellable, GET_STREAM, Listening, Refused, Session, Sessions};
use crate::dispatch::{Methods, TraceContext};
use crate::http::auth::Grant;
use crate::http::body::{read_post, unread_reply};
use crate::http::events::{EventLog, parse_event_id};
use crate::http::reply::{self, ResponseBody};
use crate::http::request_id::Tags;
use crate::http::service::BoxError;
use crate::http::sse::{self, Replies};
use crate::mcp::data::{Mcp, StreamCloser};
use crate::peer::Cancellation;
use crate::server::Shutdown;
use crate::server::reply::{envelope, refusal};
use crate::transport::RequestTag;
use crate::transport::Transport;
use crate::wire::{ErrorCode, RpcError};
use crate::wire::{Incoming, id_of, incoming};

/// `Mcp-Session-Id`.
pub(super) fn session_header() -> HeaderName {
    HeaderName::from_static("mcp-session-id")
}

/// `MCP-Protocol-Version`.
pub(super) fn version_header() -> HeaderName {
    HeaderName::from_static("mcp-protocol-version")
}

/// `Last-Event-ID`.
fn last_event_header() -> HeaderName {
    HeaderName::from_static("last-event-id")
}

/// The MCP endpoint alone: a [`tower_service::Service`] and a [`hyper::service::Service`], to
/// mount at a path of another router; [`McpServer`](super::McpServer) serves it at its `path`.
/// It answers whatever reaches it by the rules in the [module docs](crate::mcp).
///
/// Cloning is cheap: clones share the sessions, the table and the shutdown state.
#[derive(Clone)]
pub struct McpService {
    pub(super) shared: Arc<McpShared>,
    pub(super) peer_addr: Option<SocketAddr>,
}

impl std::fmt::Debug for McpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpService")
            .field("sessions", &self.shared.sessions.len())
            .finish_non_exhaustive()
    }
}

/// What the clones of an [`McpService`] share.
pub(super) struct McpShared {
    /// The server, for what it says of its tools beyond the table (their `x-mcp-header`s).
    pub(super) mcp: Mcp,
    pub(super) methods: Methods,
    pub(super) settings: Settings,
    sessions: Sessions,
    shutdown: Arc<Shutdown>,
    tags: Tags,
    /// Whether the task that ends sessions at a shutdown runs.
    watching: AtomicBool,
    /// Requests without a session (the modern era's, and the legacy era's in stateless mode):
    /// the events of their streams, and where answers to their calls go.
    pub(super) log: Arc<EventLog>,
    pub(super) replies: Arc<Replies>,
    pub(super) next_stream: AtomicU64,
    /// Cancelled when a shutdown begins: modern listen streams end then.
    pub(super) closing: tokio_util::sync::CancellationToken,
}

/// What a POST's body holds.
enum Posted {
    /// A request with an id (alone or in a batch): it is answered.
    Calls,
    /// Notifications and answers only.
    NoCalls,
}

impl McpService {
    pub(crate) fn new(
        mcp: Mcp,
        methods: Methods,
        settings: Settings,
        shutdown: Arc<Shutdown>,
    ) -> Self {
        let sessions = Sessions::new(
            settings.max_sessions,
            settings.session_idle_timeout,
            (settings.replay_buffer, settings.sse_retry),
            settings.streams.clone(),
        );
        Self {
            shared: Arc::new(McpShared {
                mcp,
                methods,
                settings,
                sessions,
                shutdown,
                tags: Tags::default(),
                watching: AtomicBool::new(false),
                log: EventLog::new(0),
                replies: Replies::new(),
                next_stream: AtomicU64::new(1),
                closing: tokio_util::sync::CancellationToken::new(),
            }),
            peer_addr: None,
        }
    }

    /// This service, telling handlers that its requests come from `addr`; for a service that
    /// serves one connection.
    #[must_use]
    pub fn with_peer_addr(mut self, addr: SocketAddr) -> Self {
        self.peer_addr = Some(addr);
        self
    }

    /// How many sessions are open.
    pub fn sessions(&self) -> usize {
        self.shared.sessions.len()
    }

    /// The shutdown state it shares with its server: sessions end when a shutdown begins.
    pub(crate) fn shutdown(&self) -> &Arc<Shutdown> {
        &self.shared.shutdown
    }

    /// [`serve`](Self::serve), owning what it serves with: what the HTTP services call. A
    /// request's context is made where its body is read, not in a connection's `room`.
    fn answer<B: Body<Data: Send, Error: Into<BoxError>> + Send + 'static>(
        self,
        req: Request<B>,
        tag: Option<RequestTag>,
        in_flight: crate::server::Tracked,
        ends: Option<crate::http::Ends>,
        _room: Option<&crate::dispatch::ContextRoom>,
    ) -> impl Future<Output = Result<Response<ResponseBody>, std::convert::Infallible>>
    + Send
    + 'static
    + use<B> {
        async move {
            let tag = tag.unwrap_or_else(|| self.shared.tags.tag(req.headers()));
            let res = self.serve(req, &tag, in_flight).await;
            let value = self.shared.tags.reply_value(&tag);
            let res = crate::http::service::with_tag(res, value);
            Ok(crate::http::Ends::answered(ends, res))
        }
    }

    /// Answers a request by the rules, counted by the shutdown as `in_flight` until its answer
    /// is ready.
    async fn serve<B: Body<Data: Send, Error: Into<BoxError>> + Send>(
        &self,
        mut req: Request<B>,
        tag: &RequestTag,
        in_flight: crate::server::Tracked,
    ) -> Response<ResponseBody> {
        let shared = &*self.shared;
        self.watch_shutdown();
        let settings = &shared.settings;
        if let Some(res) = check_host(&req, &settings.allowed_hosts)
            .or_else(|| check_origin(req.headers(), &settings.allowed_origins))
        {
            return unread_reply(&req, res);
        }
        // Every method asks for the token, before a body is read; the identity it gives goes
        // with the request's head to where its context is made.
        if let Some(auth) = &settings.auth {
            match auth.check(req.headers()) {
                Ok(grant) => req.extensions_mut().insert(grant),
                Err(res) => return unread_reply(&req, *res),
            };
        }
        match *req.method() {
            Method::POST => {}
            Method::GET | Method::DELETE if !settings.stateless => {
                // Sessions are the legacy era's: so is everything but a POST.
                if let Some(res) = check_version(req.headers(), &settings.protocol_versions) {
                    return unread_reply(&req, res);
                }
                return match *req.method() {
                    Method::GET => unread_reply(&req, self.get(&req)),
                    _ => unread_reply(&req, self.delete(&req)),
                };
            }
            _ => return unread_reply(&req, not_allowed(req.method(), settings.stateless)),
        }
        let (parts, body) =
            match read_post(req, settings.max_message_size, settings.body_read_timeout).await {
                Ok(read) => read,
                Err(res) => return res,
            };
        // Kept as a `String`: a session's answers may outlive the request.
        let Ok(text) = String::from_utf8(Vec::from(body)) else {
            return reply::not_utf8();
        };
        if modern::is_modern(&parts.headers, &text) {
            return self.post_modern(parts, text, in_flight, tag).await;
        }
        if let Some(res) = check_version(&parts.headers, &settings.protocol_versions) {
            return res;
        }
        let posted = if sse::has_call(&text) {
            Posted::Calls
        } else if only_notifications_and_answers(&text) {
            Posted::NoCalls
        } else {
            // Not JSON, or not messages: the dispatcher's error, with no id, and `400`.
            let ctx = crate::dispatch::Context::new(Transport::Http);
            let answer = shared.methods.handle_bytes(&text, &ctx).await;
            let mut res = reply::answer(answer.unwrap_or_default());
            *res.status_mut() = StatusCode::BAD_REQUEST;
            return res;
        };
        if settings.stateless {
            return self.post(parts, text, posted, None, in_flight, tag).await;
        }
        let session = match self.session(&parts.headers) {
            Ok(session) => session,
            Err(NoSession::Missing) if is_initialize(&text) => {
                return self
                    .post_initialize(parts, text, posted, in_flight, tag)
                    .await;
            }
            Err(refused) => return refused.reply(),
        };
        if let Some(res) = check_negotiated(&parts.headers, &session) {
            return res;
        }
        self.post(parts, text, posted, Some(&session), in_flight, tag)
            .await
    }

    /// Answers a POST of `initialize` without a session: in a new one, whose id the answer
    /// carries; `503` at `max_sessions`.
    async fn post_initialize(
        &self,
        parts: Parts,
        text: String,
        posted: Posted,
        in_flight: crate::server::Tracked,
        tag: &RequestTag,
    ) -> Response<ResponseBody> {
        match self.shared.sessions.create() {
            Ok(session) => {
                let mut res = self
                    .post(parts, text, posted, Some(&session), in_flight, tag)
                    .await;
                if let Ok(id) = HeaderValue::from_str(&session.id) {
                    res.headers_mut().insert(session_header(), id);
                }
                res
            }
            Err(Refused::Full(max)) => {
                let why = format!("{max} sessions are open (`max_sessions`); retry later");
                reply::closing(envelope(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &RpcError::new(ErrorCode::SERVER_ERROR, "Too many sessions").with_data(&why),
                ))
            }
            Err(Refused::NoRandom(why)) => {
                tracing::error!(%why, "no random bytes for a session id");
                envelope(StatusCode::INTERNAL_SERVER_ERROR, &RpcError::internal())
            }
        }
    }

    /// The context of a request of either era: its tag, headers, peer address, and the
    /// identity its bearer token gave.
    pub(super) fn context(&self, parts: Parts, tag: &RequestTag) -> crate::dispatch::Context {
        let mut ctx = crate::dispatch::Context::new(Transport::Http)
            .with_answer_limit(self.shared.settings.max_message_size)
            .with_tag(tag.clone())
            .with_headers(parts.headers);
        if self.shared.settings.auth.is_some()
            && let Some(grant) = parts.extensions.get::<Grant>().cloned()
        {
            ctx = grant.apply(ctx);
        }
        if let Some(addr) = self.peer_addr {
            ctx = ctx.with_peer_addr(addr);
        }
        ctx
    }

    /// Answers a POST, in `session` (none in stateless mode).
    async fn post(
        &self,
        parts: Parts,
        text: String,
        posted: Posted,
        session: Option<&Arc<Session>>,
        in_flight: crate::server::Tracked,
        tag: &RequestTag,
    ) -> Response<ResponseBody> {
        let shared = &*self.shared;
        let events = sse::asks_for_events(&parts.headers);
        let mut ctx = self.context(parts, tag);
        if let Some(session) = session {
            ctx = ctx
                .with_extension(session.handle())
                .with_extension(Arc::clone(&session.legacy));
        }
        // A request's `params._meta` names its caller's trace more closely than the headers.
        let request = (!incoming::is_batch(&text))
            .then(|| incoming::parse_request(&text).ok())
            .flatten();
        if let Some(trace) = request.as_ref().and_then(|req| trace_of_meta(req.params)) {
            ctx = ctx.with_trace(trace);
        }
        let replies = session.map_or(&shared.replies, |s| &s.replies);
        if let Posted::NoCalls = posted {
            route_answers(replies, &text);
            if let Some(session) = session {
                cancel_named(session, &text);
            }
            // Notifications run before the `202`: the client may count on their effect.
            shared.methods.handle_in(&text, &ctx).await;
            return accepted();
        }
        let running = match session {
            Some(session) => match session.start_request(shared.settings.max_in_flight) {
                Some(running) => Some(running),
                None => return busy(shared.settings.max_in_flight),
            },
            None => None,
        };
        // A session's request may be cancelled by the client, by its id.
        let id = request.and_then(|req| req.id).map(id_of);
        let cancellable = session.zip(id).map(|(session, id)| session.cancellable(id));
        let stop = cancellable.as_ref().map(Cancellable::cancelled);
        if !events {
            let answer = shared.methods.handle_bytes(&text, &ctx);
            let answer = match stop {
                None => answer.await,
                Some(stop) => tokio::select! {
                    answer = answer => answer,
                    // Cancelled: MCP answers nothing, as for a notification.
                    () = stop => return accepted(),
                },
            };
            return reply::answer(answer.unwrap_or_default());
        }
        let answered = match session {
            // A session's request runs on if its client goes: the client may resume it; its
            // handler may end the stream for the client to poll for the rest.
            Some(session) => {
                let stream = session.next_stream();
                let log = Arc::clone(&session.log);
                let ctx = ctx.with_extension(StreamCloser::new(move || log.cut(stream)));
                sse::answer(
                    &shared.methods,
                    ctx,
                    text,
                    &session.log,
                    stream,
                    replies,
                    &shared.settings.streams,
                    (in_flight, running, cancellable),
                    sse::Cancel::On(stop),
                )
                .await
            }
            None => {
                let stream = shared.next_stream.fetch_add(1, Ordering::Relaxed);
                sse::answer(
                    &shared.methods,
                    ctx,
                    text,
                    &shared.log,
                    stream,
                    replies,
                    &shared.settings.streams,
                    in_flight,
                    sse::Cancel::IfGone,
                )
                .await
            }
        };
        sse::reply(answered)
    }

    /// `GET`: the session's stream, or the replay of one after `Last-Event-ID`.
    fn get<B>(&self, req: &Request<B>) -> Response<ResponseBody> {
        if !sse::asks_for_events(req.headers()) {
            return refusal(
                StatusCode::NOT_ACCEPTABLE,
                "a GET opens an event stream: send `Accept: text/event-stream`",
            );
        }
        let session = match self.session(req.headers()) {
            Ok(session) => session,
            Err(refused) => return refused.reply(),
        };
        let resume = req
            .headers()
            .get(last_event_header())
            .and_then(|value| parse_event_id(value.to_str().ok()?));
        if let Some((stream, seq)) = resume
            && stream != GET_STREAM
            && session.log.knows(stream)
        {
            return sse::events_reply(session.log.body(stream, Some(seq)));
        }
        if session.listening.swap(true, Ordering::AcqRel) {
            return refusal(
                StatusCode::CONFLICT,
                "the session's stream is open already: one GET stream a session",
            );
        }
        let after = resume.map(|(_, seq)| seq);
        let listening = Listening(Arc::clone(&session));
        sse::events_reply(session.log.body_holding(GET_STREAM, after, listening))
    }

    /// `DELETE`: ends the session.
    fn delete<B>(&self, req: &Request<B>) -> Response<ResponseBody> {
        match session_of(req.headers()) {
            Ok(id) if self.shared.sessions.remove(id) => reply::no_content(),
            Ok(_) => NoSession::Unknown.reply(),
            Err(refused) => refused.reply(),
        }
    }

    /// The open session a request names, or the reply refusing it.
    fn session(&self, headers: &HeaderMap) -> Result<Arc<Session>, NoSession> {
        let id = session_of(headers)?;
        self.shared.sessions.get(id).ok_or(NoSession::Unknown)
    }

    /// Ends every session when a shutdown begins, so that their GET streams end and connections
    /// drain; started with the first request (in a runtime).
    fn watch_shutdown(&self) {
        if self.shared.watching.swap(true, Ordering::AcqRel) {
            return;
        }
        let shared = Arc::downgrade(&self.shared);
        let draining = self.shared.shutdown.draining();
        tokio::spawn(async move {
            draining.await;
            if let Some(shared) = shared.upgrade() {
                shared.sessions.end_all();
                shared.closing.cancel();
            }
        });
    }
}

/// Why a request names no open session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NoSession {
    /// No `Mcp-Session-Id`.
    Missing,
    /// One that is not visible ASCII.
    NotText,
    /// One no open session has.
    Unknown,
}

impl NoSession {
    /// `400` for a missing or unreadable id, `404` for an unknown one.
    fn reply(self) -> Response<ResponseBody> {
        match self {
            Self::Missing => refusal(
                StatusCode::BAD_REQUEST,
                "no `Mcp-Session-Id`: send the id the initialize response carried, or initialize first",
            ),
            Self::NotText => refusal(
                StatusCode::BAD_REQUEST,
                "`Mcp-Session-Id` is not visible ASCII",
            ),
            Self::Unknown => refusal(
                StatusCode::NOT_FOUND,
                "no such session (it ended or expired): initialize a new one",
            ),
        }
    }
}

/// The session id a request carries.
fn session_of(headers: &HeaderMap) -> Result<&str, NoSession> {
    let value = headers.get(session_header()).ok_or(NoSession::Missing)?;
    value.to_str().map_err(|_| NoSession::NotText)
}

/// `405`, with what is allowed.
fn not_allowed(method: &Method, stateless: bool) -> Response<ResponseBody> {
    let allow = if stateless {
        "POST"
    } else {
        "GET, POST, DELETE"
    };
    let mut res = refusal(
        StatusCode::METHOD_NOT_ALLOWED,
        &format!("`{method}` is not allowed here; allowed: {allow}"),
    );
    res.headers_mut()
        .insert(ALLOW, HeaderValue::from_static(allow));
    res
}

/// `202`, no body: a POST of notifications and answers, or of a request its client cancelled.
fn accepted() -> Response<ResponseBody> {
    let mut res = reply::no_content();
    *res.status_mut() = StatusCode::ACCEPTED;
    res
}

/// Cancels the requests of `session` that the `notifications/cancelled` of `text` name.
fn cancel_named(session: &Session, text: &str) {
    let notice = Cancellation::Mcp.method();
    for raw in messages(text).unwrap_or_default() {
        if let Incoming::Request(req) = incoming::parse(raw.get())
            && req.id.is_none()
            && Some(&*req.method) == notice
            && let Some(id) = Cancellation::target(req.params)
        {
            session.cancel(&id);
        }
    }
}

/// The trace context MCP's `params._meta` carries (`traceparent`, `tracestate`), if any.
pub(super) fn trace_of_meta(params: Option<&RawValue>) -> Option<TraceContext> {
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(rename = "_meta", borrow)]
        meta: Option<Meta<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Meta<'a> {
        #[serde(borrow)]
        traceparent: Option<std::borrow::Cow<'a, str>>,
        #[serde(borrow)]
        tracestate: Option<std::borrow::Cow<'a, str>>,
    }
    // Most params have no `_meta`: they are not read twice.
    let params = params.filter(|params| params.get().contains("\"_meta\""))?;
    let meta = serde_json::from_str::<Params<'_>>(params.get())
        .ok()?
        .meta?;
    TraceContext::parse(&meta.traceparent?, meta.tracestate.as_deref())
}

/// `200`, `-32000`: the session has `max_in_flight` requests running.
fn busy(max: usize) -> Response<ResponseBody> {
    envelope(
        StatusCode::OK,
        &RpcError::new(ErrorCode::SERVER_ERROR, "Server busy").with_data(&format!(
            "more than {max} requests of this session in flight"
        )),
    )
}

/// `403` for an `Origin` that is not allowed (a page of another site reaching a local server:
/// DNS rebinding); a request without one (not from a browser) passes.
fn check_origin(headers: &HeaderMap, allowed: &[String]) -> Option<Response<ResponseBody>> {
    let origin = headers.get(::http::header::ORIGIN)?;
    let text = origin.to_str().unwrap_or_default();
    if origin_allowed(text, allowed) {
        return None;
    }
    Some(refusal(
        StatusCode::FORBIDDEN,
        &format!("origin `{text}` is not allowed (`allowed_origins`)"),
    ))
}

/// `403` for a `Host` that is not allowed (a page of another site whose name resolves to a
/// local server: DNS rebinding); none is checked when `allowed` is empty. The host of an HTTP/2
/// request is its URI's.
fn check_host<B>(req: &Request<B>, allowed: &[String]) -> Option<Response<ResponseBody>> {
    if allowed.is_empty() {
        return None;
    }
    let host = match req.headers().get(::http::header::HOST) {
        Some(value) => value.to_str().unwrap_or_default(),
        None => req.uri().authority()?.as_str(),
    };
    let name = match host.strip_prefix('[') {
        Some(v6) => v6
            .split_once(']')
            .map_or(host, |(v6, _)| &host[..v6.len() + 2]),
        None => host.split(':').next().unwrap_or_default(),
    };
    if allowed.iter().any(|a| a.eq_ignore_ascii_case(name)) {
        return None;
    }
    Some(refusal(
        StatusCode::FORBIDDEN,
        &format!("host `{host}` is not allowed (`allowed_hosts`)"),
    ))
}

/// `400` for an `MCP-Protocol-Version` other than the one the session's `initialize` agreed on.
fn check_negotiated(headers: &HeaderMap, session: &Session) -> Option<Response<ResponseBody>> {
    let sent = headers.get(version_header())?.to_str().unwrap_or_default();
    let negotiated = session.legacy.version()?;
    (sent != negotiated).then(|| {
        refusal(
            StatusCode::BAD_REQUEST,
            &format!(
                "`MCP-Protocol-Version` `{sent}` is not the session's: it agreed on `{negotiated}`"
            ),
        )
    })
}

/// Whether `origin` (`scheme://host[:port]`) is allowed: listed as it is, or its host listed.
pub(crate) fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    if allowed.iter().any(|a| a.eq_ignore_ascii_case(origin)) {
        return true;
    }
    let Some((_, authority)) = origin.split_once("://") else {
        return false;
    };
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map(|(host, _)| format!("[{host}]")),
        None => authority.split(':').next().map(str::to_owned),
    };
    host.is_some_and(|host| allowed.iter().any(|a| a.eq_ignore_ascii_case(&host)))
}

/// `400` for an `MCP-Protocol-Version` this server does not speak; a request without one is
/// taken (as 2025-03-26, which had no header).
fn check_version(headers: &HeaderMap, known: &[String]) -> Option<Response<ResponseBody>> {
    let value = headers.get(version_header())?;
    let text = value.to_str().unwrap_or_default();
    if known.iter().any(|v| v == text) {
        return None;
    }
    Some(refusal(
        StatusCode::BAD_REQUEST,
        &format!(
            "unsupported `MCP-Protocol-Version` `{text}`; supported: {}",
            known.join(", ")
        ),
    ))
}

/// Whether `text` is an `initialize` request (alone: a session starts with it).
fn is_initialize(text: &str) -> bool {
    incoming::parse_request(text).is_ok_and(|req| req.method == "initialize" && req.id.is_some())
}

/// Each message of `text`, alone or in a batch, as raw JSON; `None` when it is not JSON.
fn messages(text: &str) -> Option<Vec<&RawValue>> {
    if incoming::is_batch(text) {
        serde_json::from_str(text).ok()
    } else {
        serde_json::from_str(text).ok().map(|one| vec![one])
    }
}

/// Whether every message of `text` is a notification or an answer (and there is one).
fn only_notifications_and_answers(text: &str) -> bool {
    messages(text).is_some_and(|all| {
        !all.is_empty()
            && all.iter().all(|raw| match incoming::parse(raw.get()) {
                Incoming::Request(req) => req.id.is_none(),
                Incoming::Response(_) => true,
                Incoming::Rejected(_) => false,
            })
    })
}

/// Hands each answer of `text` to the stream whose call it answers; one no call waits for is
/// dropped (its call gave up, or there was none).
fn route_answers(replies: &Replies, text: &str) {
    for raw in messages(text).unwrap_or_default() {
        if matches!(incoming::parse(raw.get()), Incoming::Response(_)) && !replies.route(raw.get())
        {
            tracing::debug!("an answer to no call waiting");
        }
    }
}

crate::http::service::endpoint_services!(McpService);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_matched_by_host_or_whole() {
        let allowed: Vec<String> = ["localhost", "127.0.0.1", "[::1]", "https://app.example"]
            .map(String::from)
            .to_vec();
        for ok in [
            "http://localhost:3000",
            "http://127.0.0.1",
            "http://[::1]:8080",
            "https://app.example",
        ] {
            assert!(origin_allowed(ok, &allowed), "{ok}");
        }
        for bad in [
            "http://evil.example",
            "http://localhost.evil.example",
            "null",
            "https://app.example:444",
            "http://[::2]",
        ] {
            assert!(!origin_allowed(bad, &allowed), "{bad}");
        }
    }

    #[test]
    fn bodies_are_told_apart() {
        assert!(is_initialize(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize"}"#
        ));
        assert!(!is_initialize(r#"{"jsonrpc":"2.0","method":"initialize"}"#));
        assert!(only_notifications_and_answers(
            r#"[{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","result":1,"id":3}]"#
        ));
        assert!(!only_notifications_and_answers("[]"));
        assert!(!only_notifications_and_answers("nope"));
        assert!(!only_notifications_and_answers(
            r#"{"jsonrpc":"1.0","method":"n"}"#
        ));
    }
}
