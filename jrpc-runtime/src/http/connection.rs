//! Serves one connection of the HTTP servers, from its first bytes to its close.
//!
//! The first bytes tell HTTP/2 (its preface: h2c with prior knowledge, or what ALPN chose over
//! TLS) from HTTP/1.1, and hyper's connection of that version serves the rest. An HTTP/1.1
//! connection is also watched by a timer of its own. Its requests count themselves as they start
//! and end (an event stream ends when its body does), and its stream tells whether hyper has
//! written anything it has not flushed yet (an answer still on its way out); when the timer rings
//! it looks at them. An end is counted, not timed (a clock read per request would cost more than
//! the rest of the timer): a ring that finds requests ended since the ring before takes its own
//! time as the last end's, so an idle connection is parked or closed late by less than the period
//! between two rings.
//!
//! | the connection | the ring |
//! | --- | --- |
//! | answering a request or writing an answer | rings again later, each time twice as late, up to a second (a quarter of `header_read_timeout` if less) |
//! | it answered one since the last ring, and none is running | rings again `free_idle_after` later, to park it if no request came meanwhile; if one did, as when busy |
//! | no request for `header_read_timeout` since its last one ended | closes the connection: no request head came in time |
//! | no request for `free_idle_after` since its last one ended | parks the connection |
//! | idle, for less than those | rings again when the first of them is due |
//!
//! A parked connection drops hyper's connection, and with it the buffers it keeps between
//! requests (8 KiB to read and 8 KiB to write, held for as long as the connection is open); its
//! stream waits on its own for the client's next bytes, and those start a new hyper connection,
//! with the bytes already read (and any hyper held) read again first. hyper is asked to end the
//! connection gracefully, which an idle one does in the poll right after; one that does not was
//! not idle after all (a client that asked for `Connection: close`, say), and is left to hyper,
//! which closes it once done. So an idle keep-alive connection holds its stream and its task, not
//! its buffers; a busy one is never parked, and the timer costs it nothing per request but two
//! counts: it rings a few times a second at most. hyper's own `header_read_timeout` is not used:
//! it starts a timer for every request, and loops once more over the connection to do so.

use std::convert::Infallible;
use std::future::{Future, poll_fn};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use ::http::{Request, Response};
use futures_util::FutureExt as _;
use http_body_util::BodyExt as _;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::{http1, http2};
use hyper::service::{Service, service_fn};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};
use tokio_util::sync::WaitForCancellationFutureOwned;

use super::reply::ResponseBody;
use crate::limits::WriteDeadline;
use crate::server::{Io, Shutdown, Tracked};
use crate::woken::Woken;

/// Caps what hyper may read ahead of the request it serves, the request head included.
const READ_AHEAD: usize = 64 * 1024;

/// Holds HTTP/2's connection preface, which a client speaking it sends first.
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Caps what the first read of a connection (or of a parked one) takes at most.
const START: usize = 1024;

/// Sets the longest a busy connection's timer waits between two rings.
const MAX_PERIOD: Duration = Duration::from_secs(1);

/// Sets the shortest: settings of a few nanoseconds would otherwise make it ring without end.
const MIN_PERIOD: Duration = Duration::from_millis(1);

/// Configures how the HTTP servers serve their connections: hyper's builders for each version, and
/// the timings the connection's own timer keeps.
#[derive(Debug)]
pub(crate) struct Protocols {
    http1: http1::Builder,
    http2: http2::Builder<TokioExecutor>,
    header_read_timeout: Duration,
    free_idle_after: Option<Duration>,
    /// How many times a connection of the server was parked.
    parked: AtomicU64,
}

impl Protocols {
    /// Returns keep-alive HTTP/1.1 reading at most 64 KiB ahead, and HTTP/2; a request head within
    /// `header_read_timeout` of the connection's last request, and an HTTP/1.1 connection
    /// idle for `free_idle_after` parked.
    pub(crate) fn new(header_read_timeout: Duration, free_idle_after: Option<Duration>) -> Self {
        let mut http1 = http1::Builder::new();
        // hyper reads ahead of the request it serves (pipelined requests) into a buffer of up
        // to 400 KB by default: more than a connection's whole budget. 64 KiB still takes any
        // request head a client sends (it is also the largest head taken).
        http1
            .header_read_timeout(None)
            .max_buf_size(READ_AHEAD)
            .keep_alive(true);
        let mut http2 = http2::Builder::new(TokioExecutor::new());
        http2.timer(TokioTimer::new());
        Self {
            http1,
            http2,
            header_read_timeout,
            free_idle_after,
            parked: AtomicU64::new(0),
        }
    }

    /// Returns how many times a connection served with these protocols was parked.
    pub(crate) fn parked(&self) -> u64 {
        self.parked.load(Ordering::Relaxed)
    }
}

/// Names what a connection serves: the router of an HTTP server, answering each request with a
/// future of its own. Not boxed: hyper keeps one place for the request's future on an HTTP/1.1
/// connection, so a boxed one would be one allocation a request more (an HTTP/2 stream's is
/// boxed here: hyper moves it into a task of its own). Each HTTP/1.1 connection is served by a
/// clone of its own, made again when the connection is parked, so that what a clone keeps of
/// its requests goes with the connection's buffers.
pub(crate) trait Responder: Clone + Send + Unpin + 'static {
    /// Answers `req`, the answer handed to [`Ends::answered`] with `ends`.
    fn respond(
        &self,
        req: Request<Incoming>,
        ends: Option<Ends>,
    ) -> impl Future<Output = Result<Response<ResponseBody>, Infallible>> + Send + 'static + use<Self>;
}

/// Names what hyper's connections serve: a connection's [`Responder`] behind `service_fn`.
trait ConnectionService:
    Service<
        Request<Incoming>,
        Response = Response<ResponseBody>,
        Error = Infallible,
        Future: Send + 'static,
    > + Send
    + Unpin
    + 'static
{
}

impl<S> ConnectionService for S where
    S: Service<
            Request<Incoming>,
            Response = Response<ResponseBody>,
            Error = Infallible,
            Future: Send + 'static,
        > + Send
        + Unpin
        + 'static
{
}

/// Serves one connection with `endpoint` (HTTP/1.1 with keep-alive and upgrades, or HTTP/2),
/// every write under `write_timeout`, until the client closes it, it times out, or a shutdown
/// does: requests during the drain are answered (`503`), and the connection is dropped when the
/// drain budget is spent. `counted` (the shutdown's count of the connection) is held until then.
pub(crate) fn drive(
    protocols: &Arc<Protocols>,
    io: impl Io,
    endpoint: impl Responder,
    write_timeout: Option<Duration>,
    shutdown: Arc<Shutdown>,
    counted: Tracked,
) -> impl Future<Output = ()> + Send + 'static {
    let protocols = Arc::clone(protocols);
    async move {
        let _counted = counted;
        let activity = Arc::new(Activity::new());
        let mut io = ServerIo {
            stream: Rewound {
                start: Bytes::new(),
                inner: WriteDeadline::new(io, write_timeout),
            },
            activity: Arc::clone(&activity),
        };
        let mut watch = Watch::new(&protocols, activity, shutdown.closing());
        let h2 = match watch.wait_for_bytes(&mut io, true).await {
            Some(h2) => h2,
            None => return,
        };
        if h2 {
            // Boxed: hyper moves an HTTP/2 request's future into a task of its own, a move of
            // the whole future each time unless it is a pointer.
            let service = service_fn(move |req| Box::pin(endpoint.respond(req, None)));
            let conn = protocols.http2.serve_connection(TokioIo::new(io), service);
            // Boxed: an HTTP/2 connection is some KiB, which every connection's task would
            // otherwise hold, HTTP/1.1 ones parked included.
            let graceful = http2::Connection::graceful_shutdown;
            return Box::pin(serve_to_end(conn, graceful, &mut watch.waits, &shutdown)).await;
        }
        let mut service = http1_service(endpoint.clone(), &watch.activity);
        loop {
            let conn = protocols
                .http1
                .serve_connection(TokioIo::new(io), service)
                .with_upgrades();
            let Some(parts) = watch.serve(Box::pin(conn), &shutdown).await else {
                return;
            };
            protocols.parked.fetch_add(1, Ordering::Relaxed);
            let http1::Parts {
                io: parked,
                read_buf,
                service: served,
                ..
            } = parts;
            // What the endpoint kept of its requests (the last one's context: its headers share
            // the buffer hyper read it into) goes now, not once the connection is next served.
            drop(served);
            (io, service) = (
                parked.into_inner(),
                http1_service(endpoint.clone(), &watch.activity),
            );
            if read_buf.is_empty() {
                // It holds hyper's whole read buffer.
                drop(read_buf);
                if watch.wait_for_bytes(&mut io, false).await.is_none() {
                    return;
                }
            } else {
                // Part of a request, read already: served at once.
                io.stream.start = read_buf;
            }
        }
    }
}

/// Returns `endpoint` as hyper serves it over HTTP/1.1, its requests counted in `activity`.
fn http1_service<E: Responder>(
    endpoint: E,
    activity: &Arc<Activity>,
) -> impl ConnectionService + use<E> {
    let activity = Arc::clone(activity);
    service_fn(move |req| {
        activity.start();
        endpoint.respond(req, Some(Ends(Arc::clone(&activity))))
    })
}

/// Logs how a connection that has not been parked ended.
fn log_end(result: Result<(), hyper::Error>) {
    if let Err(err) = result {
        tracing::debug!(error = %err, "connection ended with an error");
    }
}

/// Holds what a connection waits for beside its stream: its timer's ring, and the start of a
/// shutdown. Both sit under one [`Woken`], polled each time the connection wakes: a turn that
/// neither woke costs one check for the two.
struct Waits {
    ring: Pin<Box<Sleep>>,
    closing: Pin<Box<WaitForCancellationFutureOwned>>,
}

/// Says which of a connection's [`Waits`] is over (a shutdown is looked at first).
enum Waited {
    Closing,
    Rang,
}

impl Future for Waits {
    type Output = Waited;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Waited> {
        let this = self.get_mut();
        if this.closing.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Waited::Closing);
        }
        if this.ring.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Waited::Rang);
        }
        Poll::Pending
    }
}

/// Runs `conn` until it ends; from a shutdown on, gracefully (`graceful` starts that: open
/// connections stay through the drain, so that requests on them get a `503`), until the drain
/// budget is spent. The timer's ring means nothing here.
async fn serve_to_end<C: Future<Output = Result<(), hyper::Error>>>(
    conn: C,
    graceful: fn(Pin<&mut C>),
    waits: &mut Woken<Waits>,
    shutdown: &Shutdown,
) {
    tokio::pin!(conn);
    loop {
        tokio::select! {
            result = conn.as_mut() => return log_end(result),
            waited = &mut *waits => if let Waited::Closing = waited {
                break;
            },
        }
    }
    drain(conn, graceful, shutdown).await;
}

/// Runs `conn` through a graceful shutdown (`graceful` starts it), until it ends or the drain
/// budget is spent.
async fn drain<C: Future<Output = Result<(), hyper::Error>>>(
    mut conn: Pin<&mut C>,
    graceful: fn(Pin<&mut C>),
    shutdown: &Shutdown,
) {
    graceful(conn.as_mut());
    tokio::select! {
        result = conn => log_end(result),
        () = Woken::new(shutdown.stopped()) => tracing::warn!("connection dropped: drain budget spent"),
    }
}

/// Holds what a connection's requests tell its timer, and its stream.
#[derive(Debug)]
struct Activity {
    /// Requests started and not ended (an event stream ends when hyper drops its body).
    busy: AtomicU32,
    /// How many requests ended: what a ring compares with the last, to tell that one started
    /// and ended between them. Not when: a clock read per request would cost more than the
    /// timer saves, and a ring that sees a change takes its own time for the end's (late by
    /// less than a period, which only delays a park or a close).
    ended: AtomicU64,
    /// hyper has written and not flushed since: an answer (a large one, to a client that reads
    /// slowly) may still be on its way out after its request ended.
    writing: AtomicBool,
    /// Set while the connection is parked: hyper ends it then, and its stream must stay open.
    parking: AtomicBool,
}

impl Activity {
    fn new() -> Self {
        Self {
            busy: AtomicU32::new(0),
            ended: AtomicU64::new(0),
            writing: AtomicBool::new(false),
            parking: AtomicBool::new(false),
        }
    }

    fn start(&self) {
        self.busy.fetch_add(1, Ordering::Relaxed);
    }

    fn end(&self) {
        self.ended.fetch_add(1, Ordering::Relaxed);
        self.busy.fetch_sub(1, Ordering::Relaxed);
    }

    /// Returns how many requests ended.
    fn ended(&self) -> u64 {
        self.ended.load(Ordering::Relaxed)
    }
}

/// Counts a request in its connection's [`Activity`] until this is dropped: once its answer
/// is ready, or, for an event stream, once hyper drops its body.
pub(crate) struct Ends(Arc<Activity>);

impl Ends {
    /// Returns the answer `res` of a request that `ends` counts: the request ends with it, or, for
    /// an event stream, with its body.
    #[inline]
    pub(crate) fn answered(
        ends: Option<Self>,
        res: Response<ResponseBody>,
    ) -> Response<ResponseBody> {
        match ends {
            Some(ends) if res.body().is_streamed() => res.map(move |body| {
                ResponseBody::streamed(body.map_frame(move |frame| {
                    let _held = &ends;
                    frame
                }))
            }),
            _ => res,
        }
    }
}

impl Drop for Ends {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// Wraps a connection's stream as hyper is given it: what was read before hyper came is read first,
/// and it is not shut down while the connection is parked.
struct ServerIo<I> {
    /// The stream, with what was read before hyper's connection began (the first bytes, or what
    /// the last one held).
    stream: Rewound<WriteDeadline<I>>,
    activity: Arc<Activity>,
}

impl<I: Io> AsyncRead for ServerIo<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

/// Wraps a stream of which some bytes were read already: those are read first.
pub(crate) struct Rewound<I> {
    start: Bytes,
    inner: I,
}

impl<I: AsyncRead + Unpin> AsyncRead for Rewound<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.start.is_empty() {
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        }
        let n = this.start.len().min(buf.remaining());
        buf.put_slice(&this.start.split_to(n));
        Poll::Ready(Ok(()))
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Rewound<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// Returns the TCP stream under a connection served here that hyper has upgraded, with what was
/// read of it and not yet taken read first; or the upgraded connection as it is, when it runs on
/// another stream. The upgraded connection reaches its stream through hyper's box, this module's
/// wrapper and its write deadline; a WebSocket served on it writes to it directly.
#[cfg(feature = "ws")]
pub(crate) fn tcp_under(
    upgraded: hyper::upgrade::Upgraded,
) -> Result<Rewound<tokio::net::TcpStream>, hyper::upgrade::Upgraded> {
    let parts = upgraded.downcast::<TokioIo<ServerIo<tokio::net::TcpStream>>>()?;
    let Rewound { start, inner } = parts.io.into_inner().stream;
    let start = match (start.is_empty(), parts.read_buf.is_empty()) {
        (_, true) => start,
        (true, false) => parts.read_buf,
        (false, false) => [start, parts.read_buf].concat().into(),
    };
    Ok(Rewound {
        start,
        inner: inner.into_inner(),
    })
}

impl<I: Io> AsyncWrite for ServerIo<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.activity.writing.store(true, Ordering::Relaxed);
        Pin::new(&mut this.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.activity.writing.store(true, Ordering::Relaxed);
        Pin::new(&mut this.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    /// Flushes the stream: hyper flushes once all it buffered is written, and then nothing is on
    /// its way out.
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let flushed = Pin::new(&mut this.stream).poll_flush(cx);
        if flushed.is_ready() {
            this.activity.writing.store(false, Ordering::Relaxed);
        }
        flushed
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.activity.parking.load(Ordering::Relaxed) {
            return Pin::new(&mut this.stream).poll_flush(cx);
        }
        Pin::new(&mut this.stream).poll_shutdown(cx)
    }
}

/// Names the hyper connection an HTTP/1.1 connection is served by, between two parkings.
type Http1<I, S> = http1::UpgradeableConnection<TokioIo<ServerIo<I>>, S>;

/// Says what a ring found.
enum Verdict {
    /// The connection is busy, or idle for less than its limits: the timer is set again.
    Keep,
    /// Idle for `free_idle_after`: to be parked.
    Park,
    /// Idle for `header_read_timeout`: to be closed.
    Close,
}

/// Holds the timer of one connection, and what it saw when it last rang.
struct Watch {
    activity: Arc<Activity>,
    /// Its ring, and the shutdown's start.
    waits: Woken<Waits>,
    /// `activity.ended()` when it last rang.
    seen: u64,
    /// When the connection was last seen busy: a ring that found a request running or one
    /// ended since the last ring, or its start.
    active_at: Instant,
    /// How long after a ring that found the connection busy it rings again.
    period: Duration,
    /// The period it starts from, after a ring that found the connection idle.
    first_period: Duration,
    /// The period it grows to while the connection stays busy.
    max_period: Duration,
    header_read_timeout: Duration,
    free_idle_after: Option<Duration>,
    /// `activity.ended()` when hyper's connection began. One that has not served a request is
    /// not parked: hyper ends only an idle connection at once, and one that has not served a
    /// request is not idle, even when it holds part of one (a client trickling its head is then
    /// still cut at `header_read_timeout`).
    began: u64,
    /// This ring was set by one that found requests ended since the ring before and none
    /// running, to look again when the connection would be parked (its last request ended
    /// about then) before it backs off.
    probing: bool,
}

impl Watch {
    fn new(
        protocols: &Protocols,
        activity: Arc<Activity>,
        closing: WaitForCancellationFutureOwned,
    ) -> Self {
        let now = Instant::now();
        let max_period = (protocols.header_read_timeout / 4).clamp(MIN_PERIOD, MAX_PERIOD);
        // A little past `free_idle_after`: a connection that answers one request and goes idle
        // (a client calling now and then) is then parked by the first ring after it.
        let first_period = protocols.free_idle_after.map_or(max_period, |after| {
            (after + after / 4).clamp(MIN_PERIOD, max_period)
        });
        Self {
            activity,
            waits: Woken::new(Waits {
                ring: Box::pin(tokio::time::sleep_until(
                    now + protocols.header_read_timeout,
                )),
                closing: Box::pin(closing),
            }),
            seen: 0,
            active_at: now,
            period: first_period,
            first_period,
            max_period,
            header_read_timeout: protocols.header_read_timeout,
            free_idle_after: protocols.free_idle_after,
            began: 0,
            probing: false,
        }
    }

    /// Waits for the client's next bytes (on a fresh connection, until they are or cannot be
    /// HTTP/2's preface), at most until `header_read_timeout` after the connection was last
    /// busy, and puts them where hyper reads them first. Whether they are the preface; `None`
    /// when the connection is to close: the client closed it or sent nothing in time, a read
    /// failed, or a shutdown began.
    async fn wait_for_bytes<I: Io>(&mut self, io: &mut ServerIo<I>, fresh: bool) -> Option<bool> {
        self.set(self.active_at + self.header_read_timeout);
        let read = read_start(&mut io.stream.inner, fresh);
        tokio::pin!(read);
        let waits = &mut self.waits;
        let start = poll_fn(|cx| {
            if let Poll::Ready(read) = read.as_mut().poll(cx) {
                return Poll::Ready(Some(read));
            }
            if Pin::new(&mut *waits).poll(cx).is_ready() {
                return Poll::Ready(None);
            }
            Poll::Pending
        })
        .await;
        let start = match start? {
            Ok(start) if !start.is_empty() => start,
            Ok(_) => return None,
            Err(err) => {
                tracing::debug!(error = %err, "connection ended with an error");
                return None;
            }
        };
        let h2 = fresh && start.starts_with(PREFACE);
        io.stream.start = start;
        self.period = self.first_period;
        self.set(Instant::now() + self.period);
        Some(h2)
    }

    /// Serves `conn` until it ends, or the timer closes it (`None`), or parks it: then its
    /// parts, the stream and the service to start the next one with, and what hyper had read.
    async fn serve<I: Io, S>(
        &mut self,
        mut conn: Pin<Box<Http1<I, S>>>,
        shutdown: &Shutdown,
    ) -> Option<http1::Parts<TokioIo<ServerIo<I>>, S>>
    where
        S: ConnectionService,
    {
        self.began = self.activity.ended();
        loop {
            let waits = &mut self.waits;
            // The waits first: when the ring is all that woke the task, hyper's connection has
            // nothing to do, and a poll of it costs more than the rest of the turn.
            let turn = poll_fn(|cx| {
                match Pin::new(&mut *waits).poll(cx) {
                    Poll::Ready(Waited::Rang) => return Poll::Ready(Turn::Rang),
                    Poll::Ready(Waited::Closing) => return Poll::Ready(Turn::Closing),
                    Poll::Pending => {}
                }
                if let Poll::Ready(result) = conn.as_mut().poll(cx) {
                    return Poll::Ready(Turn::Ended(result));
                }
                Poll::Pending
            })
            .await;
            match turn {
                Turn::Ended(result) => {
                    log_end(result);
                    return None;
                }
                Turn::Closing => {
                    drain(conn.as_mut(), Http1::graceful_shutdown, shutdown).await;
                    return None;
                }
                Turn::Rang => match self.rang() {
                    Verdict::Keep => {}
                    Verdict::Close => {
                        tracing::debug!(
                            "connection closed: no request within the header read timeout"
                        );
                        return None;
                    }
                    Verdict::Park => {
                        // Idle, hyper's connection ends in the poll right after, and the stream
                        // is not shut down meanwhile.
                        self.activity.parking.store(true, Ordering::Relaxed);
                        conn.as_mut().graceful_shutdown();
                        let polled = poll_fn(|cx| Poll::Ready(conn.as_mut().poll(cx))).await;
                        self.activity.parking.store(false, Ordering::Relaxed);
                        match polled {
                            Poll::Ready(Ok(())) => {
                                // `None` when it was upgraded meanwhile.
                                let parts = (*Pin::into_inner(conn)).into_parts();
                                if parts.is_some() {
                                    tracing::trace!(
                                        "idle connection parked: its buffers are freed"
                                    );
                                }
                                return parts;
                            }
                            Poll::Ready(Err(err)) => {
                                log_end(Err(err));
                                return None;
                            }
                            // Not idle after all: hyper closes the connection once done with
                            // what it is doing (it may have told the client so), as it would
                            // have had a shutdown begun.
                            Poll::Pending => {}
                        }
                    }
                },
            }
        }
    }

    /// Returns what the ring that just rang found, the timer set again unless it is to park or
    /// close.
    fn rang(&mut self) -> Verdict {
        let now = Instant::now();
        let ended = self.activity.ended();
        let busy = self.activity.busy.load(Ordering::Relaxed) > 0
            || self.activity.writing.load(Ordering::Relaxed);
        let moved = ended != self.seen;
        self.seen = ended;
        if busy || moved {
            self.active_at = now;
        }
        let timeout = self.active_at + self.header_read_timeout;
        let park = self
            .free_idle_after
            .filter(|_| ended != self.began)
            .map(|after| self.active_at + after);
        if !busy && now >= timeout {
            return Verdict::Close;
        }
        if !busy && park.is_some_and(|at| now >= at) {
            // Rings again at the timeout, should hyper not end the connection at once.
            self.set(timeout);
            return Verdict::Park;
        }
        let was_probing = std::mem::take(&mut self.probing);
        if !busy
            && moved
            && !was_probing
            && let Some(at) = park
        {
            // Idle from about now, perhaps: looked at again once it would be parked.
            self.probing = true;
            self.set(at);
        } else if busy || moved {
            // Busy since the last ring: looked at again later, and later each time.
            self.set(now + self.period);
            self.period = (self.period * 2).min(self.max_period);
        } else {
            self.period = self.first_period;
            self.set(park.map_or(timeout, |at| at.min(timeout)));
        }
        Verdict::Keep
    }

    fn set(&mut self, at: Instant) {
        self.waits.inner_mut().get_mut().ring.as_mut().reset(at);
    }
}

/// Says what woke a connection being served.
enum Turn {
    Ended(Result<(), hyper::Error>),
    Closing,
    Rang,
}

/// Reads the first bytes the client sends: what one read gives (on a fresh connection, until
/// they are or cannot be HTTP/2's preface), taking at once what more is waiting; empty at the
/// end of the stream. Only a small buffer waits for them: a larger one is made when they come.
async fn read_start<I: Io>(io: &mut WriteDeadline<I>, fresh: bool) -> io::Result<Bytes> {
    let mut head = [0u8; PREFACE.len()];
    let mut filled = 0;
    loop {
        let n = io.read(&mut head[filled..]).await?;
        filled += n;
        if n == 0 || filled == head.len() || !(fresh && head[..filled] == PREFACE[..filled]) {
            break;
        }
    }
    let mut start = Vec::with_capacity(START);
    start.extend_from_slice(&head[..filled]);
    if filled == head.len()
        && let Some(read) = io.read_buf(&mut start).now_or_never()
    {
        read?;
    }
    Ok(Bytes::from(start))
}
