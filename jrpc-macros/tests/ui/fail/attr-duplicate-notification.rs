use jrpc_runtime::rpc_service;

#[rpc_service]
trait Events {
    #[notification]
    #[notification]
    async fn ping(&self);
}

fn main() {}
