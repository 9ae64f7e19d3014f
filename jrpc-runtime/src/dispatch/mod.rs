//! Dispatch: the method table, params decoding, the context handlers see, and batches.
//!
//! [`Methods`] takes a body (or a request the layer above already read), finds the handler,
//! decodes its params into Rust types, runs it under the table's deadline with panics contained,
//! and writes the answer with the [`wire`](crate::wire) writers. It knows nothing of
//! connections: every transport above hands it text and a [`Context`].

mod context;
mod extensions;
mod handle;
mod in_process;
mod methods;
mod observe;
mod params;

pub use context::{Context, Transport};
pub use methods::{Batches, Methods};
pub use observe::{ErrorReport, Observation, Outcome};
pub use params::{FromParams, Params, Whole};
