//! Frames messages with `Content-Length`: the LSP base protocol.

use super::{DEFAULT_MAX_LEN, Frame, FrameError, strip_cr};
use std::fmt::Write as _;
use tokio_util::bytes::{Buf, BufMut, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

/// Caps the header block [`ContentLength`] reads, line ends included, at
/// 8 KiB.
///
/// A real header block is under a hundred bytes (`Content-Length` and
/// perhaps `Content-Type`); 8 KiB is the per-header limit common HTTP
/// servers apply, and bounds what a peer sending no blank line can make
/// the reader hold.
pub const MAX_HEADER_LEN: usize = 8 * 1024;

/// Frames messages as the LSP base protocol does: a header block, a blank
/// line, then the body.
///
/// ```text
/// Content-Length: 17\r\n
/// Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n
/// \r\n
/// {"jsonrpc":"2.0"}
/// ```
///
/// # Decoding
///
/// - Header lines are `name: value` and end in `\r\n` (a bare `\n` is
///   accepted too). Names are matched without regard to case.
///   `Content-Length`, a decimal number, is required; `Content-Type` and any
///   other header are checked for syntax and otherwise ignored. Blank lines
///   before a header block are skipped.
/// - A body longer than the cap is not buffered: it is reported at once as
///   [`Frame::TooLong`] with `got` the declared length, then counted down as
///   it arrives and dropped, and decoding resumes at the next header block.
/// - A body that is not UTF-8 is reported as [`Frame::NotUtf8`]. An empty
///   body (`Content-Length: 0`) is an empty message: it is not JSON, which
///   the dispatcher answers as such.
/// - A header block that cannot be parsed (no `Content-Length`, a value that
///   is not a number, a duplicate `Content-Length`, a line that is not
///   `name: value`, a block over [`MAX_HEADER_LEN`]) is
///   [`FrameError::BadHeader`]: the message boundaries are lost, so the
///   stream ends and the connection should be closed. The decoder stays
///   failed: called again it fails again.
/// - The stream ending inside a header block or a body is
///   [`FrameError::Truncated`]; ending between frames is a clean end.
///
/// | state | buffer holds | next |
/// | --- | --- | --- |
/// | header | the header line being read (the block's earlier lines are parsed and gone) | blank line after a `Content-Length`: body, or skip if over the cap (yielding `TooLong`) |
/// | body | up to the declared length of body bytes | all there: yield the message, back to header |
/// | skip | nothing: bytes are counted down and dropped | count reaches zero: header |
/// | failed | nothing | every call fails |
///
/// # Encoding
///
/// Anything that is `AsRef<str>` is written as `Content-Length: N\r\n\r\n`
/// followed by its bytes. No `Content-Type` is sent: the protocol's default
/// (JSON-RPC in UTF-8) is what is sent. The cap is not checked on output.
///
/// # Examples
///
/// ```
/// use jrpc_runtime::framing::{ContentLength, Frame};
/// use tokio_util::bytes::BytesMut;
/// use tokio_util::codec::{Decoder, Encoder};
///
/// # fn main() -> Result<(), jrpc_runtime::framing::FrameError> {
/// let mut codec = ContentLength::new(1024);
/// let mut buf = BytesMut::new();
/// codec.encode(r#"{"jsonrpc":"2.0","method":"exit"}"#, &mut buf)?;
/// assert_eq!(&buf[..], b"Content-Length: 33\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"exit\"}");
///
/// let frame = codec.decode(&mut buf)?;
/// assert_eq!(frame, Some(Frame::Message(r#"{"jsonrpc":"2.0","method":"exit"}"#.into())));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ContentLength {
    max_len: usize,
    state: State,
}

#[derive(Debug, Clone, Copy)]
enum State {
    /// Reading a header block: `seen` bytes of it parsed so far (0: none
    /// yet, so blank lines are skipped), and the `Content-Length` if given.
    Header { seen: usize, len: Option<usize> },
    /// Waiting for a body of `len` bytes.
    Body { len: usize },
    /// Dropping an oversize body of `len` bytes, `left` of them still to come.
    Skip { len: usize, left: usize },
    /// A header could not be parsed; the stream is out of sync for good.
    Failed,
}

const START: State = State::Header { seen: 0, len: None };

impl ContentLength {
    /// Returns a codec that accepts bodies of up to `max_len` bytes.
    ///
    /// `max_len` is mandatory so that a peer cannot make the reader buffer
    /// without bound by declaring a huge `Content-Length`;
    /// [`ContentLength::default`] uses [`DEFAULT_MAX_LEN`]. Header blocks are
    /// capped separately, at [`MAX_HEADER_LEN`].
    #[must_use]
    pub fn new(max_len: usize) -> Self {
        Self {
            max_len,
            state: START,
        }
    }

    /// Returns the longest body accepted, in bytes.
    #[must_use]
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// Enters the failed state and returns the error to report.
    fn fail(&mut self, buf: &mut BytesMut, reason: String) -> FrameError {
        self.state = State::Failed;
        buf.clear();
        FrameError::BadHeader(reason)
    }
}

impl Default for ContentLength {
    /// Returns a codec with the [`DEFAULT_MAX_LEN`] body cap (10 MiB).
    fn default() -> Self {
        Self::new(DEFAULT_MAX_LEN)
    }
}

impl Decoder for ContentLength {
    type Item = Frame;
    type Error = FrameError;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        loop {
            match self.state {
                State::Header { seen, len } => {
                    // The line must end within what is left of the header
                    // budget; looking (and buffering) further is pointless.
                    let budget = MAX_HEADER_LEN - seen;
                    let window = buf.len().min(budget);
                    let Some(end) = buf[..window].iter().position(|&b| b == b'\n') else {
                        if buf.len() >= budget {
                            let reason = format!("header block longer than {MAX_HEADER_LEN} bytes");
                            return Err(self.fail(buf, reason));
                        }
                        return Ok(None);
                    };
                    let line = buf.split_to(end + 1);
                    let line = strip_cr(&line[..end]);
                    if line.is_empty() {
                        if seen == 0 {
                            // Stray line ends between messages.
                            continue;
                        }
                        match len {
                            None => {
                                let reason = "header block without `Content-Length`".to_owned();
                                return Err(self.fail(buf, reason));
                            }
                            Some(len) if len > self.max_len => {
                                self.state = State::Skip { len, left: len };
                                return Ok(Some(Frame::TooLong {
                                    limit: self.max_len,
                                    got: len,
                                }));
                            }
                            Some(len) => {
                                // Bounded by the cap: one allocation per body.
                                buf.reserve(len.saturating_sub(buf.len()));
                                self.state = State::Body { len };
                                continue;
                            }
                        }
                    }
                    let seen = seen + end + 1;
                    let len = match (parse_header(line), len) {
                        (Ok(None), len) => len,
                        (Ok(Some(new)), None) => Some(new),
                        (Ok(Some(_)), Some(_)) => {
                            let reason = "duplicate `Content-Length` header".to_owned();
                            return Err(self.fail(buf, reason));
                        }
                        (Err(reason), _) => return Err(self.fail(buf, reason)),
                    };
                    self.state = State::Header { seen, len };
                }
                State::Body { len } => {
                    if buf.len() < len {
                        return Ok(None);
                    }
                    self.state = START;
                    let body = buf.split_to(len);
                    return Ok(Some(match std::str::from_utf8(&body) {
                        Ok(text) => Frame::Message(text.to_owned()),
                        Err(_) => Frame::NotUtf8 { len },
                    }));
                }
                State::Skip { len, left } => {
                    let dropped = left.min(buf.len());
                    buf.advance(dropped);
                    if dropped < left {
                        self.state = State::Skip {
                            len,
                            left: left - dropped,
                        };
                        return Ok(None);
                    }
                    self.state = START;
                }
                State::Failed => {
                    let reason = "stream out of sync after a malformed header".to_owned();
                    return Err(self.fail(buf, reason));
                }
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        if let Some(frame) = self.decode(buf)? {
            return Ok(Some(frame));
        }
        // `decode` wants more input, and there is none.
        match self.state {
            State::Header { seen: 0, .. } if buf.iter().all(|&b| b == b'\r') => Ok(None),
            State::Header { seen, .. } => Err(FrameError::Truncated {
                got: seen + buf.len(),
                expected: None,
            }),
            State::Body { len } => Err(FrameError::Truncated {
                got: buf.len(),
                expected: Some(len),
            }),
            State::Skip { len, left } => Err(FrameError::Truncated {
                got: len - left,
                expected: Some(len),
            }),
            // Unreachable: `decode` fails in this state.
            State::Failed => Ok(None),
        }
    }
}

/// Parses one header line (without its line end): `Ok(Some(n))` for a
/// `Content-Length`, `Ok(None)` for any other well-formed header, `Err` with
/// the reason otherwise.
fn parse_header(line: &[u8]) -> Result<Option<usize>, String> {
    let Some(colon) = line.iter().position(|&b| b == b':') else {
        return Err(format!("expected `name: value`, found {}", quote(line)));
    };
    let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
    // RFC 9110 token characters: also what rejects a JSON body sent
    // without a header (`{"jsonrpc":...` has a colon, but `{` and `"` are
    // not token characters).
    if name.is_empty() || !name.iter().all(|&b| is_token_char(b)) {
        return Err(format!("invalid header name {}", quote(name)));
    }
    if !value
        .iter()
        .all(|&b| b == b'\t' || (b' '..=b'~').contains(&b))
    {
        return Err(format!("invalid value for header {}", quote(name)));
    }
    if !name.eq_ignore_ascii_case(b"content-length") {
        return Ok(None);
    }
    // Digits only: `usize::from_str` would also take a leading `+`.
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return Err(format!(
            "`Content-Length` is not a decimal number: {}",
            quote(value)
        ));
    }
    value
        .iter()
        .try_fold(0usize, |n, &d| {
            n.checked_mul(10)?.checked_add(usize::from(d - b'0'))
        })
        .map(Some)
        .ok_or_else(|| format!("`Content-Length` out of range: {}", quote(value)))
}

fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Returns a short, escaped rendering of peer-supplied bytes for an error
/// message.
fn quote(bytes: &[u8]) -> String {
    const SHOWN: usize = 40;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(SHOWN)]);
    if bytes.len() > SHOWN {
        format!("{text:?}...")
    } else {
        format!("{text:?}")
    }
}

impl<T: AsRef<str>> Encoder<T> for ContentLength {
    type Error = FrameError;

    /// Writes `Content-Length: N\r\n\r\n` and the message.
    ///
    /// # Errors
    ///
    /// None in practice: the signature is the trait's.
    fn encode(&mut self, item: T, dst: &mut BytesMut) -> Result<(), FrameError> {
        let body = item.as_ref().as_bytes();
        let mut header = String::with_capacity(40);
        // Writing to a `String` cannot fail.
        let _ = write!(header, "Content-Length: {}\r\n\r\n", body.len());
        dst.reserve(header.len() + body.len());
        dst.put_slice(header.as_bytes());
        dst.put_slice(body);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{Outcome, decode_every_way, drive, msg};
    use super::*;
    use proptest::prelude::*;

    fn decode_all(max_len: usize, input: &[u8]) -> Outcome {
        let bound = max_len.max(MAX_HEADER_LEN);
        decode_every_way(|| ContentLength::new(max_len), input, bound)
    }

    /// Decodes `input` every way, expecting no error.
    fn frames(max_len: usize, input: &[u8]) -> Vec<Frame> {
        let (frames, err) = decode_all(max_len, input);
        assert_eq!(err, None);
        frames
    }

    /// Decodes `input` every way, expecting `frames` and then an error that
    /// contains `reason`.
    fn fails(input: &[u8], frames: &[Frame], reason: &str) {
        let (got, err) = decode_all(64, input);
        assert_eq!(got, frames);
        let err = err.expect("an error");
        assert!(err.contains(reason), "{err:?} lacks {reason:?}");
    }

    fn framed(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    #[test]
    fn decodes_at_every_boundary() {
        let input = framed("{\"id\":1}") + &framed("[]") + &framed("\"é\"");
        assert_eq!(
            frames(64, input.as_bytes()),
            [msg("{\"id\":1}"), msg("[]"), msg("\"é\"")]
        );
    }

    #[test]
    fn names_are_case_insensitive_and_other_headers_ignored() {
        let input = b"content-length: 2\r\n\
                      Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\
                      \r\n\
                      {}\
                      CONTENT-TYPE:x\r\nX-Extra:\r\nCONTENT-LENGTH:3\r\n\r\n[1]";
        assert_eq!(frames(64, input), [msg("{}"), msg("[1]")]);
    }

    #[test]
    fn accepts_bare_newlines_and_stray_blank_lines() {
        let input = b"\r\n\nContent-Length: 2\n\n{}\r\n\r\nContent-Length:  3 \r\n\r\n[1]\r\n";
        assert_eq!(frames(64, input), [msg("{}"), msg("[1]")]);
    }

    #[test]
    fn body_may_hold_line_ends_and_be_empty() {
        let input = framed("{\r\n\"a\":\n1}") + &framed("");
        assert_eq!(
            frames(64, input.as_bytes()),
            [msg("{\r\n\"a\":\n1}"), msg("")]
        );
    }

    #[test]
    fn oversize_body_is_skipped_then_decoding_resyncs() {
        let input = framed("0123456789") + &framed("{}") + &framed("01234") + &framed("[]");
        assert_eq!(
            frames(4, input.as_bytes()),
            [
                Frame::TooLong { limit: 4, got: 10 },
                msg("{}"),
                Frame::TooLong { limit: 4, got: 5 },
                msg("[]")
            ]
        );
        assert_eq!(frames(0, framed("").as_bytes()), [msg("")]);
    }

    #[test]
    fn huge_content_length_is_counted_down_not_buffered() {
        let len = 3 << 20;
        let mut input = format!("Content-Length: {len}\r\n\r\n").into_bytes();
        input.resize(input.len() + len, b'x');
        input.extend_from_slice(framed("{}").as_bytes());
        let (frames, err) = drive(ContentLength::new(1024), input.chunks(8192), MAX_HEADER_LEN);
        assert_eq!(err, None);
        assert_eq!(
            frames,
            [
                Frame::TooLong {
                    limit: 1024,
                    got: len
                },
                msg("{}")
            ]
        );
    }

    #[test]
    fn non_utf8_body_is_reported_and_skipped() {
        let mut input = b"Content-Length: 3\r\n\r\n\"\xff\"".to_vec();
        input.extend_from_slice(framed("{}").as_bytes());
        assert_eq!(frames(64, &input), [Frame::NotUtf8 { len: 3 }, msg("{}")]);
    }

    #[test]
    fn garbage_header_is_fatal() {
        fails(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\r\n\r\n",
            &[],
            "invalid header name \"{\\\"jsonrpc\\\"\"",
        );
        fails(
            b"hello\r\n\r\n",
            &[],
            "expected `name: value`, found \"hello\"",
        );
        fails(b" Content-Length: 2\r\n\r\n{}", &[], "invalid header name");
        fails(
            b"Content-Length: 2\r\nX: \x01\r\n\r\n{}",
            &[],
            "invalid value",
        );
        let input = framed("{}") + "Content-Length 2\r\n\r\n{}";
        fails(input.as_bytes(), &[msg("{}")], "expected `name: value`");
    }

    #[test]
    fn missing_content_length_is_fatal() {
        fails(
            b"Content-Type: application/json\r\n\r\n{}",
            &[],
            "malformed header: header block without `Content-Length`",
        );
    }

    #[test]
    fn bad_content_length_is_fatal() {
        for value in ["abc", "-1", "+2", "", "2 2", "0x10", "2.0"] {
            let input = format!("Content-Length: {value}\r\n\r\n{{}}");
            fails(
                input.as_bytes(),
                &[],
                "`Content-Length` is not a decimal number",
            );
        }
        fails(
            b"Content-Length: 99999999999999999999999\r\n\r\n",
            &[],
            "`Content-Length` out of range",
        );
        fails(
            b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
            &[],
            "duplicate `Content-Length`",
        );
    }

    #[test]
    fn header_block_over_cap_is_fatal_without_buffering_it() {
        // One endless line, and many short lines adding up: both fail once
        // the cap is reached, while the decoder holds at most the cap.
        let long_line = vec![b'X'; 3 * MAX_HEADER_LEN];
        let many_lines = "X-Pad: 0123456789abcdef\r\n".repeat(MAX_HEADER_LEN / 8);
        for input in [&long_line[..], many_lines.as_bytes()] {
            let (frames, err) = drive(ContentLength::default(), input.chunks(1000), MAX_HEADER_LEN);
            assert_eq!(frames, []);
            assert_eq!(
                err.as_deref(),
                Some("malformed header: header block longer than 8192 bytes")
            );
        }
        // Exactly at the cap is fine.
        let pad = MAX_HEADER_LEN - "Content-Length: 2\r\nX: \r\n\r\n".len();
        let input = format!("Content-Length: 2\r\nX: {}\r\n\r\n{{}}", "p".repeat(pad));
        assert_eq!(
            drive(ContentLength::default(), [input.as_bytes()], MAX_HEADER_LEN),
            (vec![msg("{}")], None)
        );
        let input = format!(
            "Content-Length: 2\r\nX: {}\r\n\r\n{{}}",
            "p".repeat(pad + 1)
        );
        assert!(
            drive(ContentLength::default(), [input.as_bytes()], MAX_HEADER_LEN)
                .1
                .is_some()
        );
    }

    #[test]
    fn decoder_stays_failed() {
        let mut codec = ContentLength::default();
        let mut buf = BytesMut::from(&b"oops\r\n\r\n"[..]);
        assert!(matches!(
            codec.decode(&mut buf),
            Err(FrameError::BadHeader(_))
        ));
        buf.extend_from_slice(framed("{}").as_bytes());
        assert!(matches!(
            codec.decode(&mut buf),
            Err(FrameError::BadHeader(_))
        ));
        assert!(buf.is_empty());
    }

    #[test]
    fn peer_gone_mid_frame_is_an_error() {
        let input = framed("{}") + "Content-Length: 10\r\n\r\n01234";
        fails(
            input.as_bytes(),
            &[msg("{}")],
            "stream ended 5 bytes into a 10-byte message",
        );
        fails(
            b"Content-Length: 10\r\nContent-Ty",
            &[],
            "stream ended inside a header block after 30 bytes",
        );
        fails(
            b"Content-Length: 100\r\n\r\n0123456789",
            &[Frame::TooLong {
                limit: 64,
                got: 100,
            }],
            "stream ended 10 bytes into a 100-byte message",
        );
        let mut codec = ContentLength::default();
        let mut buf = BytesMut::from(&b"Content-Length: 3\r\n\r\n{}"[..]);
        assert!(matches!(
            codec.decode_eof(&mut buf),
            Err(FrameError::Truncated {
                got: 2,
                expected: Some(3)
            })
        ));
    }

    #[test]
    fn clean_end_between_frames() {
        assert_eq!(frames(64, b""), []);
        assert_eq!(
            frames(64, (framed("{}") + "\r\n\r").as_bytes()),
            [msg("{}")]
        );
    }

    #[test]
    fn default_caps() {
        assert_eq!(ContentLength::default().max_len(), 10 * 1024 * 1024);
        assert_eq!(MAX_HEADER_LEN, 8192);
    }

    #[test]
    fn encodes_header_and_body() {
        let mut codec = ContentLength::default();
        let mut buf = BytesMut::new();
        codec.encode("{\"a\":\"é\"}", &mut buf).unwrap();
        codec.encode(String::new(), &mut buf).unwrap();
        assert_eq!(
            &buf[..],
            "Content-Length: 10\r\n\r\n{\"a\":\"é\"}Content-Length: 0\r\n\r\n".as_bytes()
        );
    }

    #[tokio::test]
    async fn framed_stream_survives_skipped_bodies_and_ends_on_bad_header() {
        use futures_util::{SinkExt, StreamExt};
        use tokio::io::AsyncWriteExt;
        use tokio_util::codec::{FramedRead, FramedWrite};

        let (client, server) = tokio::io::duplex(64);
        let writer = tokio::spawn(async move {
            let mut out = FramedWrite::new(client, ContentLength::default());
            for text in ["{\"id\":1}", &"x".repeat(300), "{\"id\":2}"] {
                out.send(text).await.unwrap();
            }
            let mut raw = out.into_inner();
            raw.write_all(b"garbage\r\n\r\n").await.unwrap();
            raw.write_all(framed("{\"id\":3}").as_bytes())
                .await
                .unwrap();
        });
        let mut read = FramedRead::new(server, ContentLength::new(100));
        let mut frames = Vec::new();
        let mut error = None;
        while let Some(item) = read.next().await {
            match item {
                Ok(frame) => frames.push(frame),
                Err(err) => error = Some(err),
            }
        }
        writer.await.unwrap();
        assert_eq!(
            frames,
            [
                msg("{\"id\":1}"),
                Frame::TooLong {
                    limit: 100,
                    got: 300
                },
                msg("{\"id\":2}")
            ]
        );
        assert!(matches!(error, Some(FrameError::BadHeader(_))));
    }

    proptest! {
        #[test]
        fn round_trips_in_any_chunking(
            messages in proptest::collection::vec(any::<String>(), 0..12),
            chunk in 1usize..64,
        ) {
            let mut codec = ContentLength::new(1024);
            let mut wire = BytesMut::new();
            for m in &messages {
                codec.encode(m.as_str(), &mut wire).unwrap();
            }
            let (frames, err) = drive(ContentLength::new(1024), wire.chunks(chunk), MAX_HEADER_LEN);
            prop_assert_eq!(err, None);
            let expected: Vec<Frame> = messages.into_iter().map(Frame::Message).collect();
            prop_assert_eq!(frames, expected);
        }

        #[test]
        fn oversize_bodies_never_desynchronise(
            messages in proptest::collection::vec(any::<String>(), 0..12),
            cap in 0usize..48,
            chunk in 1usize..16,
        ) {
            let mut wire = BytesMut::new();
            for m in &messages {
                ContentLength::new(cap).encode(m.as_str(), &mut wire).unwrap();
            }
            let expected: Vec<Frame> = messages
                .into_iter()
                .map(|m| if m.len() > cap {
                    Frame::TooLong { limit: cap, got: m.len() }
                } else {
                    Frame::Message(m)
                })
                .collect();
            let (frames, err) = drive(ContentLength::new(cap), wire.chunks(chunk), MAX_HEADER_LEN);
            prop_assert_eq!(err, None);
            prop_assert_eq!(frames, expected);
        }
    }
}
