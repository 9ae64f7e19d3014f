//! Lists what a handler does for its LSP client through its [`Context`]: the methods of
//! [`LspContext`], which `Context` implements.

use jrpc_runtime::Context;
use lsp_types::ProgressToken;

use crate::client::Client;
use crate::progress::WorkDone;
use crate::session::Session;
use crate::text::PositionEncoding;

/// Reaches the editor from a handler's [`Context`]: its [`Client`], the position encoding the
/// connection speaks, and work-done progress. Bring it into scope with
/// `use jrpc_lsp::LspContext as _;`.
///
/// ```
/// use jrpc_lsp::LspContext as _;
/// use jrpc_lsp::lsp_types::{MessageType, Position};
/// use jrpc_runtime::Context;
///
/// async fn note(ctx: &Context, text: &str, position: Position) {
///     let offset = jrpc_lsp::offset_at(text, position, ctx.position_encoding());
///     let _ = ctx.client().log_message(MessageType::LOG, format!("byte {offset}")).await;
/// }
/// ```
pub trait LspContext {
    /// Returns the client of the connection the request came on (one whose sends fail outside
    /// a connection).
    fn client(&self) -> Client;

    /// Returns the position encoding of the connection: the one `initialize`'s result named
    /// (`capabilities.positionEncoding`), UTF-16 when it named none, and outside a connection.
    fn position_encoding(&self) -> PositionEncoding;

    /// Returns a work-done progress titled `title` for this request, on `token` (see
    /// [`WorkDone`]).
    fn work_done(&self, token: Option<ProgressToken>, title: impl Into<String>) -> WorkDone<'_>;
}

impl LspContext for Context {
    fn client(&self) -> Client {
        Client::of(self)
    }

    fn position_encoding(&self) -> PositionEncoding {
        Session::of(self).map_or_else(PositionEncoding::default, |session| session.encoding())
    }

    fn work_done(&self, token: Option<ProgressToken>, title: impl Into<String>) -> WorkDone<'_> {
        WorkDone::new(self, token, title)
    }
}
