//! `#[rpc_service]`: what the code it generates does on the wire and as a client (what it
//! refuses at compile time is pinned in `jrpc-macros/tests/ui`).

mod bad_params;
mod calculator;
mod decisions;
mod names;
mod options;
mod stub_client;
mod subscriptions;
