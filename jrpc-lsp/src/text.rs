//! Converts between LSP positions and byte offsets, and keeps a document's text as edits arrive.
//!
//! A position is a zero-based line and a `character` offset in that line, counted in the units
//! of the connection's position encoding: UTF-16 code units unless the server chose another at
//! `initialize` (LSP 3.17's `positionEncoding`). Rust strings are UTF-8, so every position a
//! client sends must be converted before it indexes a `&str`: `"😀".len()` is 4 bytes, 2 UTF-16
//! units, 1 character.
//!
//! Lines end at `\n`, `\r\n` or `\r`, as the specification says. Conversions scan the text from
//! its start (no line index is kept): simple and exact, linear in the document's length.

use std::ops::Range as ByteRange;

use lsp_types::{
    InitializeParams, Position, PositionEncodingKind, Range, TextDocumentContentChangeEvent,
};

/// Says what a position's `character` counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PositionEncoding {
    /// Bytes of UTF-8: a Rust string's own unit, so no conversion is needed at all.
    Utf8,
    /// UTF-16 code units: the protocol's default, which every client and server must support.
    #[default]
    Utf16,
    /// Unicode scalar values (Rust's `char`s).
    Utf32,
}

impl PositionEncoding {
    /// Returns the encoding a server should pick for a client: UTF-8 when the client offers it
    /// (`capabilities.general.positionEncodings`), since Rust strings need no conversion then,
    /// else UTF-16, which every client speaks. Answer it in `initialize`'s result
    /// (`capabilities.positionEncoding`, from [`kind`](Self::kind)); `jrpc-lsp` reads it back from
    /// there for [`LspContext::position_encoding`](crate::LspContext::position_encoding).
    pub fn negotiate(params: &InitializeParams) -> Self {
        let offered = params
            .capabilities
            .general
            .as_ref()
            .and_then(|general| general.position_encodings.as_deref())
            .unwrap_or_default();
        if offered.contains(&PositionEncodingKind::UTF8) {
            Self::Utf8
        } else {
            Self::Utf16
        }
    }

    /// Returns the encoding's name on the wire (`"utf-8"`, `"utf-16"`, `"utf-32"`).
    pub fn kind(self) -> PositionEncodingKind {
        match self {
            Self::Utf8 => PositionEncodingKind::UTF8,
            Self::Utf16 => PositionEncodingKind::UTF16,
            Self::Utf32 => PositionEncodingKind::UTF32,
        }
    }

    /// Returns the encoding named `kind`; `None` for a name the protocol does not define.
    pub fn from_kind(kind: &PositionEncodingKind) -> Option<Self> {
        Self::from_name(kind.as_str())
    }

    /// Returns the encoding of a wire name.
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        match name {
            "utf-8" => Some(Self::Utf8),
            "utf-16" => Some(Self::Utf16),
            "utf-32" => Some(Self::Utf32),
            _ => None,
        }
    }

    /// Returns how many units `c` takes.
    fn width(self, c: char) -> u32 {
        match self {
            // At most 4 and 2: the casts cannot truncate.
            Self::Utf8 => c.len_utf8() as u32,
            Self::Utf16 => c.len_utf16() as u32,
            Self::Utf32 => 1,
        }
    }
}

/// Returns the byte offset in `text` of `position`, counted in `encoding`'s units.
///
/// Out-of-range positions are taken as the specification says: a `character` past the end of its
/// line means the line's end (before its line break), a line past the last means the end of the
/// text. A position inside a character (between the two halves of a UTF-16 surrogate pair, or
/// inside a UTF-8 sequence) is taken as the end of that character. The result is always a
/// character boundary of `text`, so it can slice it.
///
/// ```
/// use jrpc_lsp::{PositionEncoding, offset_at};
/// use jrpc_lsp::lsp_types::Position;
///
/// let text = "a😀b\r\nnext";
/// assert_eq!(offset_at(text, Position::new(0, 3), PositionEncoding::Utf16), 5); // `b`
/// assert_eq!(offset_at(text, Position::new(0, 99), PositionEncoding::Utf16), 6); // the line's end
/// assert_eq!(offset_at(text, Position::new(1, 1), PositionEncoding::Utf16), 9); // `e`
/// ```
pub fn offset_at(text: &str, position: Position, encoding: PositionEncoding) -> usize {
    let Some(start) = line_start(text, position.line) else {
        return text.len();
    };
    let mut units = 0u32;
    for (at, c) in text[start..].char_indices() {
        if units >= position.character || c == '\n' || c == '\r' {
            return start + at;
        }
        units = units.saturating_add(encoding.width(c));
    }
    text.len()
}

/// Returns the position of the byte offset `offset` in `text`, counted in `encoding`'s units.
///
/// An offset past the end is the end; one inside a character is taken as that character's start;
/// one between the `\r` and the `\n` of a line break is the end of its line.
///
/// ```
/// use jrpc_lsp::{PositionEncoding, position_at};
/// use jrpc_lsp::lsp_types::Position;
///
/// let text = "a😀b\r\nnext";
/// assert_eq!(position_at(text, 5, PositionEncoding::Utf16), Position::new(0, 3));
/// assert_eq!(position_at(text, 5, PositionEncoding::Utf8), Position::new(0, 5));
/// assert_eq!(position_at(text, 9, PositionEncoding::Utf32), Position::new(1, 1));
/// ```
pub fn position_at(text: &str, offset: usize, encoding: PositionEncoding) -> Position {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let bytes = text.as_bytes();
    let (mut line, mut start, mut at) = (0u32, 0usize, 0usize);
    while at < offset {
        let end = match bytes[at] {
            b'\n' => at + 1,
            b'\r' if bytes.get(at + 1) == Some(&b'\n') => at + 2,
            b'\r' => at + 1,
            _ => {
                at += 1;
                continue;
            }
        };
        if end > offset {
            // Between `\r` and `\n`: still on the line the break ends.
            offset = at;
            break;
        }
        line = line.saturating_add(1);
        start = end;
        at = end;
    }
    let character = text[start..offset]
        .chars()
        .fold(0u32, |units, c| units.saturating_add(encoding.width(c)));
    Position { line, character }
}

/// Returns the byte offset where line `line` starts, or `None` past the last line.
fn line_start(text: &str, line: u32) -> Option<usize> {
    if line == 0 {
        return Some(0);
    }
    let bytes = text.as_bytes();
    let (mut seen, mut at) = (0u32, 0usize);
    while at < bytes.len() {
        match bytes[at] {
            b'\n' => at += 1,
            b'\r' if bytes.get(at + 1) == Some(&b'\n') => at += 2,
            b'\r' => at += 1,
            _ => {
                at += 1;
                continue;
            }
        }
        seen += 1;
        if seen == line {
            return Some(at);
        }
    }
    None
}

/// Holds the text of an open document and its version, and applies the client's edits
/// (`textDocument/didChange`, whole or ranged) in the connection's position encoding.
///
/// ```
/// use jrpc_lsp::{PositionEncoding, TextDocument};
/// use jrpc_lsp::lsp_types::{Position, Range, TextDocumentContentChangeEvent};
///
/// let mut doc = TextDocument::new("hello 😀 world", 1, PositionEncoding::Utf16);
/// let change = TextDocumentContentChangeEvent {
///     range: Some(Range::new(Position::new(0, 9), Position::new(0, 14))),
///     range_length: None,
///     text: "planet".into(),
/// };
/// doc.apply([change], 2);
/// assert_eq!((doc.text(), doc.version()), ("hello 😀 planet", 2));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextDocument {
    text: String,
    version: i32,
    encoding: PositionEncoding,
}

impl TextDocument {
    /// Returns a document holding `text` at `version`, whose positions count `encoding`'s units.
    pub fn new(text: impl Into<String>, version: i32, encoding: PositionEncoding) -> Self {
        Self {
            text: text.into(),
            version,
            encoding,
        }
    }

    /// Returns the document's text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Returns the version of the last edit applied (or the one it was opened at).
    pub fn version(&self) -> i32 {
        self.version
    }

    /// Returns the encoding its positions count.
    pub fn encoding(&self) -> PositionEncoding {
        self.encoding
    }

    /// Applies `changes` in order, and takes `version` as the document's: a change without a
    /// range replaces the whole text, one with a range replaces that range (out-of-range
    /// positions taken as [`offset_at`] says; an end before the start replaces nothing).
    pub fn apply(
        &mut self,
        changes: impl IntoIterator<Item = TextDocumentContentChangeEvent>,
        version: i32,
    ) {
        for change in changes {
            match change.range {
                None => self.text = change.text,
                Some(range) => {
                    let start = self.offset_at(range.start);
                    let end = self.offset_at(range.end).max(start);
                    self.text.replace_range(start..end, &change.text);
                }
            }
        }
        self.version = version;
    }

    /// Returns the byte offset of `position` (see [`offset_at`]).
    pub fn offset_at(&self, position: Position) -> usize {
        offset_at(&self.text, position, self.encoding)
    }

    /// Returns the position of the byte offset `offset` (see [`position_at`]).
    pub fn position_at(&self, offset: usize) -> Position {
        position_at(&self.text, offset, self.encoding)
    }

    /// Returns the LSP range of the bytes `bytes` (a diagnostic's span, say).
    pub fn range_of(&self, bytes: ByteRange<usize>) -> Range {
        Range::new(self.position_at(bytes.start), self.position_at(bytes.end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ENCODINGS: [PositionEncoding; 3] = [
        PositionEncoding::Utf8,
        PositionEncoding::Utf16,
        PositionEncoding::Utf32,
    ];

    fn at(line: u32, character: u32) -> Position {
        Position::new(line, character)
    }

    #[test]
    fn utf16_counts_surrogate_pairs_as_two_units() {
        let text = "héllo 😀 wörld\r\nnext";
        let utf16 = PositionEncoding::Utf16;
        assert_eq!(&text[offset_at(text, at(0, 9), utf16)..][..6], "wörld");
        assert_eq!(offset_at(text, at(0, 8), utf16), "héllo 😀".len());
        // Between the halves of 😀: the end of it.
        assert_eq!(offset_at(text, at(0, 7), utf16), "héllo 😀".len());
        assert_eq!(position_at(text, "héllo 😀 ".len(), utf16), at(0, 9));
        assert_eq!(
            position_at(text, "héllo 😀 ".len(), PositionEncoding::Utf32),
            at(0, 8)
        );
        assert_eq!(
            position_at(text, "héllo 😀 ".len(), PositionEncoding::Utf8),
            at(0, 12)
        );
    }

    #[test]
    fn line_breaks_are_lf_crlf_and_cr() {
        let text = "a\nb\r\nc\rd";
        for (line, letter) in (0..).zip(["a", "b", "c", "d"]) {
            let offset = offset_at(text, at(line, 0), PositionEncoding::Utf16);
            assert_eq!(&text[offset..offset + 1], letter);
            assert_eq!(
                position_at(text, offset, PositionEncoding::Utf16),
                at(line, 0)
            );
        }
        // Past the end of a line: before its break; past the last line: the end.
        assert_eq!(offset_at(text, at(1, 7), PositionEncoding::Utf16), 3);
        assert_eq!(
            offset_at(text, at(9, 0), PositionEncoding::Utf16),
            text.len()
        );
        // Between `\r` and `\n`: the end of line 1.
        assert_eq!(position_at(text, 4, PositionEncoding::Utf16), at(1, 1));
        assert_eq!(position_at(text, 99, PositionEncoding::Utf16), at(3, 1));
    }

    #[test]
    fn a_ranged_edit_replaces_its_range_and_an_empty_text_is_one_line() {
        let mut doc = TextDocument::new("", 0, PositionEncoding::Utf16);
        assert_eq!(doc.position_at(0), at(0, 0));
        doc.apply(
            [TextDocumentContentChangeEvent {
                range: None,
                range_length: None,
                text: "one\ntwo".into(),
            }],
            1,
        );
        let reversed = TextDocumentContentChangeEvent {
            range: Some(Range::new(at(1, 2), at(0, 1))),
            range_length: None,
            text: "X".into(),
        };
        doc.apply([reversed], 2);
        assert_eq!(
            doc.text(),
            "one\ntwXo",
            "an end before the start inserts at the start"
        );
        assert_eq!(doc.range_of(4..7), Range::new(at(1, 0), at(1, 3)));
    }

    #[test]
    fn negotiation_prefers_utf8_and_falls_back_to_utf16() {
        let mut params = InitializeParams::default();
        assert_eq!(
            PositionEncoding::negotiate(&params),
            PositionEncoding::Utf16
        );
        params.capabilities.general = Some(lsp_types::GeneralClientCapabilities {
            position_encodings: Some(vec![
                PositionEncodingKind::UTF16,
                PositionEncodingKind::UTF8,
            ]),
            ..Default::default()
        });
        assert_eq!(PositionEncoding::negotiate(&params), PositionEncoding::Utf8);
        for encoding in ENCODINGS {
            assert_eq!(
                PositionEncoding::from_kind(&encoding.kind()),
                Some(encoding)
            );
        }
    }

    /// Text with every kind of width and line break.
    fn text() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                Just("a"),
                Just("é"),
                Just("€"),
                Just("😀"),
                Just("\n"),
                Just("\r\n"),
                Just("\r"),
                Just(" ")
            ],
            0..40,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        /// Every character boundary that is not inside a CRLF survives the trip through a
        /// position, in every encoding.
        #[test]
        fn offsets_round_trip(text in text(), pick in any::<prop::sample::Index>()) {
            let bounds: Vec<usize> = (0..=text.len())
                .filter(|&i| text.is_char_boundary(i))
                .filter(|&i| !(text[..i].ends_with('\r') && text[i..].starts_with('\n')))
                .collect();
            let offset = bounds[pick.index(bounds.len())];
            for encoding in ENCODINGS {
                let position = position_at(&text, offset, encoding);
                prop_assert_eq!(offset_at(&text, position, encoding), offset);
            }
        }

        /// Checks that a position's UTF-16 `character` is the UTF-16 length of its line up to the
        /// offset, as an editor counts it (checked against `encode_utf16`, not the code under
        /// test).
        #[test]
        fn utf16_characters_are_what_an_editor_counts(text in text(), pick in any::<prop::sample::Index>()) {
            let offset = pick.index(text.len() + 1);
            let position = position_at(&text, offset, PositionEncoding::Utf16);
            let mut before = offset;
            while !text.is_char_boundary(before) {
                before -= 1;
            }
            if text[..before].ends_with('\r') && text[before..].starts_with('\n') {
                before -= 1;
            }
            let line_start = text[..before].rfind(['\n', '\r']).map_or(0, |i| i + 1);
            let lines = text[..line_start].matches('\n').count() + text[..line_start].matches('\r').count()
                - text[..line_start].matches("\r\n").count();
            prop_assert_eq!(position.line as usize, lines);
            prop_assert_eq!(position.character as usize, text[line_start..before].encode_utf16().count());
        }
    }
}
