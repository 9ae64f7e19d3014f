//! Implements the MCP endpoint: one HTTP request in, one response out, by the rules of Streamable
//! HTTP (see the [module docs](crate::mcp)).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use ::http::header::{ALLOW, HeaderName};
use ::http::request::Parts;
use ::http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use jrpc_runtime::http::reply::{self, ResponseBody};
use jrpc_runtime::http::sse::{self, EventLog, Replies, SseAnswer, parse_event_id};
use jrpc_runtime::http::{Endpoint, EndpointRequest, Post, RequestBody};
use jrpc_runtime::wire::incoming::{self, Incoming};
use jrpc_runtime::{Cancellation, Context, ErrorCode, RpcError, TraceContext, Transport};
use serde_json::value::RawValue;

use super::config::{Identity, Settings};
use super::keep_alive::keep_alive as keep_alive_body;
use super::modern;
use super::replica::Replayed;
use super::session::{Cancellable, Listening, Refused, Session, Sessions, stream_tag};
use crate::data::{Mcp, StreamCloser};
use crate::store::{SessionLimits, SessionRecord, StoreError};

/// Returns the name of the `Mcp-Session-Id` header.
pub(super) fn session_header() -> HeaderName {
    HeaderName::from_static("mcp-session-id")
}

/// Returns the name of the `MCP-Protocol-Version` header.
pub(super) fn version_header() -> HeaderName {
    HeaderName::from_static("mcp-protocol-version")
}

/// `Last-Event-ID`.
fn last_event_header() -> HeaderName {
    HeaderName::from_static("last-event-id")
}

/// Serves the MCP endpoint: Streamable HTTP by the rules in the [crate docs](crate), as an
/// [`Endpoint`] of the runtime's HTTP server. [`McpServer`](super::McpServer) serves it at its
/// `path`; mount it on an [`HttpServer`](jrpc_runtime::http::HttpServer) of your own beside
/// `/rpc` with [`HttpServerBuilder::endpoint`](jrpc_runtime::http::HttpServerBuilder::endpoint)
/// (it then runs the server's table, under its limits, origin policy and bearer
/// authentication), or as a tower service with
/// [`HttpServer::service_for`](jrpc_runtime::http::HttpServer::service_for).
///
/// Cloning is cheap: clones share the sessions.
#[derive(Clone)]
pub struct McpEndpoint {
    pub(super) shared: Arc<McpShared>,
}

impl std::fmt::Debug for McpEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpEndpoint")
            .field("sessions", &self.shared.sessions.len())
            .finish_non_exhaustive()
    }
}

/// Holds what the clones of an [`McpEndpoint`] share.
pub(super) struct McpShared {
    /// The server, for what it says of its tools beyond the table (their `x-mcp-header`s).
    pub(super) mcp: Mcp,
    pub(super) settings: Settings,
    pub(super) sessions: Arc<Sessions>,
    /// Whether the tasks that end sessions at a shutdown, and sweep them meanwhile, run.
    watching: AtomicBool,
    /// Requests without a session (the modern era's, and the legacy era's in stateless mode):
    /// the events of their streams, and where answers to their calls go.
    pub(super) log: Arc<EventLog>,
    pub(super) replies: Arc<Replies>,
    pub(super) next_stream: AtomicU64,
    /// Cancelled when a shutdown begins: modern listen streams end then.
    pub(super) closing: tokio_util::sync::CancellationToken,
}

/// Says what a POST's body holds.
enum Posted {
    /// A request with an id (alone or in a batch): it is answered.
    Calls,
    /// Notifications and answers only.
    NoCalls,
}

impl Endpoint for McpEndpoint {
    fn serve<B: RequestBody>(
        &self,
        req: Request<B>,
        request: EndpointRequest,
    ) -> impl Future<Output = Response<ResponseBody>> + Send + 'static {
        let this = self.clone();
        async move { this.answer(req, request).await }
    }
}

impl McpEndpoint {
    /// Returns the endpoint of `mcp` with `settings`.
    pub(super) fn new(mcp: Mcp, settings: Settings) -> Self {
        let sessions = Arc::new(Sessions::new(
            Arc::clone(&settings.store),
            SessionLimits::new(settings.max_sessions, settings.session_idle_timeout),
            (settings.replay_buffer, settings.sse_retry),
            mcp.clone(),
        ));
        Self {
            shared: Arc::new(McpShared {
                mcp,
                settings,
                sessions,
                watching: AtomicBool::new(false),
                log: EventLog::new(0),
                replies: Replies::new(),
                next_stream: AtomicU64::new(1),
                closing: tokio_util::sync::CancellationToken::new(),
            }),
        }
    }

    /// Returns how many sessions this replica holds a part of (all that are open, for a server
    /// alone).
    pub fn sessions(&self) -> usize {
        self.shared.sessions.len()
    }

    /// Answers a request by the rules.
    async fn answer<B: RequestBody>(
        &self,
        req: Request<B>,
        request: EndpointRequest,
    ) -> Response<ResponseBody> {
        self.watch_shutdown(&request);
        let settings = &self.shared.settings;
        match *req.method() {
            Method::POST => {}
            Method::GET | Method::DELETE if !settings.stateless => {
                // Sessions are the legacy era's: so is everything but a POST.
                if let Some(res) = check_version(req.headers(), &settings.protocol_versions) {
                    return reply::unread(&req, res);
                }
                let res = match *req.method() {
                    Method::GET => self.get(req.headers(), &request).await,
                    _ => self.delete(req.headers(), &request).await,
                };
                return reply::unread(&req, res);
            }
            _ => return reply::unread(&req, not_allowed(req.method(), settings.stateless)),
        }
        let Post {
            parts, body, held, ..
        } = match request.read_post(req).await {
            Ok(post) => post,
            Err(res) => return res,
        };
        // Kept as a `String`: a session's answers may outlive the request.
        let Ok(text) = String::from_utf8(Vec::from(body)) else {
            return reply::not_utf8();
        };
        let res = self.post(parts, text, request).await;
        // The body's room in the budget, held until its answer is made.
        drop(held);
        res
    }

    /// Answers a POST whose body is `text`, of either era.
    async fn post(
        &self,
        parts: Parts,
        text: String,
        request: EndpointRequest,
    ) -> Response<ResponseBody> {
        let settings = &self.shared.settings;
        if modern::is_modern(&parts.headers, &text) {
            return self.post_modern(parts, text, request).await;
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
            let ctx = Context::new(Transport::Http);
            let answer = request.methods().handle_in(&text, &ctx).await;
            let mut res = reply::answer(answer.unwrap_or_default().into_bytes());
            *res.status_mut() = StatusCode::BAD_REQUEST;
            return res;
        };
        if settings.stateless {
            return self.post_in(parts, text, posted, None, request).await;
        }
        let session = match self.session(&parts.headers, &request).await {
            Ok(session) => session,
            Err(NoSession::Missing) if is_initialize(&text) => {
                return self.post_initialize(parts, text, posted, request).await;
            }
            Err(refused) => return refused.reply(),
        };
        if let Some(res) = check_negotiated(&parts.headers, &session) {
            return res;
        }
        self.post_in(parts, text, posted, Some(&session), request)
            .await
    }

    /// Answers a POST of `initialize` without a session: in a new one, whose id the answer
    /// carries; `503` at `max_sessions`.
    async fn post_initialize(
        &self,
        parts: Parts,
        text: String,
        posted: Posted,
        request: EndpointRequest,
    ) -> Response<ResponseBody> {
        let sessions = &self.shared.sessions;
        let identity = self.identity(&parts.headers, &request);
        let made = match sessions.create(identity.clone()).await {
            Ok(id) => {
                let record = SessionRecord::opened_by(identity);
                let made = sessions.part(&id, &record, request.stream_config()).await;
                if made.is_err() {
                    let _ = sessions.store.remove_session(&id).await;
                }
                made
            }
            Err(refused) => Err(refused),
        };
        match made {
            Ok(session) => {
                let mut res = self
                    .post_in(parts, text, posted, Some(&session), request)
                    .await;
                if let Ok(id) = HeaderValue::from_str(&session.id) {
                    res.headers_mut().insert(session_header(), id);
                }
                res
            }
            Err(Refused::Store(err)) => NoSession::Store(err).reply(),
            Err(Refused::Full(max)) => {
                let why = format!("{max} sessions are open (`max_sessions`); retry later");
                reply::closing(reply::envelope(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &RpcError::new(ErrorCode::SERVER_ERROR, "Too many sessions").with_data(&why),
                ))
            }
            Err(Refused::NoRandom(why)) => {
                tracing::error!(%why, "no random bytes for a session id");
                reply::envelope(StatusCode::INTERNAL_SERVER_ERROR, &RpcError::internal())
            }
        }
    }

    /// Answers a POST, in `session` (none in stateless mode).
    async fn post_in(
        &self,
        parts: Parts,
        text: String,
        posted: Posted,
        session: Option<&Arc<Session>>,
        request: EndpointRequest,
    ) -> Response<ResponseBody> {
        let shared = &*self.shared;
        let events = sse::asks_for_events(&parts.headers);
        let mut ctx = request.context(parts.headers);
        if let Some(session) = session {
            ctx = ctx
                .with_extension(session.handle())
                .with_extension(Arc::clone(&session.legacy));
        }
        // A request's `params._meta` names its caller's trace more closely than the headers.
        let parsed = (!incoming::is_batch(&text))
            .then(|| incoming::parse_request(&text).ok())
            .flatten();
        if let Some(trace) = parsed.as_ref().and_then(|req| trace_of_meta(req.params)) {
            ctx = ctx.with_trace(trace);
        }
        let methods = request.methods().clone();
        let replies = session.map_or(&shared.replies, |s| &s.replies);
        if let Posted::NoCalls = posted {
            let unrouted = route_answers(replies, &text);
            if let Some(session) = session {
                if let Some(replica) = &session.replica {
                    for answer in unrouted {
                        replica.answer(&shared.sessions, answer);
                    }
                }
                cancel_named(&shared.sessions, session, &text);
            }
            // Notifications run before the `202`: the client may count on their effect.
            methods.handle_in(&text, &ctx).await;
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
        let id = parsed.and_then(|req| req.read_id());
        let cancellable = session.zip(id).map(|(session, id)| session.cancellable(id));
        let stop = cancellable.as_ref().map(Cancellable::cancelled);
        if !events {
            let answer = methods.handle_in(&text, &ctx);
            let answer = match stop {
                None => answer.await,
                Some(stop) => tokio::select! {
                    answer = answer => answer,
                    // Cancelled: MCP answers nothing, as for a notification.
                    () = stop => return accepted(),
                },
            };
            return reply::answer(answer.unwrap_or_default().into_bytes());
        }
        let config = request.stream_config().clone();
        let answered = match session {
            // A session's request runs on if its client goes: the client may resume it; its
            // handler may end the stream for the client to poll for the rest.
            Some(session) => {
                let stream = session.next_stream();
                let log = Arc::clone(&session.log);
                let ctx = ctx.with_extension(StreamCloser::new(move || log.cut(stream)));
                let answer = SseAnswer {
                    methods: &methods,
                    log: &session.log,
                    stream,
                    replies,
                    config: &config,
                };
                let guard = (request, running, cancellable);
                answer.run(ctx, text, guard, sse::Cancel::On(stop)).await
            }
            None => {
                let stream = shared.next_stream.fetch_add(1, Ordering::Relaxed);
                let answer = SseAnswer {
                    methods: &methods,
                    log: &shared.log,
                    stream,
                    replies,
                    config: &config,
                };
                answer.run(ctx, text, request, sse::Cancel::IfGone).await
            }
        };
        sse::reply(answered)
    }

    /// `GET`: the session's stream, or the replay of one after `Last-Event-ID`.
    async fn get(&self, headers: &HeaderMap, request: &EndpointRequest) -> Response<ResponseBody> {
        if !sse::asks_for_events(headers) {
            return reply::refusal(
                StatusCode::NOT_ACCEPTABLE,
                "a GET opens an event stream: send `Accept: text/event-stream`",
            );
        }
        let session = match self.session(headers, request).await {
            Ok(session) => session,
            Err(refused) => return refused.reply(),
        };
        let keep_alive = self.shared.settings.keep_alive;
        let sessions = &self.shared.sessions;
        let resume = headers
            .get(last_event_header())
            .and_then(|value| parse_event_id(value.to_str().ok()?));
        if let Some((stream, seq)) = resume
            && stream != session.get_stream
        {
            if session.log.knows(stream) {
                return sse::events_reply(session.log.body(stream, Some(seq)));
            }
            // Another replica numbered the stream: it replays it, if it is still there.
            if let Some(replica) = &session.replica
                && stream_tag(stream) != sessions.tag
            {
                match replica.replay(sessions, stream, Some(seq)).await {
                    Replayed::Body(body) => {
                        return sse::events_reply(keep_alive_body(body, keep_alive));
                    }
                    Replayed::Refused => return open_already(),
                    Replayed::Unknown => {}
                }
            }
        }
        if session.listening.swap(true, Ordering::AcqRel) {
            return open_already();
        }
        let listening = Listening(Arc::clone(&session));
        if let Some(replica) = &session.replica {
            let followed = match sessions
                .store
                .session(&session.id, sessions.limits.idle)
                .await
            {
                Ok(Some(record)) => record.followed,
                Ok(None) => return NoSession::Unknown.reply(),
                Err(err) => return NoSession::Store(err).reply(),
            };
            if let Err(err) = replica.start_listening(&session, sessions, &followed).await {
                return reply::envelope(StatusCode::SERVICE_UNAVAILABLE, &err);
            }
        }
        // A resumption of this replica's GET stream goes on after its event; of a stream no one
        // knows, from what is not sent yet.
        let after = resume
            .filter(|(stream, _)| {
                *stream == session.get_stream || stream_tag(*stream) == sessions.tag
            })
            .map(|(_, seq)| seq);
        let body = session
            .log
            .body_holding(session.get_stream, after, listening);
        sse::events_reply(keep_alive_body(body, keep_alive))
    }

    /// `DELETE`: ends the session, on every replica.
    async fn delete(
        &self,
        headers: &HeaderMap,
        request: &EndpointRequest,
    ) -> Response<ResponseBody> {
        let sessions = &self.shared.sessions;
        let session = match self.session(headers, request).await {
            Ok(session) => session,
            Err(refused) => return refused.reply(),
        };
        match sessions.store.remove_session(&session.id).await {
            Ok(true) => {
                if let Some(replica) = &session.replica {
                    replica.end(sessions);
                }
                sessions.drop_part(&session.id);
                reply::no_content()
            }
            Ok(false) => {
                sessions.drop_part(&session.id);
                NoSession::Unknown.reply()
            }
            Err(err) => NoSession::Store(err).reply(),
        }
    }

    /// Returns the identity a request's session must have been opened by (`None`: any).
    fn identity(&self, headers: &HeaderMap, request: &EndpointRequest) -> Option<String> {
        match &self.shared.settings.identity {
            Identity::Token => bearer_digest(headers),
            Identity::Of(of) => of(&request.context(headers.clone())),
        }
    }

    /// Returns the open session a request names, this replica's part of it, or the reply
    /// refusing it: an id no session has, or one opened by another identity, is `404`.
    async fn session(
        &self,
        headers: &HeaderMap,
        request: &EndpointRequest,
    ) -> Result<Arc<Session>, NoSession> {
        let id = session_of(headers)?;
        let sessions = &self.shared.sessions;
        let record = sessions
            .store
            .session(id, sessions.limits.idle)
            .await
            .map_err(NoSession::Store)?
            .ok_or(NoSession::Unknown)?;
        if record.identity.is_some() && record.identity != self.identity(headers, request) {
            return Err(NoSession::Unknown);
        }
        match sessions.part(id, &record, request.stream_config()).await {
            Ok(session) => Ok(session),
            Err(Refused::Store(err)) => Err(NoSession::Store(err)),
            Err(_) => Err(NoSession::Busy),
        }
    }

    /// Ends every session when a shutdown of the server serving `request` begins, so that
    /// their GET streams end and connections drain; started with the first request.
    fn watch_shutdown(&self, request: &EndpointRequest) {
        if self.shared.watching.swap(true, Ordering::AcqRel) {
            return;
        }
        let shared = Arc::downgrade(&self.shared);
        let shutdown = request.shutdown_handle();
        tokio::spawn(async move {
            shutdown.shutting_down().await;
            if let Some(shared) = shared.upgrade() {
                shared.closing.cancel();
                shared.sessions.end_all().await;
            }
        });
        // Every third of the idle timeout: the sessions in use here are marked used in the
        // store, and those idle here dropped.
        let sessions = Arc::downgrade(&self.shared.sessions);
        let every = (self.shared.settings.session_idle_timeout / 3).max(Duration::from_millis(1));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(sessions) = sessions.upgrade() else {
                    return;
                };
                sessions.sweep().await;
            }
        });
    }
}

/// Why a request names no open session.
#[derive(Debug)]
enum NoSession {
    /// No `Mcp-Session-Id`.
    Missing,
    /// One that is not visible ASCII.
    NotText,
    /// One no open session has (or one opened by another identity).
    Unknown,
    /// This replica holds `max_sessions` sessions in use.
    Busy,
    /// The store of sessions failed.
    Store(StoreError),
}

impl NoSession {
    /// `400` for a missing or unreadable id, `404` for an unknown one, `503` when the session
    /// cannot be served here now.
    fn reply(self) -> Response<ResponseBody> {
        match self {
            Self::Missing => reply::refusal(
                StatusCode::BAD_REQUEST,
                "no `Mcp-Session-Id`: send the id the initialize response carried, or initialize first",
            ),
            Self::NotText => reply::refusal(
                StatusCode::BAD_REQUEST,
                "`Mcp-Session-Id` is not visible ASCII",
            ),
            Self::Unknown => reply::refusal(
                StatusCode::NOT_FOUND,
                "no such session (it ended or expired): initialize a new one",
            ),
            Self::Busy => reply::closing(reply::envelope(
                StatusCode::SERVICE_UNAVAILABLE,
                &RpcError::new(ErrorCode::SERVER_ERROR, "Too many sessions")
                    .with_data("this server holds `max_sessions` sessions in use; retry later"),
            )),
            Self::Store(err) => {
                tracing::error!(%err, "the store of sessions failed");
                reply::envelope(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &RpcError::new(ErrorCode::SERVER_ERROR, "Sessions unavailable")
                        .with_data(&err.to_string()),
                )
            }
        }
    }
}

/// Returns the session id a request carries.
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
    let mut res = reply::refusal(
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

/// Cancels the requests of `session` that the `notifications/cancelled` of `text` name, here and
/// on the other replicas.
fn cancel_named(sessions: &Sessions, session: &Session, text: &str) {
    let notice = Cancellation::Mcp.method();
    for raw in messages(text).unwrap_or_default() {
        if let Incoming::Request(req) = incoming::parse(raw.get())
            && req.id.is_none()
            && Some(&*req.method) == notice
            && let Some(id) = Cancellation::target(req.params)
        {
            session.cancel(&id);
            if let (Some(replica), Some(params)) = (&session.replica, req.params) {
                replica.cancel(sessions, params);
            }
        }
    }
}

/// `409`: the session's GET stream is read already.
fn open_already() -> Response<ResponseBody> {
    reply::refusal(
        StatusCode::CONFLICT,
        "the session's stream is open already: one GET stream a session",
    )
}

/// Returns the identity of a bearer token: the first 16 bytes of its SHA-256, in hex; `None`
/// without one.
fn bearer_digest(headers: &HeaderMap) -> Option<String> {
    use sha2::{Digest as _, Sha256};
    let value = headers.get(::http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let digest = Sha256::digest(token.trim().as_bytes());
    Some(crate::store::hex(&digest[..16]))
}

/// Returns the trace context MCP's `params._meta` carries (`traceparent`, `tracestate`), if any.
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
    reply::envelope(
        StatusCode::OK,
        &RpcError::new(ErrorCode::SERVER_ERROR, "Server busy").with_data(&format!(
            "more than {max} requests of this session in flight"
        )),
    )
}

/// `400` for an `MCP-Protocol-Version` other than the one the session's `initialize` agreed on.
fn check_negotiated(headers: &HeaderMap, session: &Session) -> Option<Response<ResponseBody>> {
    let sent = headers.get(version_header())?.to_str().unwrap_or_default();
    let negotiated = session.legacy.version()?;
    (sent != negotiated).then(|| {
        reply::refusal(
            StatusCode::BAD_REQUEST,
            &format!(
                "`MCP-Protocol-Version` `{sent}` is not the session's: it agreed on `{negotiated}`"
            ),
        )
    })
}

/// `400` for an `MCP-Protocol-Version` this server does not speak; a request without one is
/// taken (as 2025-03-26, which had no header).
fn check_version(headers: &HeaderMap, known: &[String]) -> Option<Response<ResponseBody>> {
    let value = headers.get(version_header())?;
    let text = value.to_str().unwrap_or_default();
    if known.iter().any(|v| v == text) {
        return None;
    }
    Some(reply::refusal(
        StatusCode::BAD_REQUEST,
        &format!(
            "unsupported `MCP-Protocol-Version` `{text}`; supported: {}",
            known.join(", ")
        ),
    ))
}

/// Returns whether `text` is an `initialize` request (alone: a session starts with it).
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

/// Returns whether every message of `text` is a notification or an answer (and there is one).
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

/// Hands each answer of `text` to the stream whose call it answers; returns those no call here
/// waits for (a call another replica made, or one that gave up).
fn route_answers<'a>(replies: &Replies, text: &'a str) -> Vec<&'a str> {
    let mut unrouted = Vec::new();
    for raw in messages(text).unwrap_or_default() {
        if matches!(incoming::parse(raw.get()), Incoming::Response(_)) && !replies.route(raw.get())
        {
            tracing::debug!("an answer to no call waiting here");
            unrouted.push(raw.get());
        }
    }
    unrouted
}

#[cfg(test)]
mod tests {
    use super::*;

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
