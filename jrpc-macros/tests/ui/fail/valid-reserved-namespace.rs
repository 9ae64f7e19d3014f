use jrpc_runtime::rpc_service;

#[rpc_service(namespace = "rpc")]
trait Discovery {
    async fn discover(&self) -> Vec<String>;
    async fn describe(&self, method: String) -> String;
}

fn main() {}
