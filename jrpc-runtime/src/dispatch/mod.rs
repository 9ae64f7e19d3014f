//! Dispatches requests: the method table, params decoding, the context handlers see, batches, and
//! discovery (each method's description, the OpenRPC document, `rpc.discover`).
//!
//! [`Methods`] takes a body (or a request the layer above already read), finds the handler,
//! decodes its params into Rust types, runs it under the table's deadline with panics contained,
//! and writes the answer with the [`wire`](crate::wire) writers. It knows nothing of
//! connections: every transport above hands it text and a [`Context`].

mod batch;
mod cancel;
mod context;
mod describe;
mod extensions;
mod handle;
mod in_process;
mod layer;
mod limit;
mod methods;
mod notifications;
mod observe;
mod openrpc;
#[cfg(feature = "otel")]
mod otel;
mod params;
mod schema;
mod stage;
mod trace;

pub use context::Context;
#[allow(
    unused_imports,
    reason = "the transports that reuse contexts import it"
)]
pub(crate) use context::ContextRoom;
pub use describe::{MethodDoc, ParamDoc, ParamStructure, ServiceInfo, SubscriptionDoc};
pub(crate) use handle::Handed;
pub(crate) use handle::{FirstPoll, Started};
pub use layer::{Answer, BoxError, Call, CallService};
pub(crate) use limit::too_large_answer;
pub use methods::{Batches, IntoRpcError, Methods, NullParams, RpcResult};
pub use notifications::Notifications;
pub use observe::{ErrorReport, Observation, Outcome};
pub use params::{FromParams, Params, Whole};
pub use schema::SchemaDoc;
pub use trace::{SpanId, TraceContext, TraceId};
