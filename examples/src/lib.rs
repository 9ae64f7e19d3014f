//! Runnable examples of jrpc: see the `[[example]]` targets.
