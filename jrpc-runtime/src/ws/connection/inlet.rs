//! Runs the pump's reading side: messages off the socket, answered where they are read or handed
//! across to the peer's loop.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context as TaskContext, Poll};

use futures_util::StreamExt as _;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Error as WsError;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

use super::link::{Link, RUN, Sending};
use super::meter::Meter;
use super::{BinaryFrames, End};
use crate::framing::Frame;
use crate::limits::Held;
use crate::peer::{Feed, Input, Read};

/// Moves messages off the socket and across to the peer's loop: the pump's reading side.
///
/// What waits for the peer is bounded as before runs crossed together: the messages handed
/// across and not taken hold at most `room` bytes together (or one message, however large),
/// and one more, read while they did not fit, waits here; the socket is not read past it. A
/// call started here crosses beside them, uncounted: at most one is on its way, since nothing is
/// answered here again until the loop has taken it. On a server, what the socket brings is
/// counted in its budget by the socket's [`Meter`] (tungstenite's buffer, a message gathered
/// from fragments until it is answered here or crosses), the message waiting here by `held`,
/// and those across by the link.
pub(super) struct Inlet {
    /// Runs of frames to the peer's loop; `None` once reading stopped (shutdown, or the loop
    /// ended).
    pub(super) frames: Option<Sending<Input>>,
    /// A message read while the peer had no room for it.
    pub(super) pending: Option<String>,
    /// Its bytes in the server's budget, until the link counts them.
    pub(super) held: Option<Held>,
    /// What answers calls here, while the peer's loop waits for more; `None` hands every
    /// message over.
    pub(super) inline: Option<Feed>,
    pub(super) link: Arc<Link>,
    /// What the messages read hold in the server's budget, until they are answered or cross.
    pub(super) meter: Option<Arc<Meter>>,
    /// The peer's room for a message being read: its `max_message_size`.
    pub(super) room: usize,
    pub(super) max_message_size: Option<usize>,
    /// What a binary frame is.
    pub(super) binary: BinaryFrames,
}

impl Inlet {
    /// Returns whether the peer still takes messages.
    pub(super) fn is_open(&self) -> bool {
        self.frames.is_some()
    }

    /// Returns whether the socket is being read: the peer takes messages, none waits for room, and
    /// the server's budget has room for what comes.
    pub(super) fn reads(&self) -> bool {
        self.frames.is_some() && self.pending.is_none() && !self.waits()
    }

    /// Returns whether tungstenite's read buffer has grown (asked once the socket was read).
    pub(super) fn grown(&self) -> bool {
        self.meter.as_ref().is_some_and(|meter| meter.buffer() > 0)
    }

    /// Returns whether the socket waits for room in the server's budget.
    fn waits(&self) -> bool {
        self.meter.as_ref().is_some_and(|meter| meter.waits())
    }

    /// Notes that the messages read so far are answered, or counted where they went: the meter
    /// gives back their bytes.
    fn release(&self) {
        if let Some(meter) = &self.meter {
            meter.release();
        }
    }

    /// Stops reading: what waits is dropped, and the peer's loop sees the end of its input.
    pub(super) fn close(&mut self) {
        self.pending = None;
        self.held = None;
        self.frames = None;
    }

    /// Reads what the socket has, up to [`RUN`] messages: answers the calls that finish at once
    /// into `answers` while the peer's loop waits for more and the outbox has room for them
    /// (`Some`), and hands the rest across as one run. Ready once something moved (`Ok`), or
    /// when the connection must end.
    pub(super) fn poll<S>(
        &mut self,
        ws: &mut WebSocketStream<S>,
        answers: Option<&mut VecDeque<String>>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Result<(), End>>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let Some(frames) = self.frames.as_ref() else {
            return Poll::Pending;
        };
        match frames.lane().poll_room(cx) {
            Poll::Ready(Ok(())) => {}
            Poll::Ready(Err(_)) => {
                // The peer's loop ended; the outbox reports it once flushed.
                self.close();
                return Poll::Ready(Ok(()));
            }
            Poll::Pending => return Poll::Pending,
        }
        let waited = self.waits();
        // Answered here only while the loop has dealt with all it was handed: so in order.
        let mut inline = self.inline.as_ref().zip(answers).filter(|(inline, _)| {
            self.pending.is_none() && frames.lane().taker_waits() && inline.caught_up()
        });
        let mut run = Vec::new();
        let mut read = false;
        let mut answered = 0;
        let end = loop {
            if let Some(text) = self.pending.take() {
                if !self.fits(text.len(), cx) {
                    self.pending = Some(text);
                    break None;
                }
                self.link.bytes.fetch_add(text.len(), Ordering::AcqRel);
                if let Some(server) = &self.link.server {
                    server.force(text.len());
                }
                self.held = None;
                run.push(Input::Frame(Frame::Message(text)));
            }
            if run.len() + answered == RUN {
                break None;
            }
            // Nothing to read: not asked, which would cost tungstenite's zeroing of its buffer.
            if self.meter.as_ref().is_some_and(|meter| meter.quiet()) {
                break None;
            }
            // While the server's budget is spent, the socket's meter does not read it.
            let Poll::Ready(message) = ws.poll_next_unpin(cx) else {
                break None;
            };
            read = true;
            if let Some(meter) = &self.meter {
                meter.took();
            }
            let text = match self.received(message) {
                Ok(Some(text)) => text,
                Ok(None) => continue,
                Err(end) => break Some(end),
            };
            // Past the in-flight cap or half the budget, the loop waits, or refuses.
            if let Some((answering, answers)) = inline.as_mut().filter(|(d, _)| d.open()) {
                let handled = answer_inline(answering, answers, text.as_str(), &mut run);
                if let Some((behind, answers)) = handled {
                    answered += answers;
                    if behind {
                        inline = None;
                    }
                    self.release();
                    continue;
                }
            }
            inline = None;
            self.hold_pending(text.as_str().to_owned());
        };
        if let Some(end) = end {
            return Poll::Ready(Err(end));
        }
        // A message that waited for room also counts, as does the end of a wait for the server's
        // budget: the idle clock stood while they waited.
        let moved = read || !run.is_empty() || (waited && !self.waits());
        if !run.is_empty()
            && let Some(frames) = self.frames.as_ref()
            && frames.lane().send(run).is_err()
        {
            self.close();
        }
        if moved {
            Poll::Ready(Ok(()))
        } else {
            Poll::Pending
        }
    }

    /// Keeps a message read for the peer's loop until it has room, held in the server's budget
    /// meanwhile.
    fn hold_pending(&mut self, text: String) {
        self.held = self
            .link
            .server
            .as_ref()
            .map(|server| server.hold(text.len()));
        self.pending = Some(text);
        self.release();
    }

    /// Returns whether a message of `bytes` may join those waiting for the peer; if not, this task
    /// is woken when the peer takes one.
    fn fits(&self, bytes: usize, cx: &mut TaskContext<'_>) -> bool {
        let fits = |waiting: usize| waiting == 0 || waiting.saturating_add(bytes) <= self.room;
        if fits(self.link.bytes.load(Ordering::Acquire)) {
            return true;
        }
        // Registered before the count is read again: a message taken in between is not missed.
        self.link.taken.register(cx.waker());
        fits(self.link.bytes.load(Ordering::Acquire))
    }

    /// Takes one message off the socket: a text for the peer, nothing (control frames), or the
    /// end of the connection.
    fn received(
        &self,
        message: Option<Result<Message, WsError>>,
    ) -> Result<Option<Utf8Bytes>, End> {
        match message {
            None => Err(End::Gone("the socket ended".into())),
            Some(Ok(Message::Text(text))) => Ok(Some(text)),
            Some(Ok(Message::Binary(bytes))) => match self.binary {
                BinaryFrames::Accept => Utf8Bytes::try_from(bytes)
                    .map(Some)
                    .map_err(|_| End::NotUtf8),
                _ => Err(End::Binary),
            },
            // tungstenite answers pings itself; a pong only shows the other side is alive.
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => Ok(None),
            Some(Ok(Message::Close(_))) => Err(End::ClosedByOther),
            Some(Err(WsError::Capacity(err))) => {
                let limit = self.max_message_size.unwrap_or(usize::MAX);
                tracing::warn!(%err, "WebSocket message over the cap");
                Err(End::TooBig(format!(
                    "message exceeds the limit of {limit} bytes"
                )))
            }
            Some(Err(WsError::Utf8(_))) => Err(End::NotUtf8),
            Some(Err(WsError::Protocol(err))) => Err(End::Protocol(err.to_string())),
            Some(Err(err)) => Err(End::Gone(format!("read failed: {err}"))),
        }
    }
}

/// Offers a message to be answered at once: `None` when it is not for that (it goes to the
/// peer's loop); else whether what follows must go behind it to the loop (what its handler sent
/// goes first, or its call waits), and how many answers it counts for (`0` for a call handed to
/// the loop in `run`).
fn answer_inline(
    answering: &Feed,
    answers: &mut VecDeque<String>,
    text: &str,
    run: &mut Vec<Input>,
) -> Option<(bool, usize)> {
    match answering.read(text) {
        Read::Answered(answer) => {
            answers.push_back(answer);
            Some((false, 1))
        }
        Read::Done => Some((false, 1)),
        Read::Queued => Some((true, 1)),
        Read::Waiting(call) => {
            run.push(call);
            Some((true, 0))
        }
        Read::Other => None,
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::future::poll_fn;

    use futures_util::SinkExt as _;
    use tokio_tungstenite::tungstenite::protocol::Role;

    use super::super::link::{Reader, ends};
    use super::*;

    type Duplex = WebSocketStream<tokio::io::DuplexStream>;

    /// Holds the inlet, the socket it reads, the peer's end, and the client (kept, so that the
    /// server side does not see the socket end).
    type Test = (Inlet, Duplex, Reader, Duplex);

    /// Returns a server-side socket whose client has sent `texts`, and the inlet reading it.
    async fn inlet_after(texts: &[&str], room: usize) -> Test {
        let (server, client) = tokio::io::duplex(1 << 16);
        let mut client = WebSocketStream::from_raw_socket(client, Role::Client, None).await;
        for text in texts {
            client.feed(Message::text(*text)).await.unwrap();
        }
        client.flush().await.unwrap();
        let server = WebSocketStream::from_raw_socket(server, Role::Server, None).await;
        let link = Link::new(None);
        let (frames_tx, frames_rx) = ends(&link, Link::inbound);
        let reader = Reader {
            frames: frames_rx,
            run: Vec::new().into_iter(),
        };
        let inlet = Inlet {
            frames: Some(frames_tx),
            pending: None,
            held: None,
            inline: None,
            link,
            meter: None,
            room,
            max_message_size: None,
            binary: BinaryFrames::Accept,
        };
        (inlet, server, reader, client)
    }

    fn text(input: Option<Result<Input, Infallible>>) -> String {
        match input {
            Some(Ok(Input::Frame(Frame::Message(text)))) => text,
            Some(Ok(Input::Frame(other))) => panic!("expected a message, got {other:?}"),
            Some(Ok(Input::Waiting(_))) => panic!("expected a message, got a call started"),
            None => panic!("expected a message, got the end"),
        }
    }

    #[tokio::test]
    async fn what_waits_for_the_peer_holds_at_most_its_room() {
        let texts = [
            "a".repeat(100),
            "b".repeat(100),
            "c".repeat(100),
            "d".repeat(100),
        ];
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let (mut inlet, mut source, mut reader, _open) = inlet_after(&texts, 250).await;
        let read = poll_fn(|cx| inlet.poll(&mut source, None, cx)).await;
        assert!(read.is_ok());
        // Two fit in 250 bytes; the third waits in the pump, and the socket is read no further.
        assert_eq!(inlet.link.bytes.load(Ordering::Acquire), 200);
        assert_eq!(inlet.pending.as_deref(), Some(texts[2]));
        assert!(!inlet.reads());
        assert_eq!(text(reader.next().await), texts[0]);
        assert_eq!(inlet.link.bytes.load(Ordering::Acquire), 100);
        // Room for one more: the waiting message goes, and the next is read.
        let read = poll_fn(|cx| inlet.poll(&mut source, None, cx)).await;
        assert!(read.is_ok());
        assert_eq!(inlet.link.bytes.load(Ordering::Acquire), 200);
        assert_eq!(inlet.pending.as_deref(), Some(texts[3]));
        for expected in &texts[1..3] {
            assert_eq!(text(reader.next().await), *expected);
        }
        assert_eq!(inlet.link.bytes.load(Ordering::Acquire), 0);
    }
    #[tokio::test]
    async fn one_message_larger_than_the_room_still_crosses_alone() {
        let big = "x".repeat(300);
        let (mut inlet, mut source, mut reader, _open) = inlet_after(&[&big, "{}"], 250).await;
        let read = poll_fn(|cx| inlet.poll(&mut source, None, cx)).await;
        assert!(read.is_ok());
        assert_eq!(inlet.link.bytes.load(Ordering::Acquire), 300);
        assert_eq!(inlet.pending.as_deref(), Some("{}"));
        assert_eq!(text(reader.next().await), big);
        let read = poll_fn(|cx| inlet.poll(&mut source, None, cx)).await;
        assert!(read.is_ok());
        assert_eq!(text(reader.next().await), "{}");
    }
}
