//! Defines the wire: ids, error objects, the one parsed form of an incoming message, and the
//! writers of everything that goes out.
//!
//! This is the bottom layer: it knows JSON-RPC's shapes and nothing about tables, connections or
//! transports. Every other layer reads messages through [`incoming`] and writes them through the
//! crate's writers; none writes an envelope by hand. A protocol built on the crate peeks at
//! bodies through [`incoming`] too.

mod error;
mod id;
pub mod incoming;
mod message;
pub(crate) mod write;

pub use error::{ErrorCode, RpcError};
pub use id::Id;
pub(crate) use id::RawId;
pub(crate) use incoming::{Incoming, Rejection, Request, id_of, is_batch};
pub use message::{Message, MessageError};

/// Returns the error answer to the call whose raw id is `id` (`null` without one), as the
/// crate's writers write it.
pub fn error_answer(err: &RpcError, id: Option<&serde_json::value::RawValue>) -> Vec<u8> {
    write::error_bytes(err, &id)
}
