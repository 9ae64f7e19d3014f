//! ACP agents on an in-memory connection, the test playing the client line by line: what goes
//! out, in which order, and what it answers. Time is virtual (`start_paused`): the example's
//! 100 ms between chunks pass at once, and are measured exactly.

mod example_agent;
mod sessions;
mod test_agent;
mod wire;
