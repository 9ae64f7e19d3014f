use jrpc_runtime::rpc_service;

#[rpc_service]
#[notification]
trait Events {
    async fn ping(&self);
}

fn main() {}
