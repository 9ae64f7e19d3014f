//! `x-request-id`: taken from the request when it is sensible, made up otherwise.

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ::http::{HeaderMap, HeaderName};

/// The header's name.
pub(crate) fn x_request_id() -> HeaderName {
    X_REQUEST_ID.clone()
}

/// Made once: `from_static` checks the name each time it runs, and the header is looked up and
/// set on every request (a static name's clone copies a pointer).
static X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The longest tag taken from a client; a longer one is replaced.
const MAX_LEN: usize = 128;

/// Makes request tags: 16 hex digits, distinct within the process and not guessable across
/// processes (a keyed hash of a counter, with a key drawn at random per process).
#[derive(Debug, Default)]
pub(crate) struct Tags {
    key: std::collections::hash_map::RandomState,
    next: AtomicU64,
}

impl Tags {
    /// The request's own tag when it is acceptable, else a fresh one.
    ///
    /// A client's tag is taken when it is 1 to 128 characters of `A-Z a-z 0-9 - _ . : / + = @`:
    /// enough for UUIDs, ULIDs, hex and base64 tags, and nothing that could forge a log line.
    pub(crate) fn tag(&self, headers: &HeaderMap) -> Arc<str> {
        match headers
            .get(&X_REQUEST_ID)
            .and_then(|value| value.to_str().ok())
        {
            Some(tag) if acceptable(tag) => tag.into(),
            _ => self.fresh(),
        }
    }

    fn fresh(&self) -> Arc<str> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let mut hasher = self.key.build_hasher();
        hasher.write_u64(n);
        // Written in place: the tag is then the one allocation of its `Arc`.
        let hash = hasher.finish();
        let mut hex = [0u8; 16];
        for (i, digit) in hex.iter_mut().enumerate() {
            *digit = b"0123456789abcdef"[(hash >> (60 - 4 * i)) as usize & 0xf];
        }
        std::str::from_utf8(&hex).unwrap_or_default().into()
    }
}

fn acceptable(tag: &str) -> bool {
    (1..=MAX_LEN).contains(&tag.len())
        && tag
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:/+=@".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_sensible_tags_and_makes_up_the_rest() {
        let tags = Tags::default();
        let mut headers = HeaderMap::new();
        headers.insert(
            x_request_id(),
            ::http::HeaderValue::from_static("req-1:a/b=="),
        );
        assert_eq!(&*tags.tag(&headers), "req-1:a/b==");
        headers.insert(
            x_request_id(),
            ::http::HeaderValue::from_static("two words"),
        );
        let made = tags.tag(&headers);
        assert_eq!(made.len(), 16);
        assert_ne!(made, tags.tag(&HeaderMap::new()));
    }
}
