//! The wire, in-process: every row of the wire-semantics table, the specification's examples,
//! properties over generated bodies, and service discovery, all through `Methods::handle`.

mod cancel;
mod conformance;
mod discovery;
mod handle;
mod layers;
mod props;
