//! The wire: ids, error objects, the one parsed form of an incoming message, and the writers of
//! everything that goes out.
//!
//! This is the bottom layer: it knows JSON-RPC's shapes and nothing about tables, connections or
//! transports. Every other layer reads messages through [`incoming`] and writes them through
//! [`write`]; none writes an envelope by hand.

mod error;
mod id;
pub(crate) mod incoming;
mod message;
pub(crate) mod write;

pub use error::{ErrorCode, RpcError};
pub use id::Id;
pub(crate) use id::RawId;
pub(crate) use incoming::{Incoming, Rejection, Request, id_of, is_batch};
pub use message::{Message, MessageError};
