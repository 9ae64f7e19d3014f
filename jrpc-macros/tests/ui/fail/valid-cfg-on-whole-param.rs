// `params = whole` decodes into its one parameter in every build.
use jrpc_runtime::rpc_service;

#[rpc_service]
trait Store {
    #[rpc(params = whole)]
    async fn put(&self, #[cfg(unix)] values: Vec<u8>);
}

fn main() {}
