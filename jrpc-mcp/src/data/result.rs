//! Writes what results carry besides their body, by era: the modern era's `resultType`, caching
//! hints and the server's name in `_meta`, written as fields beside the body rather than by
//! rewriting JSON; and the pages of a list, with their cursors.

use std::sync::Arc;
use std::time::Duration;

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use super::Core;
use super::request::{InputRequired, McpRequest};
use crate::protocol::base64;
use crate::protocol::types::CacheScope;
use jrpc_runtime::wire::RpcError;

/// Holds a cacheable result's hints: how long it stays fresh, and who may reuse it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hint {
    pub(crate) ttl_ms: u64,
    pub(crate) scope: CacheScope,
}

impl Hint {
    pub(crate) fn new(ttl: Duration, scope: CacheScope) -> Self {
        Self {
            ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
            scope,
        }
    }
}

/// Says which cacheable results a hint set with [`McpBuilder::cache`](super::McpBuilder::cache)
/// applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Cached {
    /// `server/discover` (default: `ttlMs` 0, `public`).
    Discover,
    /// `tools/list`, `prompts/list`, `resources/list`, `resources/templates/list` (default:
    /// `ttlMs` 0, `public`).
    Lists,
    /// `resources/read` (default: `ttlMs` 0, `private`).
    Reads,
}

/// Holds the hints of each kind of cacheable result.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Hints {
    pub(crate) discover: Hint,
    pub(crate) lists: Hint,
    pub(crate) reads: Hint,
}

impl Default for Hints {
    /// Immediately stale everywhere (`ttlMs` 0): a client never serves a list it has not
    /// fetched since it last changed, whether or not it listens for changes.
    fn default() -> Self {
        Self {
            discover: Hint::new(Duration::ZERO, CacheScope::Public),
            lists: Hint::new(Duration::ZERO, CacheScope::Public),
            reads: Hint::new(Duration::ZERO, CacheScope::Private),
        }
    }
}

impl Hints {
    pub(crate) fn set(&mut self, kind: Cached, hint: Hint) {
        match kind {
            Cached::Discover => self.discover = hint,
            Cached::Lists => self.lists = hint,
            Cached::Reads => self.reads = hint,
        }
    }
}

/// Writes a result: its body's members, then those its era adds.
#[derive(Serialize)]
pub(crate) struct Stamped<T> {
    #[serde(flatten)]
    body: T,
    #[serde(rename = "resultType", skip_serializing_if = "Option::is_none")]
    result_type: Option<&'static str>,
    #[serde(rename = "ttlMs", skip_serializing_if = "Option::is_none")]
    ttl_ms: Option<u64>,
    #[serde(rename = "cacheScope", skip_serializing_if = "Option::is_none")]
    cache_scope: Option<CacheScope>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<ServerMeta>,
}

impl<T> Stamped<T> {
    /// Returns `body` alone: a legacy result.
    pub(crate) fn plain(body: T) -> Self {
        Self {
            body,
            result_type: None,
            ttl_ms: None,
            cache_scope: None,
            meta: None,
        }
    }

    /// Returns `body` complete, as the modern era writes it.
    pub(crate) fn modern(body: T, core: &Arc<Core>, hint: Option<Hint>) -> Self {
        Self::of_type("complete", body, core, hint)
    }

    /// Returns `body` with `resultType` `kind` (hints only on a complete result).
    pub(crate) fn of_type(
        kind: &'static str,
        body: T,
        core: &Arc<Core>,
        hint: Option<Hint>,
    ) -> Self {
        Self {
            body,
            result_type: Some(kind),
            ttl_ms: hint.map(|hint| hint.ttl_ms),
            cache_scope: hint.map(|hint| hint.scope),
            meta: Some(ServerMeta(Arc::clone(core))),
        }
    }
}

/// Holds `{"io.modelcontextprotocol/serverInfo": {name, version}}`, written once at build.
pub(crate) struct ServerMeta(Arc<Core>);

impl Serialize for ServerMeta {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.server_meta.serialize(serializer)
    }
}

/// Holds a page of a list: its items, and the cursor of the next page when there is one.
pub(crate) struct Page<'a> {
    pub(crate) items: &'a [Box<RawValue>],
    pub(crate) next: Option<String>,
}

/// Returns the page of `items` a `cursor` names (the first without one), `size` items long.
///
/// # Errors
///
/// `-32602` for a cursor this server did not write.
pub(crate) fn page<'a>(
    items: &'a [Box<RawValue>],
    cursor: Option<&str>,
    size: usize,
) -> Result<Page<'a>, RpcError> {
    let start = match cursor {
        None => 0,
        Some(cursor) => base64::decode_url(cursor)
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .and_then(|text| text.parse::<usize>().ok())
            .filter(|start| *start <= items.len())
            .ok_or_else(|| RpcError::invalid_params("invalid cursor"))?,
    };
    let end = start.saturating_add(size).min(items.len());
    let next = (end < items.len()).then(|| base64::encode_url(end.to_string().as_bytes()));
    Ok(Page {
        items: &items[start..end],
        next,
    })
}

/// Holds a list's body: `{"<name>": [items], "nextCursor"?}` (its items copied out of the list,
/// which the answer may outlive).
pub(crate) struct Listed {
    pub(crate) name: &'static str,
    pub(crate) items: Vec<Box<RawValue>>,
    pub(crate) next: Option<String>,
}

impl Serialize for Listed {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry(self.name, &self.items)?;
        if let Some(next) = &self.next {
            map.serialize_entry("nextCursor", next)?;
        }
        map.end()
    }
}

/// Holds a result that may ask first: the result, or the questions left for the client.
pub(crate) enum Turn<T> {
    Done(Stamped<T>),
    Input(Stamped<InputRequired>),
}

impl<T: Serialize> Serialize for Turn<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Done(done) => done.serialize(serializer),
            Self::Input(input) => input.serialize(serializer),
        }
    }
}

impl<T> Turn<T> {
    /// Returns what a handler that may ask gives: `body` (once its `failed` run is done), or the
    /// questions it left.
    ///
    /// # Errors
    ///
    /// `-32021` for a capability a question needed, when the handler failed for want of it.
    pub(crate) fn of(
        req: &McpRequest,
        failed: bool,
        body: impl FnOnce() -> Result<T, RpcError>,
        hint: Option<Hint>,
    ) -> Result<Self, RpcError>
    where
        T: Serialize,
    {
        match req.close_asks(failed)? {
            Some(input) => Ok(Self::Input(Stamped::of_type(
                "input_required",
                input,
                &req.inner.core,
                None,
            ))),
            None => Ok(Self::Done(req.stamp(body()?, hint))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_paged_by_cursor() {
        let items: Vec<Box<RawValue>> = (0..5)
            .map(|n| RawValue::from_string(n.to_string()).unwrap())
            .collect();
        let first = page(&items, None, 2).unwrap();
        assert_eq!(first.items.len(), 2);
        let second = page(&items, first.next.as_deref(), 2).unwrap();
        assert_eq!(second.items[0].get(), "2");
        let last = page(&items, second.next.as_deref(), 2).unwrap();
        assert_eq!((last.items.len(), last.next), (1, None));
        assert!(page(&items, Some("nope!"), 2).is_err());
        assert!(page(&items, Some(&base64::encode_url(b"9")), 2).is_err());
    }
}
