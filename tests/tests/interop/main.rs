//! The examples as processes, as users run them, and driven by clients nobody here wrote (Node,
//! Python, curl): their command lines, output, exit status and topics are a contract.

mod acp;
mod browser;
mod calculator;
mod calculator_auth;
mod calculator_cancel;
mod calculator_topics;
mod chain;
mod conformance;
mod drain_exit;
mod jsonrpsee_subscriptions;
mod mcp_balanced;
mod mcp_replicas;
mod net;
mod stdio;
