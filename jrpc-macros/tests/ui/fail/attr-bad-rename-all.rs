use jrpc_runtime::rpc_service;

#[rpc_service(rename_all = "camelcase")]
trait Calculator {
    async fn add_all(&self, numbers: Vec<i64>) -> i64;
}

fn main() {}
