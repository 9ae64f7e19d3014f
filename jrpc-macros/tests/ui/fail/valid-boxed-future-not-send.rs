use std::future::Future;
use std::pin::Pin;

use jrpc_runtime::rpc_service;

#[rpc_service]
trait Counter {
    fn count(&self) -> Pin<Box<dyn Future<Output = usize>>>;
}

fn main() {}
