//! `#[rpc_service]`: what it refuses at compile time (`ui`), and what the code it generates does on
//! the wire and as a client.

mod calculator;
mod decisions;
mod options;
mod stub_client;
mod ui;
