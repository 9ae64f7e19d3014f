//! The lines and `Content-Length` decoders on arbitrary byte streams, split at arbitrary points:
//! every split gives what the whole input gives, no message exceeds the cap, and the decoder
//! never holds more than the cap (plus its framing) between reads.
#![no_main]

use jrpc_runtime::framing::{ContentLength, Frame, FrameError, Lines, MAX_HEADER_LEN};
use libfuzzer_sys::fuzz_target;
use tokio_util::bytes::BytesMut;
use tokio_util::codec::Decoder;

/// The items, then the error that ended the stream (as text), if any.
type Outcome = (Vec<Frame>, Option<String>);

/// Feeds `pieces` to `codec` as `FramedRead` does, checking what it holds after each read.
fn drive<'a, D>(mut codec: D, pieces: impl IntoIterator<Item = &'a [u8]>, bound: usize) -> Outcome
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
            "the decoder holds {} bytes, bound {bound}",
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

/// `input` cut where `cuts` say (each a length, modulo what is left).
fn pieces<'a>(mut input: &'a [u8], cuts: &[u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    for &cut in cuts {
        if input.is_empty() {
            break;
        }
        let at = usize::from(cut) % (input.len() + 1);
        let (head, tail) = input.split_at(at);
        out.push(head);
        input = tail;
    }
    out.push(input);
    out
}

fn check(frames: &[Frame], cap: usize, lines: bool) {
    for frame in frames {
        match frame {
            Frame::Message(text) => {
                assert!(
                    text.len() <= cap,
                    "a message of {} bytes past the cap {cap}",
                    text.len()
                );
                if lines {
                    assert!(!text.contains('\n'), "a line holds a line end");
                }
            }
            Frame::TooLong { limit, got } => assert!(*limit == cap && *got > cap),
            Frame::NotUtf8 { len } => assert!(*len <= cap),
            _ => {}
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let [cap, n_cuts, rest @ ..] = data else {
        return;
    };
    let cap = 1 + usize::from(*cap) % 64;
    let n_cuts = usize::from(*n_cuts % 16).min(rest.len());
    let (cuts, input) = rest.split_at(n_cuts);

    let whole = drive(Lines::new(cap), [input], usize::MAX);
    check(&whole.0, cap, true);
    assert_eq!(whole.1, None, "lines never fail on input alone");
    let split = drive(Lines::new(cap), pieces(input, cuts), cap + 1);
    assert_eq!(split, whole, "lines, split");

    let bound = cap.max(MAX_HEADER_LEN);
    let whole = drive(ContentLength::new(cap), [input], usize::MAX);
    check(&whole.0, cap, false);
    let split = drive(ContentLength::new(cap), pieces(input, cuts), bound);
    assert_eq!(split, whole, "content-length, split");
});
