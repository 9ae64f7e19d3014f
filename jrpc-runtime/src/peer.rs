//! The two-way connection: both sides call.

/// A handle on an open connection, to call or notify the other side.
#[derive(Clone, Debug)]
pub struct Peer {
    _private: (),
}
