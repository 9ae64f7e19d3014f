use jrpc_runtime::rpc_service;

#[rpc_service]
trait Events {
    #[cfg_attr(all(), allow(unused), notification)]
    async fn ping(&self);
}

fn main() {}
