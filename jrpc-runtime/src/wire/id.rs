//! Defines request ids.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// Holds the `id` of a request: a number, a string, or `null`.
///
/// A number id keeps the text it was written with, so it is echoed byte for byte (`1.0`, `1e3` and
/// `12345678901234567890123` come back as sent); integers that fit an `i64` are stored without
/// allocating.
///
/// ```
/// use jrpc_runtime::Id;
///
/// assert_eq!(Id::from(7).to_string(), "7");
/// assert_eq!(Id::from("a").as_str(), Some("a"));
/// assert_eq!(Id::from_json("1e3").map(|id| id.to_string()), Some("1e3".to_owned()));
/// assert!(Id::from_json("true").is_none());
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Id(Repr);

#[derive(Clone, PartialEq, Eq, Hash)]
enum Repr {
    Null,
    Int(i64),
    /// A number not written as a plain `i64`, kept as written.
    Number(Box<str>),
    Str(Box<str>),
}

impl Id {
    /// Holds the `null` id.
    pub const NULL: Self = Self(Repr::Null);

    /// Reads an id from its JSON text; `None` when the text is not a number, a string or `null`.
    pub fn from_json(raw: &str) -> Option<Self> {
        // Most ids are small integers: read at once.
        if let Some(n) = small_int(raw) {
            return Some(Self(Repr::Int(n)));
        }
        // White space around a value is JSON's, not the id's: `1 ` is the id `1`, echoed as `1`.
        let raw = trim_blank(raw);
        let first = *raw.as_bytes().first()?;
        match first {
            // The fast path takes a string with nothing to unescape; anything else (an escape,
            // a control character, a missing closing quote) goes to serde_json to judge.
            b'"' => match raw.get(1..raw.len() - 1) {
                Some(inner)
                    if raw.len() >= 2
                        && raw.ends_with('"')
                        && !inner.bytes().any(|b| b == b'\\' || b == b'"' || b < 0x20) =>
                {
                    Some(Self(Repr::Str(inner.into())))
                }
                _ => serde_json::from_str::<String>(raw).ok().map(Self::from),
            },
            b'n' if raw == "null" => Some(Self::NULL),
            b'-' | b'0'..=b'9' => {
                // Only a number written the way `i64` would write it is kept as one: `-0` must be
                // echoed as written, and `007` (which Rust parses) is not JSON at all.
                let digits = raw.strip_prefix('-').unwrap_or(raw);
                let canonical = raw != "-0" && (digits.len() == 1 || !digits.starts_with('0'));
                match raw.parse::<i64>() {
                    Ok(n) if canonical => Some(Self(Repr::Int(n))),
                    _ => serde_json::from_str::<&RawValue>(raw)
                        .ok()
                        .map(|_| Self(Repr::Number(raw.into()))),
                }
            }
            _ => None,
        }
    }

    /// Returns whether this is the `null` id.
    pub fn is_null(&self) -> bool {
        matches!(self.0, Repr::Null)
    }

    /// Returns the id as an integer, when it is one.
    pub fn as_i64(&self) -> Option<i64> {
        match self.0 {
            Repr::Int(n) => Some(n),
            _ => None,
        }
    }

    /// Returns the id as a string, when it is one.
    pub fn as_str(&self) -> Option<&str> {
        match &self.0 {
            Repr::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Appends the id's JSON text to `out`.
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        match &self.0 {
            Repr::Null => out.extend_from_slice(b"null"),
            Repr::Int(n) => super::write::WriteId::write_id(n, out),
            Repr::Number(raw) => out.extend_from_slice(raw.as_bytes()),
            Repr::Str(s) => {
                // Writing a string into a Vec cannot fail.
                let _ = serde_json::to_writer(&mut *out, &**s);
            }
        }
    }
}

/// Holds a request's id as it is echoed: the JSON text it was written with, known to be a valid id
/// (a number, a string or `null`).
#[derive(Clone, Debug)]
pub(crate) enum RawId<'a> {
    /// Borrowed from the request's text.
    Borrowed(&'a str),
    /// Owned, once the request's text is gone.
    Owned(Box<str>),
}

impl<'a> RawId<'a> {
    /// Returns the id's JSON text.
    #[inline]
    pub(crate) fn text(&self) -> &str {
        match self {
            Self::Borrowed(text) => text,
            Self::Owned(text) => text,
        }
    }

    /// Returns the id.
    #[inline]
    pub(crate) fn id(&self) -> Id {
        Id::from_json(self.text()).unwrap_or(Id::NULL)
    }

    /// Returns the same id, owning its text.
    pub(crate) fn into_owned(self) -> RawId<'static> {
        match self {
            Self::Borrowed(text) => RawId::Owned(text.into()),
            Self::Owned(text) => RawId::Owned(text),
        }
    }
}

impl<'a> From<&'a RawValue> for RawId<'a> {
    #[inline]
    fn from(raw: &'a RawValue) -> Self {
        Self::Borrowed(raw.get())
    }
}

/// Reads `text` as a non-negative integer of up to 18 digits written as `i64` writes it (no leading
/// zero), and nothing else.
#[inline]
pub(super) fn small_int(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    if bytes.is_empty() || bytes.len() > 18 || (bytes[0] == b'0' && bytes.len() > 1) {
        return None;
    }
    bytes.iter().try_fold(0_i64, |n, &b| {
        b.is_ascii_digit().then(|| n * 10 + i64::from(b - b'0'))
    })
}

/// `text` without JSON white space around it.
fn trim_blank(text: &str) -> &str {
    let blank = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let bytes = text.as_bytes();
    let start = bytes.iter().position(|b| !blank(b)).unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !blank(b))
        .map_or(start, |last| last + 1);
    // White space is ASCII: both ends are character boundaries.
    text.get(start..end).unwrap_or_default()
}

impl From<i64> for Id {
    fn from(n: i64) -> Self {
        Self(Repr::Int(n))
    }
}

impl From<i32> for Id {
    fn from(n: i32) -> Self {
        Self(Repr::Int(n.into()))
    }
}

impl From<u32> for Id {
    fn from(n: u32) -> Self {
        Self(Repr::Int(n.into()))
    }
}

impl From<u64> for Id {
    fn from(n: u64) -> Self {
        match i64::try_from(n) {
            Ok(n) => Self(Repr::Int(n)),
            Err(_) => Self(Repr::Number(n.to_string().into())),
        }
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        Self(Repr::Str(s.into()))
    }
}

impl From<String> for Id {
    fn from(s: String) -> Self {
        Self(Repr::Str(s.into()))
    }
}

impl fmt::Display for Id {
    /// Writes the id's JSON text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Null => f.write_str("null"),
            Repr::Int(n) => fmt::Display::fmt(n, f),
            Repr::Number(raw) => f.write_str(raw),
            // JSON's escapes, not Rust's (`Debug` writes `\u{82}`, which is not JSON).
            Repr::Str(s) => match serde_json::to_string(&**s) {
                Ok(json) => f.write_str(&json),
                Err(_) => Err(fmt::Error),
            },
        }
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Id({self})")
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Repr::Null => serializer.serialize_unit(),
            Repr::Int(n) => serializer.serialize_i64(*n),
            Repr::Number(raw) => RawValue::from_string(raw.to_string())
                .map_err(serde::ser::Error::custom)?
                .serialize(serializer),
            Repr::Str(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        Self::from_json(raw.get())
            .ok_or_else(|| serde::de::Error::custom("an id must be a number, a string or null"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_json_takes_only_whole_json_values() {
        assert_eq!(
            Id::from_json(r#""ab""#).as_ref().and_then(Id::as_str),
            Some("ab")
        );
        assert_eq!(
            Id::from_json(r#""a\"b""#).as_ref().and_then(Id::as_str),
            Some("a\"b")
        );
        // Not strings: no closing quote, a raw control character, a lone quote.
        for bad in [
            "\"ab", "\"abc", "\"a\tb\"", "\"", "\"a\"x", "nul", "1x", "-", "true", "",
        ] {
            assert_eq!(Id::from_json(bad), None, "{bad:?}");
        }
        assert_eq!(
            Id::from_json("-0").map(|id| id.to_string()),
            Some("-0".into())
        );
        // Leading zeros are not JSON: Rust's integer parser takes them, the id reader must not.
        for bad in ["007", "-01", "00", "00002403557961438929509"] {
            assert_eq!(Id::from_json(bad), None, "{bad:?}");
        }
        assert_eq!(Id::from_json("0"), Some(Id::from(0)));
        // The text of a string id is JSON, control and non-ASCII characters included.
        for text in [r#""a\u0082""#, r#""\u0001\n""#, r#""é""#] {
            let id = Id::from_json(text).unwrap();
            assert_eq!(Id::from_json(&id.to_string()), Some(id), "{text}");
        }
        assert_eq!(Id::from_json("-10"), Some(Id::from(-10)));
        assert_eq!(
            Id::from_json("0\n\n").map(|id| id.to_string()),
            Some("0".into())
        );
        assert_eq!(
            Id::from_json(" 1.50 ").map(|id| id.to_string()),
            Some("1.50".into())
        );
    }
}
