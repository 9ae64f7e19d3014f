// One error, where `into_methods` is called; none where the `impl` block
// defines it.
use std::cell::Cell;

use jrpc_runtime::rpc_service;

struct Counter {
    count: Cell<u32>,
}

#[rpc_service]
impl Counter {
    fn count(&self) -> u32 {
        self.count.get()
    }
}

fn main() {
    let _ = Counter { count: Cell::new(0) }.into_methods();
}
