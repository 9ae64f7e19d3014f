//! HTTP: the server as a client sees it, the client, SSE answers, idle keep-alive connections,
//! TLS, what `tracing` shows of requests, peers that do not read, and the limits at their
//! defaults on every transport.

mod cancel;
mod client;
mod context;
mod idle;
mod layers;
mod limits;
mod logging;
#[cfg(feature = "otel")]
mod otel;
mod server;
mod slow_readers;
mod sse;
mod tls;
mod trace;
mod web;
