use jrpc_runtime::rpc_service;

#[rpc_service]
trait Events {
    #[notification]
    async fn update(&self, values: Vec<i64>) -> bool;
}

fn main() {}
