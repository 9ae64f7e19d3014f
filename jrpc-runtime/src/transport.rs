//! Names the kind of transport a call travels over: a label that a handler's context and a caller's
//! spans carry, below both the dispatcher and the callers so that each can name it; and what
//! transports hand the dispatcher's `Context` to keep for them (a request's headers, its tag),
//! as types the dispatcher holds without knowing which transport made them.

use std::fmt;
use std::sync::{Arc, OnceLock};

/// Names the kind of transport a request arrived on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Transport {
    /// Standard input and output, or a child process's pipes.
    Stdio,
    /// HTTP `POST`.
    Http,
    /// A WebSocket connection.
    WebSocket,
    /// A direct call of [`Methods::handle`](crate::dispatch::Methods::handle) or a stub over `Methods`.
    InProcess,
    /// Any other byte stream served as a peer.
    Stream,
    /// A Unix socket (`server::SocketServer::serve_unix`, `unix:` client URLs).
    Unix,
    /// A TCP connection served as a two-way peer (`server::SocketServer::serve_tcp`).
    Tcp,
}

impl Transport {
    /// Returns the transport's short name: `"stdio"`, `"http"`, `"ws"`, `"in-process"`, `"stream"`,
    /// `"unix"` or `"tcp"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::Http => "http",
            Self::WebSocket => "ws",
            Self::InProcess => "in-process",
            Self::Stream => "stream",
            Self::Unix => "unix",
            Self::Tcp => "tcp",
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Holds the headers of a request (or of a WebSocket's upgrade), as `Context` keeps them: HTTP's
/// header map where a transport that has headers is built, else a type with no value.
#[cfg(any(feature = "http", feature = "ws"))]
pub(crate) type Headers = http::HeaderMap;
/// Holds the headers of a request: no transport built has any.
#[cfg(not(any(feature = "http", feature = "ws")))]
pub(crate) type Headers = std::convert::Infallible;

/// Tags a request: the application's text, or an HTTP request's `x-request-id`, taken from the
/// request (its value shares the buffer the request was read into) or made up (16 hex digits,
/// written when first read).
#[derive(Clone, Debug)]
pub(crate) enum RequestTag {
    Text(Arc<str>),
    #[cfg(feature = "http")]
    Header(http::HeaderValue),
    #[cfg_attr(not(feature = "http"), allow(dead_code, reason = "HTTP makes tags up"))]
    Hex(MadeUp),
}

impl RequestTag {
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Self::Text(text) => text,
            // A tag taken is checked to be plain ASCII; one made up is hex digits.
            #[cfg(feature = "http")]
            Self::Header(value) => value.to_str().unwrap_or_default(),
            Self::Hex(made) => made.as_str(),
        }
    }
}

/// Holds a made-up tag: a number of the server's count, whose 16 hex digits are written the first
/// time they are read (most requests' tags never are: a made-up one is not sent back by default,
/// and only a span, a log line or a handler reads it).
#[derive(Clone, Debug)]
pub(crate) struct MadeUp {
    n: u64,
    text: OnceLock<[u8; 16]>,
}

impl MadeUp {
    #[cfg_attr(not(feature = "http"), allow(dead_code, reason = "HTTP makes tags up"))]
    pub(crate) fn new(n: u64) -> Self {
        Self {
            n,
            text: OnceLock::new(),
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        let text = self.text.get_or_init(|| {
            // splitmix64's finalizer: distinct counts give distinct tags.
            let n = self.n;
            let mut mixed = (n ^ (n >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            mixed ^= mixed >> 31;
            hex(mixed)
        });
        std::str::from_utf8(text).unwrap_or_default()
    }
}

/// `n`'s 16 hex digits, lowercase, most significant first: its nibbles spread one a byte, then
/// each turned into its digit, eight at a time in a 64-bit integer (a loop over a table of
/// digits costs four times as much).
fn hex(n: u64) -> [u8; 16] {
    // The nibbles of `half`, one a byte, most significant first.
    fn spread(half: u32) -> u64 {
        let mut x = u64::from(half);
        x = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
        x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff;
        (x | (x << 4)) & 0x0f0f_0f0f_0f0f_0f0f
    }
    fn digits(nibbles: u64) -> [u8; 8] {
        // 1 in each byte whose nibble is 10 or more; those get `'a' - '0' - 10` more.
        let letters = ((nibbles + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
        (nibbles + 0x3030_3030_3030_3030 + letters * 0x27).to_be_bytes()
    }
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&digits(spread((n >> 32) as u32)));
    out[8..].copy_from_slice(&digits(spread(n as u32)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every digit in every place, as `format!` writes them.
    #[test]
    fn writes_hex_as_format_does() {
        let mut n = 0x0123_4567_89ab_cdef_u64;
        for _ in 0..1000 {
            for m in [n, !n, n.rotate_left(4), 0, u64::MAX] {
                assert_eq!(hex(m), format!("{m:016x}").as_bytes(), "{m:016x}");
            }
            n = n.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(1);
        }
    }
}
