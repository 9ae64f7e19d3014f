//! Frames messages by newlines: one message a line (MCP and ACP over stdio).

use super::{DEFAULT_MAX_LEN, Frame, FrameError, strip_cr};
use tokio_util::bytes::{Buf, BufMut, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

/// Frames one message a line: the framing of MCP and ACP over stdio.
///
/// # Decoding
///
/// - A line ends at `\n`; one `\r` before it is stripped, so `\r\n` works.
/// - Blank lines (empty, or only spaces, tabs and `\r`) are skipped: they
///   cannot be JSON, and peers send them as keep-alives or by accident.
/// - A line longer than the cap (counted without its `\n` and a `\r` before
///   it) is dropped as it arrives, without being buffered, and reported once
///   as [`Frame::TooLong`] when its end arrives, with `got` its full length.
///   The line after it decodes normally.
/// - A line that is not UTF-8 is reported as [`Frame::NotUtf8`].
/// - At the end of the stream a last line without `\n` is still a message.
///
/// No input makes the decoder fail: its only errors are read errors from
/// the underlying stream.
///
/// | state | buffer holds | on `\n` | on more bytes |
/// | --- | --- | --- | --- |
/// | reading | the start of one line, at most cap + 1 bytes | yield the line (or skip it if blank) | past cap + 1 bytes: drop them, go to discarding |
/// | discarding | nothing: bytes are counted and dropped | yield `TooLong`, go to reading | count and drop |
///
/// # Encoding
///
/// Anything that is `AsRef<str>` (`&str`, `String`, ...) is written as is,
/// followed by `\n`. Compact `serde_json` output never contains a raw
/// newline (newlines inside strings are escaped), but pretty-printed output
/// does, so the encoder checks and refuses such a message with
/// [`FrameError::NewlineInMessage`] rather than split it. The cap is not
/// checked on output. A message that is blank or ends in `\r` does not
/// survive the trip (neither is produced by `serde_json`).
///
/// # Examples
///
/// ```
/// use jrpc_runtime::framing::{Frame, Lines};
/// use tokio_util::bytes::BytesMut;
/// use tokio_util::codec::{Decoder, Encoder};
///
/// # fn main() -> Result<(), jrpc_runtime::framing::FrameError> {
/// let mut codec = Lines::new(1024);
/// let mut buf = BytesMut::new();
/// codec.encode(r#"{"jsonrpc":"2.0","method":"ping"}"#, &mut buf)?;
/// assert_eq!(&buf[..], b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}\n");
///
/// let frame = codec.decode(&mut buf)?;
/// assert_eq!(frame, Some(Frame::Message(r#"{"jsonrpc":"2.0","method":"ping"}"#.into())));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Lines {
    max_len: usize,
    state: State,
}

#[derive(Debug, Clone, Copy)]
enum State {
    /// Collecting a line; the first `scanned` bytes of the buffer hold no `\n`.
    Reading { scanned: usize },
    /// Dropping an overlong line: `skipped` bytes so far, the last one a
    /// `\r` if `last_cr` (it is not counted if the `\n` follows).
    Discarding { skipped: usize, last_cr: bool },
}

impl Lines {
    /// Returns a codec that accepts lines of up to `max_len` bytes (not
    /// counting the line end).
    ///
    /// `max_len` is mandatory so that a peer cannot make the reader buffer
    /// without bound; [`Lines::default`] uses [`DEFAULT_MAX_LEN`].
    #[must_use]
    pub fn new(max_len: usize) -> Self {
        Self {
            max_len,
            state: State::Reading { scanned: 0 },
        }
    }

    /// Returns the longest line accepted, in bytes.
    #[must_use]
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// Returns the item for one complete line, already without its line end;
    /// `None` for a blank line.
    fn line_frame(&self, line: &[u8]) -> Option<Frame> {
        // Length first: whether a line is too long must not depend on
        // whether it was seen whole or dropped piecemeal while discarding.
        if line.len() > self.max_len {
            return Some(Frame::TooLong {
                limit: self.max_len,
                got: line.len(),
            });
        }
        if line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
            return None;
        }
        Some(match std::str::from_utf8(line) {
            Ok(text) => Frame::Message(text.to_owned()),
            Err(_) => Frame::NotUtf8 { len: line.len() },
        })
    }
}

impl Default for Lines {
    /// Returns a codec with the [`DEFAULT_MAX_LEN`] cap (10 MiB).
    fn default() -> Self {
        Self::new(DEFAULT_MAX_LEN)
    }
}

fn find_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

impl Decoder for Lines {
    type Item = Frame;
    type Error = FrameError;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        loop {
            match self.state {
                State::Reading { scanned } => {
                    // A line with no `\n` in its first cap + 2 bytes is too
                    // long even if its last byte turns out to be a `\r`, so
                    // the search (and the buffer) never goes further.
                    let window = buf.len().min(self.max_len.saturating_add(2));
                    // (`min`: only a buffer shrunk behind our back could make
                    // `scanned` exceed it; rescanning is then the safe answer.)
                    let scanned = scanned.min(window);
                    match find_newline(&buf[scanned..window]) {
                        Some(offset) => {
                            let end = scanned + offset;
                            self.state = State::Reading { scanned: 0 };
                            let line = buf.split_to(end + 1);
                            if let Some(frame) = self.line_frame(strip_cr(&line[..end])) {
                                return Ok(Some(frame));
                            }
                        }
                        None if window > self.max_len.saturating_add(1) => {
                            self.state = State::Discarding {
                                skipped: window,
                                last_cr: buf[window - 1] == b'\r',
                            };
                            buf.advance(window);
                        }
                        None => {
                            self.state = State::Reading { scanned: window };
                            return Ok(None);
                        }
                    }
                }
                State::Discarding { skipped, last_cr } => match find_newline(buf) {
                    Some(end) => {
                        let cr = if end == 0 {
                            last_cr
                        } else {
                            buf[end - 1] == b'\r'
                        };
                        buf.advance(end + 1);
                        self.state = State::Reading { scanned: 0 };
                        return Ok(Some(Frame::TooLong {
                            limit: self.max_len,
                            got: skipped.saturating_add(end) - usize::from(cr),
                        }));
                    }
                    None => {
                        if let Some(&last) = buf.last() {
                            self.state = State::Discarding {
                                skipped: skipped.saturating_add(buf.len()),
                                last_cr: last == b'\r',
                            };
                            buf.clear();
                        }
                        return Ok(None);
                    }
                },
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        if let Some(frame) = self.decode(buf)? {
            return Ok(Some(frame));
        }
        // Every complete line is gone; what is left is a last line without
        // its `\n`, which ends here.
        let state = std::mem::replace(&mut self.state, State::Reading { scanned: 0 });
        match state {
            State::Discarding { skipped, last_cr } => Ok(Some(Frame::TooLong {
                limit: self.max_len,
                got: skipped - usize::from(last_cr),
            })),
            State::Reading { .. } => {
                let line = buf.split();
                Ok(self.line_frame(strip_cr(&line)))
            }
        }
    }
}

impl<T: AsRef<str>> Encoder<T> for Lines {
    type Error = FrameError;

    /// Writes the message and a `\n`.
    ///
    /// # Errors
    ///
    /// [`FrameError::NewlineInMessage`] if the message contains a `\n`;
    /// nothing is written then.
    fn encode(&mut self, item: T, dst: &mut BytesMut) -> Result<(), FrameError> {
        let text = item.as_ref().as_bytes();
        if let Some(offset) = find_newline(text) {
            return Err(FrameError::NewlineInMessage { offset });
        }
        dst.reserve(text.len() + 1);
        dst.put_slice(text);
        dst.put_u8(b'\n');
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{decode_every_way, drive, msg};
    use super::*;
    use proptest::prelude::*;

    /// Decodes `input` every way with a `max_len` cap, expecting no error.
    fn frames(max_len: usize, input: &[u8]) -> Vec<Frame> {
        let (frames, err) = decode_every_way(|| Lines::new(max_len), input, max_len + 1);
        assert_eq!(err, None);
        frames
    }

    fn too_long(limit: usize, got: usize) -> Frame {
        Frame::TooLong { limit, got }
    }

    #[test]
    fn splits_lines_at_every_boundary() {
        assert_eq!(
            frames(64, b"{\"a\":1}\n[1,2]\n\"x\"\n"),
            [msg("{\"a\":1}"), msg("[1,2]"), msg("\"x\"")]
        );
    }

    #[test]
    fn strips_one_carriage_return() {
        assert_eq!(
            frames(64, b"a\r\nb\nc\r\r\n d \r\n"),
            [msg("a"), msg("b"), msg("c\r"), msg(" d ")]
        );
    }

    #[test]
    fn skips_blank_lines() {
        assert_eq!(
            frames(64, b"\n\r\n \t \r\n1\n\n\n2\r\n\r\n"),
            [msg("1"), msg("2")]
        );
        assert_eq!(frames(64, b"\n\n\r\n  "), []);
        assert_eq!(frames(64, b""), []);
    }

    #[test]
    fn last_line_without_newline_is_a_message() {
        assert_eq!(frames(64, b"1\n23"), [msg("1"), msg("23")]);
        assert_eq!(frames(64, b"1\n23\r"), [msg("1"), msg("23")]);
        assert_eq!(frames(64, b"1\n \r"), [msg("1")]);
    }

    #[test]
    fn too_long_line_is_skipped_then_decoding_goes_on() {
        assert_eq!(
            frames(5, b"0123456789\nabc\n"),
            [too_long(5, 10), msg("abc")]
        );
        assert_eq!(
            frames(5, b"ok\n0123456789\r\n\r\n0123456\n12345\n"),
            [msg("ok"), too_long(5, 10), too_long(5, 7), msg("12345")]
        );
    }

    #[test]
    fn cap_is_exact_and_ignores_the_line_end() {
        assert_eq!(frames(3, b"abc\n"), [msg("abc")]);
        assert_eq!(frames(3, b"abc\r\n"), [msg("abc")]);
        assert_eq!(frames(3, b"abcd\n"), [too_long(3, 4)]);
        assert_eq!(frames(3, b"abcd\r\n"), [too_long(3, 4)]);
        assert_eq!(frames(3, b"abcd\r\r\n"), [too_long(3, 5)]);
        assert_eq!(frames(3, b"abcdefgh\r\nxyz"), [too_long(3, 8), msg("xyz")]);
        assert_eq!(frames(0, b"\n\r\na\n"), [too_long(0, 1)]);
    }

    #[test]
    fn too_long_last_line_is_reported_at_eof() {
        assert_eq!(frames(2, b"1\nabcdef"), [msg("1"), too_long(2, 6)]);
        assert_eq!(frames(2, b"1\nabcdef\r"), [msg("1"), too_long(2, 6)]);
        assert_eq!(frames(2, b"abc"), [too_long(2, 3)]);
    }

    #[test]
    fn discarding_never_buffers_the_line() {
        let cap = 1024;
        let mut input = vec![b'x'; 1 << 20];
        input.extend_from_slice(b"\n{}\n");
        let (frames, err) = drive(Lines::new(cap), input.chunks(8192), cap + 1);
        assert_eq!(err, None);
        assert_eq!(frames, [too_long(cap, 1 << 20), msg("{}")]);
    }

    #[test]
    fn non_utf8_line_is_reported_and_skipped() {
        assert_eq!(
            frames(64, b"\xff\xfe\nok\n\"\xc3\"\r\n"),
            [
                Frame::NotUtf8 { len: 2 },
                msg("ok"),
                Frame::NotUtf8 { len: 3 }
            ]
        );
        // A multi-byte character split across reads is still one character.
        assert_eq!(frames(64, "\"é€😀\"\n".as_bytes()), [msg("\"é€😀\"")]);
    }

    #[test]
    fn default_cap_is_four_mib() {
        assert_eq!(Lines::default().max_len(), 10 * 1024 * 1024);
    }

    #[test]
    fn encodes_line_and_newline() {
        let mut codec = Lines::default();
        let mut buf = BytesMut::new();
        codec.encode("[1]", &mut buf).unwrap();
        codec.encode(String::from("{}"), &mut buf).unwrap();
        assert_eq!(&buf[..], b"[1]\n{}\n");
    }

    #[test]
    fn refuses_to_encode_a_newline() {
        let mut codec = Lines::default();
        let mut buf = BytesMut::from(&b"kept"[..]);
        let err = codec.encode("{\n  \"a\": 1\n}", &mut buf).unwrap_err();
        assert!(matches!(err, FrameError::NewlineInMessage { offset: 1 }));
        assert_eq!(&buf[..], b"kept");
    }

    #[tokio::test]
    async fn framed_stream_survives_skipped_lines() {
        use futures_util::{SinkExt, StreamExt};
        use tokio_util::codec::{FramedRead, FramedWrite};

        let (client, server) = tokio::io::duplex(64);
        let writer = tokio::spawn(async move {
            let mut out = FramedWrite::new(client, Lines::default());
            for text in ["{\"id\":1}", &"x".repeat(300), "\u{0}", "{\"id\":2}"] {
                out.send(text).await.unwrap();
            }
        });
        let read: Vec<Frame> = FramedRead::new(server, Lines::new(100))
            .map(Result::unwrap)
            .collect()
            .await;
        writer.await.unwrap();
        assert_eq!(
            read,
            [
                msg("{\"id\":1}"),
                too_long(100, 300),
                msg("\u{0}"),
                msg("{\"id\":2}")
            ]
        );
    }

    /// Generates a message the codec carries unchanged: no `\n`, not blank, no
    /// trailing `\r`.
    fn line_message() -> impl Strategy<Value = String> {
        "[^\n]{0,40}".prop_filter("blank or trailing CR", |s| {
            !s.ends_with('\r') && !s.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
        })
    }

    proptest! {
        #[test]
        fn round_trips_in_any_chunking(
            messages in proptest::collection::vec(line_message(), 0..12),
            chunk in 1usize..64,
        ) {
            let mut codec = Lines::new(256);
            let mut wire = BytesMut::new();
            for m in &messages {
                codec.encode(m.as_str(), &mut wire).unwrap();
            }
            let (frames, err) = drive(Lines::new(256), wire.chunks(chunk), 257);
            prop_assert_eq!(err, None);
            let expected: Vec<Frame> = messages.into_iter().map(Frame::Message).collect();
            prop_assert_eq!(frames, expected);
        }

        #[test]
        fn oversize_lines_never_desynchronise(
            messages in proptest::collection::vec(line_message(), 0..12),
            cap in 0usize..24,
            crlf in any::<bool>(),
            chunk in 1usize..16,
        ) {
            let mut wire = Vec::new();
            for m in &messages {
                wire.extend_from_slice(m.as_bytes());
                wire.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
            }
            let expected: Vec<Frame> = messages
                .into_iter()
                .map(|m| if m.len() > cap { too_long(cap, m.len()) } else { Frame::Message(m) })
                .collect();
            let (frames, err) = drive(Lines::new(cap), wire.chunks(chunk), cap + 1);
            prop_assert_eq!(err, None);
            prop_assert_eq!(frames, expected);
        }
    }
}
