use jrpc_runtime::rpc_service;

#[rpc_service]
trait Store<T> {
    async fn get(&self, key: String) -> Option<T>;
}

fn main() {}
