use std::rc::Rc;

use jrpc_runtime::rpc_service;

#[rpc_service]
trait Counter {
    async fn count(&self) -> usize;
}

struct Impl;

impl Counter for Impl {
    async fn count(&self) -> usize {
        let shared = Rc::new(1);
        std::future::ready(()).await;
        *shared
    }
}

fn main() {}
