//! Implements the method peek: the method a request (or a batch's first element) names, found
//! without reading the rest, to choose a handler before the one-pass read.

use super::BLANK;

/// Finds the method a request's text names without reading the rest: the value of its first
/// top-level `method` member when every member before it is a plain scalar (a string, a number,
/// `true`, `false` or `null`) and no key or name on the way holds an escape.
///
/// It is a guess, made to choose a handler before the request is read: a text that is not
/// JSON, or has a second `method`, may still give one. [`parse_request_with`] reads the text
/// and checks that it names this method.
#[inline]
pub(crate) fn peek_method(text: &str) -> Option<&str> {
    // As the writers (and most clients) write a request, its id first or not: at once, without
    // a scan of the keys.
    if let Some(rest) = text.strip_prefix(r#"{"jsonrpc":"2.0","#) {
        if let Some(name) = rest.strip_prefix(r#""method":""#) {
            return name.get(..plain_len(name.as_bytes())?);
        }
        if let Some(id) = rest.strip_prefix(r#""id":"#)
            && let Some(end) = skip_scalar(id.as_bytes(), 0)
            && let Some(name) = id.get(end..).and_then(|r| r.strip_prefix(r#","method":""#))
        {
            return name.get(..plain_len(name.as_bytes())?);
        }
    }
    let bytes = text.as_bytes();
    let mut at = skip_blank(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    loop {
        at = skip_blank(bytes, at + 1);
        let (key, end) = plain_string(bytes, at)?;
        at = skip_blank(bytes, end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        at = skip_blank(bytes, at + 1);
        if key == b"method" {
            let (name, _) = plain_string(bytes, at)?;
            // The name's bytes lie between two quotes of a `str`, so they are whole characters.
            return text.get(at + 1..at + 1 + name.len());
        }
        at = skip_blank(bytes, skip_scalar(bytes, at)?);
        if bytes.get(at) != Some(&b',') {
            return None;
        }
    }
}

/// Returns the index of the first byte at or after `at` that is not JSON white space.
#[inline]
fn skip_blank(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(at) {
        at += 1;
    }
    at
}

/// Returns the contents of the string starting at `at` and the index past it, when it holds no
/// escape and no control character.
#[inline]
fn plain_string(bytes: &[u8], at: usize) -> Option<(&[u8], usize)> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let rest = bytes.get(at + 1..)?;
    let len = plain_len(rest)?;
    Some((&rest[..len], at + len + 2))
}

/// Returns the length of a string's contents (`bytes` starts after its opening quote) when they
/// hold no escape and no control character.
#[inline]
pub(super) fn plain_len(bytes: &[u8]) -> Option<usize> {
    let len = bytes
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
    (bytes[len] == b'"').then_some(len)
}

/// Returns the index past the scalar value starting at `at` (a string, escapes and all, or a number
/// or literal); `None` for an object or an array.
#[inline]
pub(super) fn skip_scalar(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => {
            let mut i = at + 1;
            loop {
                match bytes.get(i)? {
                    b'"' => return Some(i + 1),
                    b'\\' => i += 2,
                    _ => i += 1,
                }
            }
        }
        b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => {
            let rest = &bytes[at..];
            let len = rest
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(rest.len());
            Some(at + len)
        }
        _ => None,
    }
}

/// Finds the method a batch's first element names, as [`peek_method`] does.
#[inline]
pub(crate) fn peek_batch_method(text: &str) -> Option<&str> {
    let first = text.trim_start_matches(BLANK).strip_prefix('[')?;
    peek_method(first.trim_start_matches(BLANK))
}
