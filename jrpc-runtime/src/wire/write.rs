//! Writes everything that goes out: results, errors, calls, notifications and batches.
//! Nothing else in the crate writes a JSON-RPC envelope.
//!
//! Writers append to a `Vec<u8>`: writing into a `Vec` cannot fail, and an [`RpcError`], an
//! [`Id`] or a method name always encodes, so none of them returns an error.

use serde_json::value::RawValue;

use super::error::RpcError;
use super::id::{Id, RawId};

/// Holds the first bytes of every successful answer: a handler's result is written right after
/// them, then [`end_result`] closes the answer.
pub(crate) const RESULT_PREFIX: &[u8] = br#"{"jsonrpc":"2.0","result":"#;

/// Writes an id as it goes out: an [`Id`], or the raw text of an incoming one, echoed byte for
/// byte.
pub(crate) trait WriteId {
    /// Appends the id's JSON text.
    fn write_id(&self, out: &mut Vec<u8>);
}

impl WriteId for Id {
    #[inline]
    fn write_id(&self, out: &mut Vec<u8>) {
        self.write_json(out);
    }
}

impl WriteId for RawValue {
    #[inline]
    fn write_id(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.get().as_bytes());
    }
}

impl WriteId for i64 {
    #[inline]
    fn write_id(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(itoa::Buffer::new().format(*self).as_bytes());
    }
}

impl WriteId for RawId<'_> {
    #[inline]
    fn write_id(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.text().as_bytes());
    }
}

/// `None` is the `null` id: the answer to something whose id could not be read.
impl<T: WriteId + ?Sized> WriteId for Option<&T> {
    #[inline]
    fn write_id(&self, out: &mut Vec<u8>) {
        match self {
            Some(id) => id.write_id(out),
            None => out.extend_from_slice(b"null"),
        }
    }
}

/// Closes an answer begun with [`RESULT_PREFIX`] and its result.
#[inline]
pub(crate) fn end_result(out: &mut Vec<u8>, id: &(impl WriteId + ?Sized)) {
    out.extend_from_slice(br#","id":"#);
    id.write_id(out);
    out.push(b'}');
}

/// Writes a successful answer whose result is already JSON text.
pub(crate) fn response(out: &mut Vec<u8>, result: &RawValue, id: &(impl WriteId + ?Sized)) {
    out.extend_from_slice(RESULT_PREFIX);
    out.extend_from_slice(result.get().as_bytes());
    end_result(out, id);
}

/// Writes a failed answer.
pub(crate) fn error(out: &mut Vec<u8>, err: &RpcError, id: &(impl WriteId + ?Sized)) {
    out.extend_from_slice(br#"{"jsonrpc":"2.0","error":"#);
    let _ = serde_json::to_writer(&mut *out, err);
    end_result(out, id);
}

/// Writes a failed answer, as its own buffer.
pub(crate) fn error_bytes(err: &RpcError, id: &(impl WriteId + ?Sized)) -> Vec<u8> {
    let mut out = Vec::with_capacity(96);
    error(&mut out, err, id);
    out
}

/// Writes a call (with `id`) or a notification (without).
pub(crate) fn call(
    out: &mut Vec<u8>,
    id: Option<&(impl WriteId + ?Sized)>,
    method: &str,
    params: Option<&RawValue>,
) {
    out.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
    let _ = serde_json::to_writer(&mut *out, method);
    if let Some(params) = params {
        out.extend_from_slice(br#","params":"#);
        out.extend_from_slice(params.get().as_bytes());
    }
    if let Some(id) = id {
        out.extend_from_slice(br#","id":"#);
        id.write_id(out);
    }
    out.push(b'}');
}

/// Writes the text of a call (with `id`) or a notification (without), from borrowed parts: what
/// clients send.
pub(crate) fn call_text(
    id: Option<&(impl WriteId + ?Sized)>,
    method: &str,
    params: Option<&RawValue>,
) -> String {
    let mut out = Vec::with_capacity(48 + method.len() + params.map_or(0, |p| p.get().len()));
    call(&mut out, id, method, params);
    text(out)
}

/// Writes a batch of the given elements, in order; `None` when there are none (a batch of
/// notifications is answered with nothing at all).
pub(crate) fn batch<I, E>(elements: I) -> Option<Vec<u8>>
where
    I: IntoIterator<Item = E>,
    I::IntoIter: Clone,
    E: AsRef<[u8]>,
{
    let elements = elements.into_iter();
    // One allocation: the brackets and commas take one byte per element, plus the closing one.
    let len: usize = elements.clone().map(|e| e.as_ref().len() + 1).sum();
    if len == 0 {
        return None;
    }
    let mut out = Vec::with_capacity(len + 1);
    for element in elements {
        batch_element(&mut out, element.as_ref());
    }
    end_batch(out)
}

/// Appends an element to a batch begun in `out` (empty before the first).
#[inline]
pub(crate) fn batch_element(out: &mut Vec<u8>, element: &[u8]) {
    open_element(out);
    out.extend_from_slice(element);
}

/// Opens a batch's next element in `out` (its `[` or `,`), for the element to be written after
/// it; the length before, to take it back to when no element follows.
#[inline]
pub(crate) fn open_element(out: &mut Vec<u8>) -> usize {
    let mark = out.len();
    out.push(if mark == 0 { b'[' } else { b',' });
    mark
}

/// Closes a batch written with [`batch_element`]; `None` when it has no element.
#[inline]
pub(crate) fn end_batch(mut out: Vec<u8>) -> Option<Vec<u8>> {
    if out.is_empty() {
        return None;
    }
    out.push(b']');
    Some(out)
}

/// Returns the text of what a writer wrote. Writers only ever append UTF-8 (JSON from serde_json,
/// and text taken from `&str`s), so nothing is lost here.
#[inline]
pub(crate) fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_each_kind() {
        let raw = |text: &str| RawValue::from_string(text.to_owned()).unwrap();
        let mut out = Vec::new();
        response(&mut out, &raw("[1]"), &Id::from("a"));
        assert_eq!(text(out), r#"{"jsonrpc":"2.0","result":[1],"id":"a"}"#);
        let err = error_bytes(&RpcError::internal(), &None::<&Id>);
        assert_eq!(
            text(err),
            r#"{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error"},"id":null}"#
        );
        assert_eq!(
            call_text(Some(&7_i64), "m", Some(&raw("{}"))),
            r#"{"jsonrpc":"2.0","method":"m","params":{},"id":7}"#
        );
        assert_eq!(
            call_text(None::<&Id>, "n\"", None),
            r#"{"jsonrpc":"2.0","method":"n\""}"#
        );
        assert_eq!(batch(["1", "2"]).map(text).as_deref(), Some("[1,2]"));
        assert_eq!(batch(Vec::<Vec<u8>>::new()), None);
    }
}
