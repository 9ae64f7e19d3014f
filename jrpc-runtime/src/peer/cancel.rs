//! Speaks cancellation notices: the one a connection sends when a call is given up, and the one it
//! honours when the other side gives up a call.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::wire::write;
use crate::wire::{ErrorCode, Id, RpcError};

/// Says which cancellation notices a connection speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cancellation {
    /// None: a given-up call is forgotten silently, and no notice is honoured.
    #[default]
    Off,
    /// LSP: `$/cancelRequest {"id": ..}`; a cancelled incoming call is answered `-32800`.
    Lsp,
    /// MCP: `notifications/cancelled {"requestId": .., "reason": ..}`; a cancelled incoming call
    /// is not answered.
    Mcp,
    /// ACP: `$/cancel_request {"requestId": ..}`; a cancelled incoming call is answered `-32800`.
    Acp,
}

/// Holds the params of both notices: LSP's `id`, MCP's `requestId`.
#[derive(Deserialize)]
struct CancelParams<'a> {
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, rename = "requestId")]
    request_id: Option<&'a RawValue>,
}

impl Cancellation {
    /// Returns the method of the notice, `None` when off.
    pub fn method(self) -> Option<&'static str> {
        match self {
            Self::Off => None,
            Self::Lsp => Some("$/cancelRequest"),
            Self::Mcp => Some("notifications/cancelled"),
            Self::Acp => Some("$/cancel_request"),
        }
    }

    /// Returns whether a notification of `method` is this connection's cancellation notice.
    pub(super) fn is_notice(self, method: &str) -> bool {
        self.method() == Some(method)
    }

    /// Returns the id of the call a notice cancels, when its params name one (`id`, or MCP's
    /// `requestId`).
    pub fn target(params: Option<&RawValue>) -> Option<Id> {
        let params = serde_json::from_str::<CancelParams<'_>>(params?.get()).ok()?;
        Id::from_json(params.id.or(params.request_id)?.get())
    }

    /// Returns the notice that our call `id` was given up; `None` when off.
    pub(super) fn notice(self, id: i64) -> Option<String> {
        let method = self.method()?;
        let params = match self {
            Self::Mcp => format!(r#"{{"requestId":{id},"reason":"the caller gave up"}}"#),
            Self::Acp => format!(r#"{{"requestId":{id}}}"#),
            _ => format!(r#"{{"id":{id}}}"#),
        };
        let params = RawValue::from_string(params).ok()?;
        Some(write::call_text(None::<&Id>, method, Some(&params)))
    }

    /// Returns what a cancelled incoming call is answered: LSP's and ACP's `-32800`; nothing under
    /// MCP.
    pub(super) fn answer(self, id: &Id) -> Option<String> {
        matches!(self, Self::Lsp | Self::Acp).then(|| {
            let err = RpcError::new(ErrorCode::REQUEST_CANCELLED, "Request cancelled");
            write::text(write::error_bytes(&err, id))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_both_ways() {
        assert_eq!(
            Cancellation::Lsp.notice(3).as_deref(),
            Some(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":3}}"#)
        );
        assert_eq!(
            Cancellation::Mcp.notice(4).as_deref(),
            Some(
                r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4,"reason":"the caller gave up"}}"#
            )
        );
        assert_eq!(Cancellation::Off.notice(5), None);
        let params = RawValue::from_string(r#"{"requestId":"a"}"#.into()).unwrap();
        assert_eq!(Cancellation::target(Some(&params)), Some(Id::from("a")));
        assert!(Cancellation::Mcp.is_notice("notifications/cancelled"));
        assert!(!Cancellation::Off.is_notice("$/cancelRequest"));
    }
}
