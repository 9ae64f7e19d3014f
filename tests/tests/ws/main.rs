//! WebSocket: the server frame by frame, the client (and its reconnects), the `/ws` path of an `HttpServer`, memory
//! per connection, backpressure, graceful shutdown and topics.

mod backpressure;
mod cancel;
mod client;
mod feeds;
mod http;
mod layers;
mod memory;
mod reconnect;
mod server;
mod shutdown;
mod subscriptions;
mod topics;
