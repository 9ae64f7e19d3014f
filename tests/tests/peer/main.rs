//! Two-way peers on byte streams: `Peer` over in-memory pipes, stdio with child processes, Unix
//! and TCP sockets, and topics on such connections.

mod bad_input;
mod calls;
mod cancel;
mod closing;
mod duplex;
mod layers;
mod limits;
mod notices;
mod ordering;
mod sessions;
mod socket;
mod stdio;
mod subscriptions;
mod timeouts;
mod told;
mod topics;
