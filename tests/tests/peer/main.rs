//! Two-way peers on byte streams: `Peer` over in-memory pipes, stdio with child processes, Unix
//! and TCP sockets, and topics on such connections.

mod cancel;
mod layers;
mod peer;
mod socket;
mod stdio;
mod topics;
