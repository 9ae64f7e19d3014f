//! What becomes of a finished call's answer before it is queued: counted in the connection's
//! budget, and replaced by an error answer to its call when it is larger than
//! `max_message_size`.

use super::handle::Shared;
use crate::wire::{ErrorCode, Id, RpcError, write};

/// Counts a finished call's answer (`method`, `None` for a batch) in the budget: an answer is
/// never refused for room (past the watermark, reading pauses instead). One larger than
/// `max_message_size` is replaced by an error answer to its call, which keeps its id.
pub(crate) fn admit(
    shared: &Shared,
    text: Option<String>,
    method: Option<&str>,
    id: Option<&Id>,
) -> Result<Option<String>, ()> {
    let Some(mut text) = text else {
        return Ok(None);
    };
    if text.len() > shared.max_message_size {
        text = too_large(text.len(), shared.max_message_size, method, id);
    }
    shared.budget.force(text.len());
    Ok(Some(text))
}

/// The error answer that replaces an answer of `bytes`, larger than `limit`: logged at WARN
/// with the setting to raise.
#[cold]
pub(crate) fn too_large(
    bytes: usize,
    limit: usize,
    method: Option<&str>,
    id: Option<&Id>,
) -> String {
    tracing::warn!(
        method,
        bytes,
        limit,
        "answer too large: replaced by an error answer (raise `max_message_size` to send it)"
    );
    let why = format!(
        "the answer of {bytes} bytes exceeds the limit of {limit} bytes (`max_message_size`)"
    );
    let err = RpcError::new(ErrorCode::RESPONSE_TOO_LARGE, "Response too large").with_data(&why);
    write::text(write::error_bytes(&err, &id))
}
