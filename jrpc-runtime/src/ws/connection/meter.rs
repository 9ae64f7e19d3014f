//! Counts the socket's bytes in the server's byte budget as they arrive: the reader under
//! tungstenite.
//!
//! tungstenite reads a whole frame into its own buffer before the pump sees a message, so a look
//! at the budget between messages comes too late: a thousand clients that each begin a frame of
//! megabytes while the budget has room would each be read whole. And that buffer does not
//! shrink: it keeps the size of the largest frame read, as long as the connection lives (its
//! write buffer keeps the size of the most written between two flushes, likewise). [`Metered`]
//! sits between the socket and tungstenite, follows the frame headers in the bytes it reads, and
//! before a read:
//!
//! | where the stream is | what it does first |
//! | --- | --- |
//! | between frames, or in a header | waits while the server's budget is full |
//! | in a data frame's payload (text, binary, continuation) | takes from the budget what tungstenite's buffer must grow by to hold the frame, and room for the frame's bytes in the message they make: whole, or waits until it fits (more than the whole budget goes once nothing else is held) |
//! | in a control frame's payload (at most 125 bytes) | nothing: tungstenite keeps none |
//!
//! So the [`Meter`] counts tungstenite's read buffer, as large as the largest frame read, for as
//! long as tungstenite keeps it, and each message read until the pump is done with it: the room
//! of what it becomes (its copy handed to the peer's loop, its answer, the message tungstenite
//! gathers from fragments), so that a message is not read before there is room for that, and
//! then its copy or answer counts in its place. A frame's room is only ever taken whole, so no
//! frame waits for room that half-read frames hold: a frame taken is read to its end as fast as
//! its client sends it. What one read brings past the frame being read (at most
//! `read_buffer_size`) lands in the buffer tungstenite has, and a frame read whole in one read is
//! counted once read.
//!
//! The pump gives tungstenite fresh buffers once a large message has come and gone (see
//! [`Meter::idle`]), and the buffer's count goes back with the old ones.
//!
//! Over a raw socket the stream begins with the opening handshake, which is passed over (up to
//! the blank line that ends its head): frames, and the following of their headers, begin after
//! it, however the handshake's reads fall.
//!
//! The meter also knows when the socket has nothing to read ([`Meter::quiet`]): from a read that
//! found nothing until the socket is woken for reading. tungstenite zeroes its whole read buffer
//! before each attempt, so the pump, woken mostly to write (answers, subscriptions'
//! notifications), skips the attempts that could find nothing.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context as TaskContext, Poll, ready};

use futures_util::task::{ArcWake, AtomicWaker, waker_ref};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::limits::ServerBudget;

/// Counts what one connection's incoming messages hold in its server's byte budget. Only its pump's
/// task uses it: the atomics are for `Sync`, not for races.
#[derive(Debug)]
pub(crate) struct Meter {
    server: Arc<ServerBudget>,
    /// What tungstenite's read buffer holds when it is made (`read_buffer_size`): not counted.
    base: usize,
    /// Counted for tungstenite's read buffer: what it grew by past `base`, to hold the largest
    /// data frame read since it was made.
    buffer: AtomicUsize,
    /// Counted for the messages read, until the pump is done with them.
    message: AtomicUsize,
    /// A frame over this is refused by tungstenite once its header is read: nothing is taken
    /// for it.
    max_frame: usize,
    /// Whether the reader waits for room: the socket is not read meanwhile.
    waiting: AtomicBool,
    /// Whether the stream is between frames, with no message half gathered.
    between: AtomicBool,
    /// The messages tungstenite makes of the frames read whole (one for each control frame and
    /// each final data frame), and those the pump took: equal when tungstenite holds none.
    made: AtomicU64,
    taken: AtomicU64,
    /// Whether the socket's last read found nothing, and it has not been woken for reading since.
    quiet: AtomicBool,
    /// Who waits to read: the waker the socket's last read was given, woken through the meter.
    reader: AtomicWaker,
}

impl Meter {
    /// Returns a meter counting in `server`'s budget, for frames of at most `max_frame` bytes read
    /// by a tungstenite whose read buffer starts at `base` bytes.
    pub(crate) fn new(server: Arc<ServerBudget>, max_frame: usize, base: usize) -> Arc<Self> {
        Arc::new(Self {
            server,
            base,
            buffer: AtomicUsize::new(0),
            message: AtomicUsize::new(0),
            max_frame,
            waiting: AtomicBool::new(false),
            between: AtomicBool::new(true),
            made: AtomicU64::new(0),
            taken: AtomicU64::new(0),
            quiet: AtomicBool::new(false),
            reader: AtomicWaker::new(),
        })
    }

    /// Notes that the pump took a message off the socket.
    pub(crate) fn took(&self) {
        self.taken.fetch_add(1, Ordering::Relaxed);
    }

    /// Notes that the pump is done with the messages taken so far (answered, or counted where they
    /// went): their room is given back.
    pub(crate) fn release(&self) {
        self.server
            .give_back(self.message.swap(0, Ordering::Relaxed));
    }

    /// Returns whether tungstenite holds no input: the stream is between frames and every message
    /// it made of them was taken. With its output flushed, it may then be made anew, its buffers
    /// dropped.
    pub(crate) fn idle(&self) -> bool {
        self.between.load(Ordering::Relaxed)
            && self.made.load(Ordering::Relaxed) == self.taken.load(Ordering::Relaxed)
    }

    /// Returns the bytes counted for tungstenite's read buffer: what it grew by.
    pub(crate) fn buffer(&self) -> usize {
        self.buffer.load(Ordering::Relaxed)
    }

    /// Notes that tungstenite was made anew: its old buffer's count goes back.
    pub(crate) fn renewed(&self) {
        self.server
            .give_back(self.buffer.swap(0, Ordering::Relaxed));
    }

    /// Returns whether the socket has nothing to read: its last read found nothing, and it has
    /// not been woken for reading since. tungstenite then holds no whole frame either (it reads
    /// the socket only for more), so a read would find nothing but cost the zeroing of its buffer.
    pub(crate) fn quiet(&self) -> bool {
        self.quiet.load(Ordering::Acquire)
    }

    /// Returns whether the socket waits for room in the server's budget.
    pub(crate) fn waits(&self) -> bool {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Returns the bytes counted now.
    #[cfg(test)]
    fn counted(&self) -> usize {
        self.buffer.load(Ordering::Relaxed) + self.message.load(Ordering::Relaxed)
    }

    /// Returns what reading a data frame of `len` bytes adds: the buffer's growth, and the frame's
    /// room in its message.
    fn needs(&self, len: usize) -> (usize, usize) {
        let capacity = self.base + self.buffer.load(Ordering::Relaxed);
        (len.saturating_sub(capacity), len)
    }

    /// Counts `growth` and `message`, taken (or forced) in the server's budget.
    fn count(&self, (growth, message): (usize, usize)) {
        self.buffer.fetch_add(growth, Ordering::Relaxed);
        self.message.fetch_add(message, Ordering::Relaxed);
    }
}

impl ArcWake for Meter {
    /// Notes that the socket may have something to read, and wakes its reader.
    fn wake_by_ref(meter: &Arc<Self>) {
        meter.quiet.store(false, Ordering::Release);
        meter.reader.wake();
    }
}

impl Drop for Meter {
    /// Gives back to the budget, with the meter, what the connection's messages still held.
    fn drop(&mut self) {
        let held = *self.buffer.get_mut() + *self.message.get_mut();
        self.server.give_back(held);
    }
}

/// Wraps a socket, counting its incoming bytes in a [`Meter`] (see the module docs); writes pass
/// through.
pub(crate) struct Metered<S> {
    io: S,
    meter: Option<Arc<Meter>>,
    frames: Frames,
}

impl<S> Metered<S> {
    /// Returns `io`, its frames counted in `meter` (`None`: nothing is counted). `handshake` when
    /// the stream begins with the opening handshake's request.
    pub(crate) fn new(io: S, meter: Option<Arc<Meter>>, handshake: bool) -> Self {
        Self {
            io,
            meter,
            frames: Frames::new(handshake),
        }
    }

    /// Polls for room: ready once this read may go; see the module docs.
    fn poll_room(&mut self, cx: &TaskContext<'_>) -> Poll<()> {
        let Some(meter) = &self.meter else {
            return Poll::Ready(());
        };
        let frames = &mut self.frames;
        if frames.head.is_some() {
            // The handshake's few hundred bytes are not counted, and not held up.
            return Poll::Ready(());
        }
        let len = usize::try_from(frames.len).unwrap_or(usize::MAX);
        let room = if frames.left == 0 {
            meter.server.poll_room(cx)
        } else if frames.counted || !frames.data || len > meter.max_frame {
            Poll::Ready(())
        } else {
            let needs = meter.needs(len);
            let taken = meter.server.poll_take(needs.0 + needs.1, cx);
            if taken.is_ready() {
                meter.count(needs);
                frames.counted = true;
            }
            taken
        };
        meter.waiting.store(room.is_pending(), Ordering::Relaxed);
        room
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Metered<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_room(cx));
        let before = buf.filled().len();
        let Some(meter) = &this.meter else {
            return Pin::new(&mut this.io).poll_read(cx, buf);
        };
        // Read with the meter as the waker, which notes the socket woken before it wakes the
        // reader; quiet from before the read, so that a wake in between is not lost.
        meter.reader.register(cx.waker());
        meter.quiet.store(true, Ordering::Release);
        let waker = waker_ref(meter);
        let read = Pin::new(&mut this.io).poll_read(&mut TaskContext::from_waker(&waker), buf);
        ready!(read)?;
        meter.quiet.store(false, Ordering::Release);
        this.frames.advance(&buf.filled()[before..], meter);
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Metered<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// Tracks where the incoming stream is, followed byte by byte through headers and by length through
/// payloads.
///
/// | state | meaning |
/// | --- | --- |
/// | `head: Some(n)` | in the handshake's request; `n` bytes of its closing `\r\n\r\n` seen |
/// | `have > 0` | in a frame header, `have` bytes of it in `header` |
/// | `left > 0` | in the payload of a frame of `len` bytes: `left` to come |
/// | none of those | between frames |
#[derive(Debug)]
struct Frames {
    head: Option<u8>,
    header: [u8; 14],
    have: usize,
    len: u64,
    left: u64,
    /// The frame carries data (text, binary, continuation), not control.
    data: bool,
    /// It is a message's last frame.
    fin: bool,
    /// A message's first frame came without its last: the frames until the last are gathered.
    open: bool,
    /// Its room was taken (or it needs none).
    counted: bool,
}

impl Frames {
    fn new(handshake: bool) -> Self {
        Self {
            head: handshake.then_some(0),
            header: [0; 14],
            have: 0,
            len: 0,
            left: 0,
            data: false,
            fin: true,
            open: false,
            counted: false,
        }
    }

    /// Follows `bytes`, just read, telling `meter` of the frames that end in them, and counting
    /// (whatever the budget holds) the data frames read whole before their room could be taken.
    fn advance(&mut self, mut bytes: &[u8], meter: &Meter) {
        while !bytes.is_empty() {
            if let Some(seen) = self.head {
                let at = bytes[0];
                bytes = &bytes[1..];
                let expected = b"\r\n\r\n"[usize::from(seen)];
                let seen = match at {
                    _ if at == expected => seen + 1,
                    b'\r' => 1,
                    _ => 0,
                };
                self.head = (seen < 4).then_some(seen);
                continue;
            }
            if self.left > 0 {
                let n = usize::try_from(self.left)
                    .unwrap_or(usize::MAX)
                    .min(bytes.len());
                self.left -= n as u64;
                bytes = &bytes[n..];
                if self.left == 0 {
                    self.ended(meter);
                }
                continue;
            }
            self.header[self.have] = bytes[0];
            self.have += 1;
            bytes = &bytes[1..];
            if let Some((len, opcode, fin)) = header(&self.header[..self.have]) {
                self.have = 0;
                self.len = len;
                self.left = len;
                self.data = opcode < 8;
                self.fin = fin;
                self.counted = false;
                if len == 0 {
                    self.ended(meter);
                }
            }
        }
        meter.between.store(
            self.head.is_none() && self.have == 0 && self.left == 0 && !self.open,
            Ordering::Relaxed,
        );
    }

    /// Notes that the frame being read has ended: tungstenite makes a message of it, or gathers it.
    fn ended(&mut self, meter: &Meter) {
        if !self.counted && self.data {
            // Read whole in one read, before its room could be taken.
            let len = usize::try_from(self.len).unwrap_or(usize::MAX);
            let needs = meter.needs(len);
            meter.server.force(needs.0 + needs.1);
            meter.count(needs);
        }
        self.counted = true;
        if self.data {
            self.open = !self.fin;
        }
        if !self.data || self.fin {
            meter.made.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Returns the payload length, the opcode and the final bit of a frame whose header begins `bytes`;
/// `None` while the header is not whole.
fn header(bytes: &[u8]) -> Option<(u64, u8, bool)> {
    let (&first, rest) = bytes.split_first()?;
    let (&second, rest) = rest.split_first()?;
    let extended = match second & 0x7F {
        126 => 2,
        127 => 8,
        _ => 0,
    };
    let mask = if second & 0x80 != 0 { 4 } else { 0 };
    if rest.len() < extended + mask {
        return None;
    }
    let len = match extended {
        0 => u64::from(second & 0x7F),
        _ => rest[..extended]
            .iter()
            .fold(0u64, |len, byte| (len << 8) | u64::from(*byte)),
    };
    Some((len, first & 0x0F, first & 0x80 != 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Returns a masked frame with `opcode`, `fin` and `payload`, as a client sends it.
    fn frame(opcode: u8, fin: bool, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![if fin { 0x80 } else { 0 } | opcode];
        match payload.len() {
            n if n < 126 => out.push(0x80 | n as u8),
            n if n <= 0xFFFF => {
                out.push(0x80 | 126);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                out.push(0x80 | 127);
                out.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        out.extend_from_slice(&[1, 2, 3, 4]);
        out.extend(
            payload
                .iter()
                .enumerate()
                .map(|(i, b)| b ^ [1, 2, 3, 4][i % 4]),
        );
        out
    }

    #[test]
    fn follows_headers_and_payloads_however_the_reads_fall() {
        let mut stream = b"GET /ws HTTP/1.1\r\nHost: x\r\n\r\n".to_vec();
        stream.extend(frame(1, true, &[b'a'; 300]));
        stream.extend(frame(9, true, b"ping"));
        stream.extend(frame(1, false, &[b'b'; 70_000]));
        stream.extend(frame(0, true, b"c"));
        for step in [1, 3, 7, 100, 4096, stream.len()] {
            let meter = Meter::new(ServerBudget::new(1 << 20), 1 << 20, 0);
            let mut frames = Frames::new(true);
            for chunk in stream.chunks(step) {
                frames.advance(chunk, &meter);
            }
            assert!(frames.head.is_none() && frames.have == 0 && frames.left == 0);
            // Three messages: the text, the ping, the text of two fragments.
            assert_eq!(meter.made.load(Ordering::Relaxed), 3, "reads of {step}");
            assert!(meter.between.load(Ordering::Relaxed));
            // The frames, read before their room was taken, are counted all the same: the
            // buffer that held the largest, and the room of the messages.
            assert_eq!(meter.counted(), 70_000 + 70_301, "reads of {step}");
            meter.release();
            assert_eq!(meter.counted(), 70_000);
        }
    }

    #[tokio::test]
    async fn a_frame_takes_its_room_whole_before_its_payload_is_read() {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let server = ServerBudget::new(2000);
        let meter = Meter::new(Arc::clone(&server), 1 << 20, 0);
        let (mut client, socket) = tokio::io::duplex(1 << 16);
        let mut socket = Metered::new(socket, Some(Arc::clone(&meter)), false);
        // Something else holds 1 000 bytes: a frame of 700 (the buffer's growth, and its room in
        // its message) does not fit.
        let other = server.hold(1000);
        let big = frame(1, true, &[b'x'; 700]);
        client.write_all(&big).await.unwrap();
        let mut buf = [0; 10];
        // What one read brings comes in the buffer tungstenite has...
        assert_eq!(socket.read(&mut buf).await.unwrap(), 10);
        assert_eq!(meter.counted(), 0);
        // ...then the rest waits, unread, until the frame's room is given.
        let mut rest = vec![0; big.len() - 10];
        let reading = socket.read_exact(&mut rest);
        tokio::pin!(reading);
        assert!(futures_util::poll!(reading.as_mut()).is_pending());
        assert!(meter.waits());
        drop(other);
        reading.await.unwrap();
        assert!(!meter.waits());
        assert_eq!(server.held(), 1400);
        // tungstenite made a message of it; once the pump took it, it holds no input.
        assert!(!meter.idle());
        meter.took();
        assert!(meter.idle());
        // Done with the message: its room goes back, while the buffer stays as large, and
        // counted. A frame that fits in it needs room for its message only.
        meter.release();
        assert_eq!(server.held(), 700);
        let other = server.hold(700);
        let fits = frame(1, true, &[b'y'; 500]);
        client.write_all(&fits).await.unwrap();
        let mut read = vec![0; fits.len()];
        socket.read_exact(&mut read).await.unwrap();
        assert_eq!(server.held(), 1900);
        meter.took();
        meter.release();
        drop(other);
        // Made anew, tungstenite's buffer goes, and its count.
        meter.renewed();
        assert_eq!(server.held(), 0);
    }
}
