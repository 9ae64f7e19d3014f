//! HTTP: the server as a client sees it, the client, SSE answers, idle keep-alive connections,
//! TLS, what `tracing` shows of requests, and peers that do not read.

mod client;
mod idle;
mod logging;
mod server;
mod slow_readers;
mod sse;
mod tls;
