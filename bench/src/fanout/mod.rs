//! What the fan-out benchmark (`src/bin/fanout.rs`) and the instruction gate's fan-out case
//! (`bench/gate/`, by `#[path]`) share: the header published, the floor's server and jrpc's
//! service. jsonrpsee's is the benchmark's alone.

pub mod floor;
pub mod header;
pub mod jrpc;
