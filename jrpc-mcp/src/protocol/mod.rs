//! Defines the protocol, below any transport: revisions and eras, what a request's `_meta` carries
//! and how it is checked, the wire types, base64.

pub(crate) mod base64;
pub(crate) mod content;
pub(crate) mod era;
pub(crate) mod prompt;
pub(crate) mod state;
pub(crate) mod types;
pub(crate) mod version;
