//! The socket's bytes, counted in the server's byte budget as they arrive: the reader under
//! tungstenite.
//!
//! tungstenite reads a whole frame into its own buffer before the pump sees a message, so a look
//! at the budget between messages comes too late: a thousand clients that each begin a frame of
//! megabytes while the budget has room would each be read whole. [`Metered`] sits between the
//! socket and tungstenite, follows the frame headers in the bytes it reads, and before a read:
//!
//! | where the stream is | what it does first |
//! | --- | --- |
//! | between frames, or in a header | waits while the server's budget is full |
//! | in a data frame's payload (text, binary, continuation) | takes what is still to come of that payload from the budget, whole, or waits until it fits (one larger than the whole budget goes once nothing else is held) |
//! | in a control frame's payload (at most 125 bytes) | nothing: tungstenite takes it at once |
//!
//! The payload bytes of data frames stay counted in the [`Meter`] until the pump is done with the
//! message they make: handed to the peer's loop (where the link counts it), or answered. What was
//! read past that message (at most one read, `read_buffer_size`) is given back with it, and is not
//! counted until its own message comes. A frame's room is only ever taken whole, so no frame waits
//! for room that half-read frames hold: a frame taken is read to its end as fast as its client
//! sends it. Control frames are not counted: tungstenite keeps none of them.
//!
//! Over a raw socket the stream begins with the opening handshake, which is passed over (up to
//! the blank line that ends its head): frames, and the following of their headers, begin after
//! it, however the handshake's reads fall.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context as TaskContext, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::peer::shared_budget::ServerBudget;

/// What one connection's incoming messages hold in its server's byte budget.
#[derive(Debug)]
pub(crate) struct Meter {
    server: Arc<ServerBudget>,
    /// Payload bytes of data frames counted in the server's budget: read and not given back yet,
    /// or taken ahead for the frame being read.
    counted: AtomicUsize,
    /// Of those, taken for the rest of the frame being read, and not read yet.
    ahead: AtomicUsize,
    /// A frame over this is refused by tungstenite once its header is read: nothing is taken
    /// for it.
    max_frame: usize,
    /// Whether the reader waits for room: the socket is not read meanwhile.
    waiting: AtomicBool,
}

impl Meter {
    /// A meter counting in `server`'s budget, for frames of at most `max_frame` bytes.
    pub(crate) fn new(server: Arc<ServerBudget>, max_frame: usize) -> Arc<Self> {
        Arc::new(Self {
            server,
            counted: AtomicUsize::new(0),
            ahead: AtomicUsize::new(0),
            max_frame,
            waiting: AtomicBool::new(false),
        })
    }

    /// Gives back what the messages read so far hold: the pump is done with them (the peer's
    /// loop has the last, counted there, or it is answered).
    pub(crate) fn release(&self) {
        let ahead = self.ahead.load(Ordering::Relaxed);
        let read = self.counted.swap(ahead, Ordering::Relaxed) - ahead;
        self.server.give_back(read);
    }

    /// Whether the socket waits for room in the server's budget.
    pub(crate) fn waits(&self) -> bool {
        self.waiting.load(Ordering::Relaxed)
    }

    /// The bytes counted now.
    #[cfg(test)]
    fn counted(&self) -> usize {
        self.counted.load(Ordering::Relaxed)
    }

    /// `bytes` taken ahead for the payload of the frame being read.
    fn took(&self, bytes: usize) {
        self.ahead.fetch_add(bytes, Ordering::Relaxed);
        self.counted.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Counts a read: `current` payload bytes of the data frame that was being read (taken
    /// ahead, when it was), `later` those of data frames the read began.
    fn read(&self, current: usize, later: usize) {
        let ahead = self.ahead.load(Ordering::Relaxed);
        let covered = current.min(ahead);
        self.ahead.store(ahead - covered, Ordering::Relaxed);
        let more = current - covered + later;
        if more > 0 {
            self.counted.fetch_add(more, Ordering::Relaxed);
            self.server.force(more);
        }
    }
}

impl Drop for Meter {
    /// What the connection's messages still held leaves the budget with it.
    fn drop(&mut self) {
        self.server.give_back(*self.counted.get_mut());
    }
}

/// A socket whose incoming bytes are counted in a [`Meter`] (see the module docs); writes pass
/// through.
pub(crate) struct Metered<S> {
    io: S,
    meter: Option<Arc<Meter>>,
    frames: Frames,
}

impl<S> Metered<S> {
    /// `io`, its frames counted in `meter` (`None`: nothing is counted). `handshake` when the
    /// stream begins with the opening handshake's request.
    pub(crate) fn new(io: S, meter: Option<Arc<Meter>>, handshake: bool) -> Self {
        Self {
            io,
            meter,
            frames: Frames::new(handshake),
        }
    }

    /// Ready once this read may go: see the module docs.
    fn poll_room(&mut self, cx: &TaskContext<'_>) -> Poll<()> {
        let Some(meter) = &self.meter else {
            return Poll::Ready(());
        };
        if self.frames.head.is_some() {
            // The handshake's few hundred bytes are not counted, and not held up.
            return Poll::Ready(());
        }
        let left = usize::try_from(self.frames.left).unwrap_or(usize::MAX);
        let room = if left == 0 {
            meter.server.poll_room(cx)
        } else if !self.frames.data || left > meter.max_frame {
            Poll::Ready(())
        } else {
            let want = left.saturating_sub(meter.ahead.load(Ordering::Relaxed));
            if want > 0 {
                let taken = meter.server.poll_take(want, cx);
                if taken.is_ready() {
                    meter.took(want);
                }
                taken
            } else {
                Poll::Ready(())
            }
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
        ready!(Pin::new(&mut this.io).poll_read(cx, buf))?;
        if let Some(meter) = &this.meter {
            let (current, later) = this.frames.advance(&buf.filled()[before..]);
            meter.read(current, later);
        }
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

/// Where the incoming stream is, followed byte by byte through headers and by length through
/// payloads.
///
/// | state | meaning |
/// | --- | --- |
/// | `head: Some(n)` | in the handshake's request; `n` bytes of its closing `\r\n\r\n` seen |
/// | `have > 0` | in a frame header, `have` bytes of it in `header` |
/// | `left > 0` | in a frame's payload: `left` bytes to come, of a data frame when `data` |
/// | none of those | between frames |
#[derive(Debug)]
struct Frames {
    head: Option<u8>,
    header: [u8; 14],
    have: usize,
    left: u64,
    data: bool,
}

impl Frames {
    fn new(handshake: bool) -> Self {
        Self {
            head: handshake.then_some(0),
            header: [0; 14],
            have: 0,
            left: 0,
            data: false,
        }
    }

    /// Follows `bytes`, just read: the payload bytes of the data frame whose payload was being
    /// read before them, and those of data frames begun in them.
    fn advance(&mut self, mut bytes: &[u8]) -> (usize, usize) {
        let (mut current, mut later) = (0, 0);
        let mut first = self.left > 0 && self.head.is_none();
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
                if self.data {
                    if first {
                        current += n;
                    } else {
                        later += n;
                    }
                }
                self.left -= n as u64;
                bytes = &bytes[n..];
                continue;
            }
            first = false;
            self.header[self.have] = bytes[0];
            self.have += 1;
            bytes = &bytes[1..];
            if let Some((len, data)) = header(&self.header[..self.have]) {
                self.have = 0;
                self.left = len;
                self.data = data;
            }
        }
        (current, later)
    }
}

/// The payload length of a frame whose header begins `bytes`, and whether it carries data
/// (opcodes 0 to 7: continuation, text, binary, reserved); `None` while the header is not whole.
fn header(bytes: &[u8]) -> Option<(u64, bool)> {
    let (&first, rest) = bytes.split_first()?;
    let (&second, rest) = rest.split_first()?;
    let (extended, masked) = match second & 0x7F {
        126 => (2, second & 0x80 != 0),
        127 => (8, second & 0x80 != 0),
        _ => (0, second & 0x80 != 0),
    };
    let mask = if masked { 4 } else { 0 };
    if rest.len() < extended + mask {
        return None;
    }
    let len = match extended {
        0 => u64::from(second & 0x7F),
        _ => rest[..extended]
            .iter()
            .fold(0u64, |len, byte| (len << 8) | u64::from(*byte)),
    };
    Some((len, first & 0x0F < 8))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A masked frame with `opcode`, `fin` and `payload`, as a client sends it.
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
            let mut frames = Frames::new(true);
            let mut data = 0;
            for chunk in stream.chunks(step) {
                let (current, later) = frames.advance(chunk);
                data += current + later;
            }
            assert_eq!(data, 300 + 70_000 + 1, "reads of {step}");
            assert!(frames.head.is_none() && frames.have == 0 && frames.left == 0);
        }
    }

    #[test]
    fn the_payload_being_read_is_told_apart_from_frames_begun() {
        let mut frames = Frames::new(false);
        let big = frame(1, true, &[b'x'; 1000]);
        assert_eq!(frames.advance(&big[..108]), (0, 100));
        let mut rest = big[108..].to_vec();
        rest.extend(frame(1, true, b"next"));
        assert_eq!(frames.advance(&rest), (900, 4));
    }

    #[tokio::test]
    async fn a_frame_is_taken_whole_before_its_payload_is_read() {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let server = ServerBudget::new(1000);
        let meter = Meter::new(Arc::clone(&server), 1 << 20);
        let (mut client, socket) = tokio::io::duplex(1 << 16);
        let mut socket = Metered::new(socket, Some(Arc::clone(&meter)), false);
        // Something else holds 600 bytes: a frame of 700 does not fit.
        let other = server.take(600).await;
        let big = frame(1, true, &[b'x'; 700]);
        client.write_all(&big).await.unwrap();
        let mut buf = [0; 10];
        // The header and the first payload bytes of one read are counted as they come...
        assert_eq!(socket.read(&mut buf).await.unwrap(), 10);
        assert_eq!(meter.counted(), 2);
        // ...then the rest waits, unread, until the frame's room is given.
        let mut rest = vec![0; big.len() - 10];
        let reading = socket.read_exact(&mut rest);
        tokio::pin!(reading);
        assert!(futures_util::poll!(reading.as_mut()).is_pending());
        assert!(meter.waits());
        drop(other);
        reading.await.unwrap();
        assert!(!meter.waits());
        assert_eq!(meter.counted(), 700);
        assert_eq!(server.held(), 700);
        // Done with the message: given back.
        meter.release();
        assert_eq!(server.held(), 0);
    }
}
