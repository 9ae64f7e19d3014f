//! MCP's Streamable HTTP transport, and topics across replicas through a real Redis.

mod cancel;
mod http;
mod layers;
mod redis_topics;
