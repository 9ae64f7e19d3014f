use jrpc_runtime::rpc_service;

#[rpc_service]
trait Store {
    async fn put<T: serde::de::DeserializeOwned>(&self, value: T);
}

fn main() {}
