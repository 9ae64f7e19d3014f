//! Frames messages: splits a byte stream into JSON-RPC messages and back.
//!
//! Two codecs, both built on tokio-util's [`Decoder`] and [`Encoder`] traits,
//! so they plug into [`FramedRead`], [`FramedWrite`] and [`Framed`] over any
//! `AsyncRead` / `AsyncWrite`:
//!
//! | codec | wire format | used by |
//! | --- | --- | --- |
//! | [`Lines`] | one message a line, `\n` terminated | MCP and ACP over stdio |
//! | [`ContentLength`] | `Content-Length: N` header block, then N bytes | the LSP base protocol |
//!
//! # Size caps
//!
//! Both codecs take a mandatory maximum message length (default
//! [`DEFAULT_MAX_LEN`], 10 MiB). A decoder never buffers more than that cap
//! (plus a few bytes of framing and whatever the reader handed over in its
//! last read): an oversize message is skipped as it arrives, never stored.
//! [`ContentLength`] also caps its header block at [`MAX_HEADER_LEN`].
//! Encoders do not check the cap: the limit protects the reading side, and
//! the peer's limit is not known here.
//!
//! # Items and errors
//!
//! A decoder yields [`Frame`] items, and fails with [`FrameError`]. The split
//! follows what the connection can survive:
//!
//! - A problem confined to one message, after which the next message can
//!   still be found, is an **item**: [`Frame::TooLong`] or
//!   [`Frame::NotUtf8`]. The stream goes on; the caller logs it (and, for a
//!   server, may answer `-32700` or `-32600` with a null id).
//! - A problem after which message boundaries are lost (an unparsable
//!   `Content-Length` header, a stream cut off inside a frame) or a failed
//!   read is an **error**. tokio-util's framed streams end after the first
//!   `Err`, which is exactly what such a connection needs: the caller logs the
//!   reason and closes it.
//!
//! This is why recoverable problems are not `Err`s: `FramedRead` would stop
//! at the first one, and one oversize message would kill the connection.
//! An enum item (rather than `Result<String, _>` items inside a
//! `Result<_, FrameError>` stream) keeps the two kinds apart in the types:
//! a `match` on [`Frame`] lists every recoverable case, and `?` on the stream
//! handles every fatal one.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), jrpc_runtime::framing::FrameError> {
//! use futures_util::StreamExt;
//! use jrpc_runtime::framing::{Frame, Lines};
//! use tokio_util::codec::FramedRead;
//!
//! let input: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n\
//!                      this line is longer than the cap of 32 bytes\n\
//!                      \n\
//!                      {\"jsonrpc\":\"2.0\",\"method\":\"b\"}";
//! let mut frames = FramedRead::new(input, Lines::new(32));
//! let mut seen = Vec::new();
//! while let Some(frame) = frames.next().await {
//!     match frame? {
//!         Frame::Message(text) => seen.push(text),
//!         Frame::TooLong { limit, got } => assert_eq!((limit, got), (32, 44)),
//!         other => panic!("unexpected {other:?}"),
//!     }
//! }
//! assert_eq!(seen, [
//!     r#"{"jsonrpc":"2.0","method":"a"}"#,
//!     r#"{"jsonrpc":"2.0","method":"b"}"#,
//! ]);
//! # Ok(())
//! # }
//! ```
//!
//! [`Decoder`]: tokio_util::codec::Decoder
//! [`Encoder`]: tokio_util::codec::Encoder
//! [`FramedRead`]: tokio_util::codec::FramedRead
//! [`FramedWrite`]: tokio_util::codec::FramedWrite
//! [`Framed`]: tokio_util::codec::Framed

mod content_length;
mod lines;

pub use content_length::{ContentLength, MAX_HEADER_LEN};
pub use lines::Lines;

use std::io;

/// Holds the default maximum message length of both codecs: 10 MiB, the message
/// cap of every transport (`max_message_size`), as jsonrpsee's.
///
/// Typical JSON-RPC messages are well under a kilobyte; the large ones are an
/// LSP `textDocument/didOpen` carrying a whole source file or an MCP result
/// carrying encoded images, and 10 MiB leaves room for both while bounding
/// what one connection can make the reader hold. Raise it with
/// [`Lines::new`] / [`ContentLength::new`] where bigger messages are expected.
pub const DEFAULT_MAX_LEN: usize = 10 * 1024 * 1024;

/// Holds one decoded item: a message, or a message that was skipped.
///
/// Only [`Frame::Message`] carries a message. The other variants report a
/// message that was dropped whole; decoding carries on with the next one.
/// See the [module docs](self) for why these are items and not errors.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Frame {
    /// A complete message, valid UTF-8, without its framing.
    Message(String),
    /// A message longer than the codec's cap was skipped without being
    /// buffered.
    TooLong {
        /// The codec's cap, in bytes.
        limit: usize,
        /// The message's length in bytes: for [`ContentLength`] the declared
        /// `Content-Length`, reported as soon as the header is read; for
        /// [`Lines`] the full length of the line (without its `\n` and a
        /// `\r` before it), reported once its end has arrived.
        got: usize,
    },
    /// A message of the right size that is not valid UTF-8 (so not JSON)
    /// was skipped.
    NotUtf8 {
        /// The message's length in bytes.
        len: usize,
    },
}

/// Reports an error that ends a framed stream, or an encoding error.
///
/// tokio-util requires `From<io::Error>` (for read and write failures);
/// the reverse conversion into [`io::Error`] is provided too, for callers
/// that deal in `io::Result`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// A `Content-Length` header block could not be parsed: no
    /// `Content-Length`, a value that is not a decimal number, a line that is
    /// not `name: value`, or a block longer than [`MAX_HEADER_LEN`]. Message
    /// boundaries are lost, so the connection cannot go on.
    #[error("malformed header: {0}")]
    BadHeader(String),
    /// The stream ended inside a frame: in a header block (`expected` is
    /// `None`) or `got` bytes into a body of `expected` bytes.
    #[error("{}", truncated_message(*.got, *.expected))]
    Truncated {
        /// The bytes of the frame received before the end of the stream.
        got: usize,
        /// The body length declared by the header, if it had been read.
        expected: Option<usize>,
    },
    /// [`Lines`] was asked to encode a message containing a `\n`, which
    /// would split it into two lines on the wire.
    #[error("message contains a newline at byte {offset}; it cannot be sent as one line")]
    NewlineInMessage {
        /// The byte offset of the first `\n` in the message.
        offset: usize,
    },
    /// Reading from or writing to the underlying stream failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

fn truncated_message(got: usize, expected: Option<usize>) -> String {
    match expected {
        Some(expected) => format!("stream ended {got} bytes into a {expected}-byte message"),
        None => format!("stream ended inside a header block after {got} bytes"),
    }
}

impl From<FrameError> for io::Error {
    fn from(err: FrameError) -> Self {
        let kind = match err {
            FrameError::Io(err) => return err,
            FrameError::BadHeader(_) => io::ErrorKind::InvalidData,
            FrameError::Truncated { .. } => io::ErrorKind::UnexpectedEof,
            FrameError::NewlineInMessage { .. } => io::ErrorKind::InvalidInput,
        };
        io::Error::new(kind, err)
    }
}

/// Strips one trailing `\r`, as both codecs accept `\r\n` line ends.
fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Test helpers shared by the codecs' unit tests.
#[cfg(test)]
mod testing {
    use super::{Frame, FrameError};
    use tokio_util::bytes::BytesMut;
    use tokio_util::codec::Decoder;

    /// Holds what a decoder made of a whole input: the items, then the error
    /// that ended the stream, if any.
    pub(super) type Outcome = (Vec<Frame>, Option<String>);

    /// Feeds `pieces` to `codec` the way `FramedRead` does (`decode` until
    /// `None` after each read, `decode_eof` until `None` at the end),
    /// asserting that whenever `decode` asks for more input, at most `bound`
    /// bytes are left in the buffer, however large the last piece was.
    pub(super) fn drive<'a, D>(
        mut codec: D,
        pieces: impl IntoIterator<Item = &'a [u8]>,
        bound: usize,
    ) -> Outcome
    where
        D: Decoder<Item = Frame, Error = FrameError>,
    {
        let mut frames = Vec::new();
        let mut buf = BytesMut::new();
        for piece in pieces {
            buf.extend_from_slice(piece);
            loop {
                match codec.decode(&mut buf) {
                    Ok(Some(frame)) => frames.push(frame),
                    Ok(None) => break,
                    Err(err) => return (frames, Some(err.to_string())),
                }
            }
            assert!(
                buf.len() <= bound,
                "decoder holds {} bytes, bound {bound}",
                buf.len()
            );
        }
        loop {
            match codec.decode_eof(&mut buf) {
                Ok(Some(frame)) => frames.push(frame),
                Ok(None) => return (frames, None),
                Err(err) => return (frames, Some(err.to_string())),
            }
        }
    }

    /// Decodes `input` whole, in every chunk size from one byte up, and
    /// split in two at every position; asserts that all give the same
    /// outcome and that the decoder never holds more than `bound` bytes
    /// between reads; returns the outcome.
    pub(super) fn decode_every_way<D>(make: impl Fn() -> D, input: &[u8], bound: usize) -> Outcome
    where
        D: Decoder<Item = Frame, Error = FrameError>,
    {
        let whole = drive(make(), [input], bound);
        for chunk in 1..=input.len() {
            let got = drive(make(), input.chunks(chunk), bound);
            assert_eq!(got, whole, "chunk size {chunk}");
        }
        for split in 0..=input.len() {
            let (a, b) = input.split_at(split);
            let got = drive(make(), [a, b], bound);
            assert_eq!(got, whole, "split at {split}");
        }
        whole
    }

    /// Returns a message item (a shorthand).
    pub(super) fn msg(text: &str) -> Frame {
        Frame::Message(text.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_errors_read_well_and_convert_to_io() {
        let truncated = FrameError::Truncated {
            got: 3,
            expected: Some(10),
        };
        assert_eq!(
            truncated.to_string(),
            "stream ended 3 bytes into a 10-byte message"
        );
        assert_eq!(
            io::Error::from(truncated).kind(),
            io::ErrorKind::UnexpectedEof
        );
        let bad = FrameError::BadHeader("missing `Content-Length`".into());
        assert_eq!(
            bad.to_string(),
            "malformed header: missing `Content-Length`"
        );
        assert_eq!(io::Error::from(bad).kind(), io::ErrorKind::InvalidData);
        let gone = FrameError::from(io::Error::from(io::ErrorKind::BrokenPipe));
        assert_eq!(io::Error::from(gone).kind(), io::ErrorKind::BrokenPipe);
    }
}
