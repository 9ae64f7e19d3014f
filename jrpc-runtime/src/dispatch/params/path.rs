//! The path into params decoded whole, for the `-32602` of a failure (`params.position.line`),
//! read back from where serde_json says the failure was in the params' text: nothing is tracked
//! while params decode, so a decode that succeeds costs what it did.

use std::fmt::Write as _;

/// Returns the path from `params` to where serde_json found `err` in `text` (valid JSON): `.member`
/// or `[index]` for each object member and array element open there.
///
/// serde_json gives the line and the column (in bytes) of the failure: a value of the wrong type
/// ends there (an object or an array starts there), and a struct missing a field ends there, so
/// the text before it has the members and elements open around the value at fault. A key read
/// there (an unknown or repeated field) names no member: the path is the object's.
pub(super) fn path_at(text: &str, err: &serde_json::Error) -> String {
    let mut path = String::from("params");
    if err.line() == 0 {
        return path;
    }
    let line_start = match err.line() {
        1 => 0,
        line => text
            .match_indices('\n')
            .nth(line - 2)
            .map_or(text.len(), |(at, _)| at + 1),
    };
    let mut end = (line_start + err.column()).min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    // An error at a value's first character (a peek: an array where a number goes, elements past
    // a struct's fields) names that value: the array or object opening there is not entered.
    let prefix = text[..end].trim_end();
    let prefix = prefix.strip_suffix(['[', '{']).unwrap_or(prefix);
    for open in open_at(prefix) {
        match open {
            Open::Element(index) => {
                let _ = write!(path, "[{index}]");
            }
            Open::Member(Some(key)) => push_member(&mut path, &text[key]),
            Open::Member(None) => {}
        }
    }
    path
}

/// Says what is open at the end of a prefix of JSON text: an array's element (its index), or an
/// object's member (the span of its key, quotes included, once the colon after it is read).
enum Open {
    Element(usize),
    Member(Option<std::ops::Range<usize>>),
}

/// Returns the arrays and objects open at the end of `prefix`, outermost first.
fn open_at(prefix: &str) -> Vec<Open> {
    // Per object: the key last read and whether its colon was read.
    let mut stack: Vec<(Open, bool)> = Vec::new();
    let bytes = prefix.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                if let Some((Open::Member(key), false)) = stack.last_mut() {
                    *key = Some(start..(i + 1).min(bytes.len()));
                }
            }
            b'{' => stack.push((Open::Member(None), false)),
            b'[' => stack.push((Open::Element(0), true)),
            b'}' | b']' => {
                stack.pop();
            }
            b':' => {
                if let Some((Open::Member(_), colon)) = stack.last_mut() {
                    *colon = true;
                }
            }
            b',' => match stack.last_mut() {
                Some((Open::Element(index), _)) => *index += 1,
                Some((member, colon)) => (*member, *colon) = (Open::Member(None), false),
                None => {}
            },
            _ => {}
        }
        i += 1;
    }
    stack
        .into_iter()
        .map(|(open, colon)| match open {
            Open::Member(_) if !colon => Open::Member(None),
            open => open,
        })
        .collect()
}

/// `.key`, or `["key"]` for a key that is not a plain name.
fn push_member(path: &mut String, quoted: &str) {
    let key: String = serde_json::from_str(quoted).unwrap_or_else(|_| {
        let inner = quoted.strip_prefix('"').unwrap_or(quoted);
        inner.strip_suffix('"').unwrap_or(inner).to_owned()
    });
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '$'));
    if plain {
        path.push('.');
        path.push_str(&key);
    } else {
        path.push('[');
        path.push_str(&serde_json::Value::String(key).to_string());
        path.push(']');
    }
}

#[cfg(test)]
mod tests {
    use std::fmt;

    use serde::de::DeserializeOwned;
    use serde_json::value::RawValue;

    use super::*;
    use crate::dispatch::{FromParams, Whole};

    /// Returns the `data` of params decoded whole into `T`, as the string it is.
    fn data<T: DeserializeOwned + Send + fmt::Debug + 'static>(json: &str) -> Option<String> {
        let raw = serde_json::from_str::<&RawValue>(json).unwrap();
        let err = Whole::<T>::from_params(Some(raw), &["params"]).err()?;
        Some(serde_json::from_str(err.data().unwrap().get()).unwrap())
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Position {
        line: u32,
        character: u32,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Document {
        uri: String,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct HoverParams {
        text_document: Document,
        position: Position,
    }

    /// Returns the `data` of params decoded whole into `T` that do not decode.
    fn whole_reason<T: DeserializeOwned + Send + fmt::Debug + 'static>(json: &str) -> String {
        data::<T>(json).expect("a failure")
    }

    #[test]
    fn whole_params_name_the_path_to_the_fault() {
        let cases = [
            (
                r#"{"position": {"line": 1, "character": 2}}"#,
                "params: missing field `textDocument`",
            ),
            (
                r#"{"textDocument": {}, "position": {"line": 1, "character": 2}}"#,
                "params.textDocument: missing field `uri`",
            ),
            (
                r#"{"textDocument": {"uri": "a"}, "position": {"line": "x", "character": 2}}"#,
                r#"params.position.line: invalid type: string "x", expected u32"#,
            ),
            (
                r#"{"textDocument": {"uri": "a"}, "position": {"line": -1, "character": 2}}"#,
                "params.position.line: invalid value: integer `-1`, expected u32",
            ),
            (
                r#"{"textDocument": {"uri": "a"}, "position": [1, true]}"#,
                "params.position[1]: invalid type: boolean `true`, expected u32",
            ),
            (
                r#"{"textDocument": {"uri": "a", "version": 2}, "position": [1, 2]}"#,
                "params.textDocument: unknown field `version`, expected `uri`",
            ),
            (
                r#"{"textDocument": [], "position": {"line": 1, "character": 2}}"#,
                "params.textDocument: invalid length 0, expected struct Document with 1 element",
            ),
            (
                r#"[["x", []], {"line": 1, "character": 2}]"#,
                "params[0][1]: trailing characters",
            ),
            (
                r#"{"textDocument": {"uri": "a"}, "position": {"line": [1], "character": 2}}"#,
                "params.position.line: invalid type: sequence, expected u32",
            ),
            (
                r#"{"textDocument": 7, "position": {"line": 1, "character": 2}}"#,
                "params.textDocument: invalid type: integer `7`, expected struct Document",
            ),
            (
                r#"{"textDocument": {"uri": "a"}, "position": {"line": 1}}"#,
                "params.position: missing field `character`",
            ),
            (
                r#"[{"uri": 5}, {"line": 1, "character": 2}]"#,
                "params[0].uri: invalid type: integer `5`, expected a string",
            ),
            (
                // Over lines, with a string holding what looks like structure.
                "{\"textDocument\": {\"uri\": \"a,]}\\\"\"},\n  \"position\": {\n    \"line\": 1,\n    \"character\": null}}",
                "params.position.character: invalid type: null, expected u32",
            ),
        ];
        for (json, want) in cases {
            assert_eq!(whole_reason::<HoverParams>(json), want, "{json}");
        }
    }

    #[test]
    fn a_member_that_is_no_plain_name_is_quoted() {
        use std::collections::HashMap;
        assert_eq!(
            whole_reason::<HashMap<String, HashMap<String, u8>>>(
                r#"{"a b": {"ok": 1}, "x\u0079": {"é.": "no"}}"#
            ),
            r#"params.xy["é."]: invalid type: string "no", expected u8"#
        );
        assert_eq!(
            whole_reason::<Vec<Vec<u8>>>("[[1], [2, 3, 256]]"),
            "params[1][2]: invalid value: integer `256`, expected u8"
        );
    }

    /// Says what a part of the params decodes into: the types of the property below, `Extra` for an
    /// element past a struct's fields (serde_json's "trailing characters"), and `Any` for a part
    /// they ignore.
    #[derive(Clone, Copy, Debug)]
    enum Part {
        Hover,
        Document,
        Position,
        Number,
        Text,
        Positions,
        Map,
        Bytes,
        Byte,
        Extra,
        Any,
    }

    impl Part {
        /// Returns the part a member (`Some(key)`) or an element (`index`) of this one is.
        fn child(self, key: Option<&str>, index: usize) -> Self {
            match (self, key, index) {
                (Self::Hover, Some("textDocument"), _) | (Self::Hover, None, 0) => Self::Document,
                (Self::Hover, Some("position"), _) | (Self::Hover, None, 1) => Self::Position,
                (Self::Document, Some("uri"), _) | (Self::Document, None, 0) => Self::Text,
                (Self::Position, Some("line" | "character"), _) => Self::Number,
                (Self::Position, None, 0 | 1) => Self::Number,
                (Self::Positions, None, _) => Self::Position,
                (Self::Map, Some(_), _) => Self::Bytes,
                (Self::Bytes, None, _) => Self::Byte,
                (Self::Hover | Self::Document | Self::Position, None, _) => Self::Extra,
                _ => Self::Any,
            }
        }

        /// Returns whether `value` fails to decode as this part.
        fn fails(self, value: &serde_json::Value) -> bool {
            use serde_json::from_value as decode;
            let value = value.clone();
            match self {
                Self::Hover => decode::<HoverParams>(value).is_err(),
                Self::Document => decode::<Document>(value).is_err(),
                Self::Position => decode::<Position>(value).is_err(),
                Self::Number => decode::<u32>(value).is_err(),
                Self::Text => decode::<String>(value).is_err(),
                Self::Positions => decode::<Vec<Position>>(value).is_err(),
                Self::Map => decode::<std::collections::HashMap<String, Vec<u8>>>(value).is_err(),
                Self::Bytes => decode::<Vec<u8>>(value).is_err(),
                Self::Byte => decode::<u8>(value).is_err(),
                Self::Extra => true,
                Self::Any => false,
            }
        }
    }

    /// Every place in `value` (`part` of the params), as [`path_at`] writes its path, with
    /// whether it fails to decode as the part it is.
    fn places(
        value: &serde_json::Value,
        part: Part,
        path: &mut String,
        out: &mut Vec<(String, bool)>,
    ) {
        out.push((path.clone(), part.fails(value)));
        let len = path.len();
        match value {
            serde_json::Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    let _ = write!(path, "[{index}]");
                    places(item, part.child(None, index), path, out);
                    path.truncate(len);
                }
            }
            serde_json::Value::Object(members) => {
                for (key, member) in members {
                    push_member(path, &serde_json::Value::String(key.clone()).to_string());
                    places(member, part.child(Some(key), 0), path, out);
                    path.truncate(len);
                }
            }
            _ => {}
        }
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        use serde_json::Value;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            prop_oneof![Just(-1i64), Just(0), Just(7), Just(300), Just(i64::MAX)]
                .prop_map(Value::from),
            prop_oneof![Just("x"), Just("a,]}\"[{:"), Just("é\n"), Just("")].prop_map(Value::from),
        ];
        let keys = prop_oneof![
            Just("textDocument"),
            Just("position"),
            Just("line"),
            Just("character"),
            Just("uri"),
            Just("a b"),
            Just("é."),
        ];
        leaf.prop_recursive(4, 24, 4, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(keys.clone(), inner, 0..4).prop_map(|members| {
                    Value::Object(
                        members
                            .into_iter()
                            .map(|(k, v)| (k.to_owned(), v))
                            .collect(),
                    )
                }),
            ]
        })
    }

    /// Returns the path of a failure, without `: reason`.
    fn failure_path<T: DeserializeOwned + Send + fmt::Debug + 'static>(
        text: &str,
    ) -> Option<String> {
        let data = data::<T>(text)?;
        Some(
            data.split_once(": ")
                .expect("a path, then the reason")
                .0
                .to_owned(),
        )
    }

    proptest::proptest! {
        /// Whatever the value and however it is laid out, a failure's path names a place in it
        /// that does not decode as what is expected there.
        #[test]
        fn a_failure_names_a_place_that_fails(value in json_value(), pretty: bool) {
            let text = if pretty {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                serde_json::to_string(&value).unwrap()
            };
            let failures = [
                (Part::Hover, failure_path::<HoverParams>(&text)),
                (Part::Positions, failure_path::<Vec<Position>>(&text)),
                (Part::Map, failure_path::<std::collections::HashMap<String, Vec<u8>>>(&text)),
            ];
            for (part, path) in failures {
                let Some(path) = path else { continue };
                let mut all = Vec::new();
                places(&value, part, &mut String::from("params"), &mut all);
                proptest::prop_assert!(
                    all.contains(&(path.clone(), true)),
                    "{:?}: {} in {}", part, path, text
                );
            }
        }
    }
}
