use std::rc::Rc;

use jrpc_runtime::rpc_service;

struct Counter;

#[rpc_service]
impl Counter {
    async fn count(&self) -> usize {
        let shared = Rc::new(1);
        std::future::ready(()).await;
        *shared
    }
}

fn main() {}
