//! Reads requests written compactly, as this crate's writers and most clients write them, by
//! matching their members as bytes, serde_json reading only the params (into their Rust types)
//! and the id. What is not written so is left to the full reader, which reads anything.
//!
//! The form read is `{"jsonrpc":"2.0",` then `"method":"M"` (or `"id":I,"method":"M"`), then
//! `,"params":P` and `,"id":I`, each at most once, in either order, then `}`: no white space
//! between the members, no other member, no escape in the method's name. Every part is checked as
//! strictly as serde_json checks it (the params and the id are read by it), so that what is read
//! here is what the full reader would read.

use serde::de::DeserializeSeed;
use serde_json::value::RawValue;

use super::peek::{plain_len, skip_scalar};
use super::{Decoded, is_valid_id};
use crate::wire::id::RawId;
use crate::wire::id::small_int;

const VERSION: &[u8; 17] = br#"{"jsonrpc":"2.0","#;

/// Returns the request naming `method` written compactly from `at` in `text`, its params decoded by
/// `seed`, and the index past its closing brace; `None` when it is not written so, or `seed`
/// refuses its params.
#[inline]
pub(super) fn request<'a, S: DeserializeSeed<'a>>(
    text: &'a str,
    at: usize,
    method: &str,
    seed: S,
) -> Option<(Decoded<'a, S::Value>, usize)> {
    let bytes = text.as_bytes();
    let mut at = at + prefix(bytes.get(at..)?, VERSION)?;
    let mut id = None;
    if let Some(len) = prefix(&bytes[at..], br#""id":"#) {
        let (raw, end) = read_id(text, at + len)?;
        id = Some(raw);
        at = end + prefix(&bytes[end..], b",")?;
    }
    at += prefix(&bytes[at..], br#""method":""#)?;
    let name = text.get(at..at + plain_len(&bytes[at..])?)?;
    if name != method {
        return None;
    }
    at += name.len() + 1;
    let mut seed = Some(seed);
    let mut params = None;
    loop {
        match bytes.get(at)? {
            b'}' => {
                let decoded = Decoded {
                    method: name,
                    id,
                    params,
                };
                return Some((decoded, at + 1));
            }
            b',' => at += 1,
            _ => return None,
        }
        if let Some(len) = prefix(&bytes[at..], br#""params":"#) {
            let (start, end) = (at + len, skip_value(bytes, at + len)?);
            let mut de = serde_json::Deserializer::from_str(text.get(start..end)?);
            let value = seed.take()?.deserialize(&mut de).ok()?;
            de.end().ok()?;
            params = Some(value);
            at = end;
        } else if let (true, Some(len)) = (id.is_none(), prefix(&bytes[at..], br#""id":"#)) {
            let (raw, end) = read_id(text, at + len)?;
            id = Some(raw);
            at = end;
        } else {
            return None;
        }
    }
}

/// Returns the length of `start` when `bytes` starts with it (its length known, so that the
/// comparison is a few instructions, not a call).
#[inline(always)]
fn prefix<const N: usize>(bytes: &[u8], start: &[u8; N]) -> Option<usize> {
    (bytes.first_chunk::<N>() == Some(start)).then_some(N)
}

/// Returns the id starting at `at`, and the index past it; `None` when it is not a valid id.
#[inline]
fn read_id(text: &str, at: usize) -> Option<(RawId<'_>, usize)> {
    let end = skip_scalar(text.as_bytes(), at)?;
    let written = text.get(at..end)?;
    // Most ids are small integers, valid as they are; serde_json checks the rest.
    if small_int(written).is_none() {
        let raw: &RawValue = serde_json::from_str(written).ok()?;
        if !is_valid_id(raw) {
            return None;
        }
    }
    Some((RawId::Borrowed(written), end))
}

/// Returns the index past the value starting at `at`, found by its brackets and quotes (serde_json
/// then reads it, as the full reader reads params: on their own, under its limit on nesting);
/// `None` when it does not end.
#[inline]
fn skip_value(bytes: &[u8], at: usize) -> Option<usize> {
    if !matches!(bytes.get(at)?, b'[' | b'{') {
        return skip_scalar(bytes, at);
    }
    let mut depth = 0;
    let mut i = at;
    loop {
        match *bytes.get(i)? {
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b'"' => i = string_end(bytes, i + 1)?,
            _ => {}
        }
        i += 1;
    }
}

/// Returns the index of the quote that closes the string whose contents start at `at`.
#[inline]
fn string_end(bytes: &[u8], mut at: usize) -> Option<usize> {
    // Most strings in params (member names, short values) end within a few bytes, found by a
    // plain loop sooner than memchr is set up; memchr searches past them.
    const SHORT: usize = 16;
    loop {
        let rest = bytes.get(at..)?;
        let head = &rest[..rest.len().min(SHORT)];
        at += match head.iter().position(|&b| b == b'"' || b == b'\\') {
            Some(found) => found,
            None => head.len() + memchr::memchr2(b'"', b'\\', &rest[head.len()..])?,
        };
        if bytes[at] == b'"' {
            return Some(at);
        }
        // An escape: the character after the backslash is never the closing quote.
        at += 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Seed = std::marker::PhantomData<serde_json::Value>;

    fn read(text: &str) -> Option<(Option<String>, Option<String>, usize)> {
        let (decoded, end) = request(text, 0, "add", Seed::default())?;
        let params = decoded.params.map(|p| p.to_string());
        let id = decoded.id.as_ref().map(|id| id.text().to_owned());
        Some((params, id, end))
    }

    /// Checks that the forms writers use are read here, with their params and id as written.
    #[test]
    fn reads_what_writers_write() {
        let params = || Some("[1,2]".to_owned());
        let body = r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":7}"#;
        assert_eq!(read(body), Some((params(), Some("7".into()), body.len())));
        let body = r#"{"jsonrpc":"2.0","id":"a\"b","method":"add","params":[1,2]}"#;
        assert_eq!(
            read(body),
            Some((params(), Some(r#""a\"b""#.into()), body.len()))
        );
        let body = r#"{"jsonrpc":"2.0","method":"add","id":null,"params":[1,2]}"#;
        assert_eq!(
            read(body),
            Some((params(), Some("null".into()), body.len()))
        );
        let body = r#"{"jsonrpc":"2.0","method":"add","params":{"s":"}]\"[{"}}"#;
        let expected = Some(r#"{"s":"}]\"[{"}"#.to_owned());
        assert_eq!(read(body), Some((expected, None, body.len())));
        let body = r#"{"jsonrpc":"2.0","method":"add"},"#;
        assert_eq!(read(body), Some((None, None, body.len() - 1)));
    }

    /// Checks that a string's end is found whatever its length and wherever its escapes fall,
    /// within the first bytes or past them.
    #[test]
    fn finds_strings_ends_at_any_length() {
        for len in 0..40 {
            for escape in [None, Some(0), Some(len / 2), Some(15), Some(16), Some(len)] {
                let mut text = "x".repeat(len);
                if let Some(at) = escape.filter(|at| *at <= len) {
                    text.insert_str(at, r#"\""#);
                }
                let params = format!(r#"["{text}",{{"k":"{text}"}}]"#);
                let body =
                    format!(r#"{{"jsonrpc":"2.0","method":"add","params":{params},"id":1}}"#);
                assert_eq!(
                    read(&body),
                    Some((Some(params.clone()), Some("1".into()), body.len())),
                    "{body}"
                );
            }
        }
    }

    /// Anything else is left to the full reader: white space, other members, members written
    /// twice, ids and params serde_json would not take.
    #[test]
    fn declines_the_rest() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","method":"add","params":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        for body in [
            r#"{"jsonrpc":"2.0", "method":"add"}"#,
            r#"{"jsonrpc":"2.0","method":"add" }"#,
            r#"{"jsonrpc":"2.0","method":"sub"}"#,
            r#"{"jsonrpc":"2.0","method":"a\u0064d"}"#,
            r#"{"jsonrpc":"2.0","method":"add","x":1}"#,
            r#"{"jsonrpc":"2.0","method":"add","params":[],"params":[]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"add","id":1}"#,
            r#"{"jsonrpc":"2.0","method":"add","id":1,"id":1}"#,
            r#"{"jsonrpc":"2.0","method":"add","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","method":"add","id":true}"#,
            r#"{"jsonrpc":"2.0","method":"add","id":01}"#,
            r#"{"jsonrpc":"2.0","method":"add","id":"\x"}"#,
            r#"{"jsonrpc":"2.0","method":"add","params":[1,]}"#,
            r#"{"jsonrpc":"2.0","method":"add","params":[1]]}"#,
            r#"{"jsonrpc":"2.0","method":"add","params":["\"]}"#,
            r#"{"jsonrpc":"2.0","method":"add","params":[1,2}"#,
            r#"{"jsonrpc":"2.0","method":"add""#,
            deep.as_str(),
        ] {
            assert_eq!(read(body), None, "{body}");
        }
    }
}
