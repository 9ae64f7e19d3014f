//! Gathers the limits: what bounds the memory a server and its connections hold, one home each.
//!
//! | piece | what it bounds |
//! | --- | --- |
//! | [`Limits`] | the settings every connection keeps, whatever its transport: the largest message, the watermark, the calls in flight, the queue, the write and call timeouts |
//! | [`ServerBudget`] | the bytes one server holds for all its clients (bodies being read, answers and pushes not yet written); [`Held`] is a share of it |
//! | the watermark | the bytes one connection holds for its peer (`max_buffered`): past half of it, the connection stops reading |
//! | [`WriteDeadline`] | a writer that fails once its peer has taken no byte for `write_timeout` |
//!
//! How they bound memory together, and how to size them for many connections:
//! [`guide::limits`](crate::guide::limits).

mod deadline;
mod server;
mod settings;
mod watermark;

pub use deadline::WriteDeadline;
pub use server::{Held, ServerBudget};
pub use settings::Limits;
pub(crate) use settings::limit_setters;
pub(crate) use watermark::{Room, Watermark};
