//! MCP: its data layer, the Streamable HTTP transport in both eras, and topics across replicas
//! through a real Redis.

mod ask;
mod cancel;
mod data;
mod http;
mod layers;
mod legacy;
mod listen;
mod modern;
mod redis_topics;
mod replicas;
mod served;
mod skills;
mod tasks;
