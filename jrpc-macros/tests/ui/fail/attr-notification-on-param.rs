use jrpc_runtime::rpc_service;

#[rpc_service]
trait Events {
    async fn ping(&self, #[notification] count: u32);
}

fn main() {}
