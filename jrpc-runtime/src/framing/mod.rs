//! Message framing on byte streams.
