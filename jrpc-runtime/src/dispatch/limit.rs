//! Bounds how far an answer may run while its result is written: the `max_message_size` of the
//! request's transport, which its context carries
//! ([`Context::answer_limit`](super::Context::answer_limit), `usize::MAX` in process).
//!
//! A result past the limit is not written to its end: the writer fails once the answer would pass
//! it, and the call is answered `-32008` ([`ErrorCode::RESPONSE_TOO_LARGE`]) instead, so a
//! too-large answer costs the limit, not its own size. A call with no limit is polled as before,
//! with no check on its way.

use std::io;

use crate::wire::{ErrorCode, Id, RpcError, write};

/// Writes into `out`, failing rather than let it pass `limit` bytes.
///
/// The limit is looked at only when `out` must grow, and `out` never grows past it: a write that
/// fits in the room `out` has costs what a write into a `Vec` does.
pub(super) struct Capped<'a> {
    pub(super) out: &'a mut Vec<u8>,
    pub(super) limit: usize,
}

impl Capped<'_> {
    /// Writes `buf`, for which `out` has no room: grows it, at most to the limit; or fails.
    #[cold]
    #[inline(never)]
    fn grow_and_write(&mut self, buf: &[u8]) -> io::Result<()> {
        let len = self.out.len();
        let needed = len.saturating_add(buf.len());
        if needed > self.limit {
            return Err(io::ErrorKind::FileTooLarge.into());
        }
        // Twice as large, as a `Vec` grows, but never past the limit: what passes it comes here.
        let room = needed
            .max(self.out.capacity().saturating_mul(2))
            .min(self.limit);
        self.out.reserve_exact(room - len);
        self.out.extend_from_slice(buf);
        Ok(())
    }
}

impl io::Write for Capped<'_> {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        if buf.len() <= self.out.capacity() - self.out.len() {
            self.out.extend_from_slice(buf);
            return Ok(());
        }
        self.grow_and_write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Returns the error that answers a call whose answer would pass `limit` bytes (`bytes` when it
/// was made whole), logged at WARN with the setting to raise: the one answer for "too large", on
/// every transport.
#[cold]
pub(crate) fn too_large(method: Option<&str>, bytes: Option<usize>, limit: usize) -> RpcError {
    tracing::warn!(
        method,
        bytes,
        limit,
        "answer too large: an error answer sent instead (raise `max_message_size` to send it)"
    );
    let why = match bytes {
        Some(bytes) => format!(
            "the answer of {bytes} bytes exceeds the limit of {limit} bytes (`max_message_size`)"
        ),
        None => format!("the answer exceeds the limit of {limit} bytes (`max_message_size`)"),
    };
    RpcError::new(ErrorCode::RESPONSE_TOO_LARGE, "Response too large").with_data(&why)
}

/// Returns the answer that replaces one of `bytes`, larger than `limit`, to the call `method`
/// with `id` (`None` for a batch, answered with `null`), logged as [`too_large`] says.
#[cold]
pub(crate) fn too_large_answer(
    method: Option<&str>,
    id: Option<&Id>,
    bytes: usize,
    limit: usize,
) -> Vec<u8> {
    write::error_bytes(&too_large(method, Some(bytes), limit), &id)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde::ser::{Serialize, SerializeSeq as _, Serializer};

    use super::*;
    use crate::dispatch::{Context, Methods};
    use crate::transport::Transport;

    /// `n` strings of 100 bytes, counting in `written` those serde asked for.
    struct Rows {
        n: usize,
        written: &'static AtomicUsize,
    }

    impl Serialize for Rows {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut seq = serializer.serialize_seq(Some(self.n))?;
            for _ in 0..self.n {
                self.written.fetch_add(1, Ordering::Relaxed);
                seq.serialize_element(&"r".repeat(100))?;
            }
            seq.end()
        }
    }

    #[tokio::test]
    async fn an_answer_past_the_limit_stops_being_written_there() {
        static WRITTEN: AtomicUsize = AtomicUsize::new(0);
        let mut methods = Methods::new();
        methods
            .register("rows", &["n"], |(n,): (usize,), _| async move {
                Ok::<_, RpcError>(Rows {
                    n,
                    written: &WRITTEN,
                })
            })
            .unwrap();
        let ctx = Context::new(Transport::Http).with_answer_limit(10_000);
        let call = r#"{"jsonrpc":"2.0","method":"rows","params":[10000],"id":7}"#;
        let answer = methods.handle_bytes(call, &ctx).await;
        let answer: serde_json::Value = serde_json::from_slice(&answer.unwrap()).unwrap();
        assert_eq!(answer["error"]["code"], -32008, "{answer}");
        assert_eq!(answer["id"], 7);
        // About a hundred rows fit in the limit: the writing stopped at the first past it.
        let written = WRITTEN.swap(0, Ordering::Relaxed);
        assert!((90..=110).contains(&written), "{written} rows written");
        // Within the limit, and with none, the answer is written whole.
        let fits = r#"{"jsonrpc":"2.0","method":"rows","params":[50],"id":8}"#;
        let answer = methods.handle_bytes(fits, &ctx).await.unwrap();
        assert!(answer.ends_with(br#"],"id":8}"#));
        let unlimited = Context::new(Transport::Http);
        let answer = methods.handle_bytes(call, &unlimited).await.unwrap();
        assert!(answer.len() > 1_000_000);
        assert_eq!(WRITTEN.load(Ordering::Relaxed), 10_050);
        // A batch's elements are written into its answer up to the limit: the one that would
        // pass it is answered `-32008` with its id, and the one before it stands.
        let batch = format!("[{fits},{call}]");
        let answer = methods.handle_bytes(&batch, &ctx).await.unwrap();
        let answer: serde_json::Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(answer[0]["result"].as_array().map(Vec::len), Some(50));
        assert_eq!(answer[1]["error"]["code"], -32008, "{answer}");
        assert_eq!(answer[1]["id"], 7);
    }
}
