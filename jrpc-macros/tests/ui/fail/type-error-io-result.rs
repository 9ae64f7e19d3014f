// `io::Result<T>` names no error type: the error is reported at the return
// type.
use jrpc_runtime::rpc_service;

#[rpc_service]
trait Files {
    async fn read(&self, path: String) -> std::io::Result<String>;
}

fn main() {}
