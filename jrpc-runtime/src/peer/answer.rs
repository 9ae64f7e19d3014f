//! Decides what becomes of a finished call's answer before it is queued: counted in the
//! connection's budget, and replaced by an error answer to its call when it is larger than
//! `max_message_size`.

use super::handle::Shared;
use crate::dispatch::too_large_answer;
use crate::wire::{Id, write};

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
        let answer = too_large_answer(method, id, text.len(), shared.max_message_size);
        text = write::text(answer);
    }
    shared.budget.force(text.len());
    Ok(Some(text))
}
