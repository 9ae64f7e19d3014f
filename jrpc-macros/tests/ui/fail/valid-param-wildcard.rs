use jrpc_runtime::rpc_service;

#[rpc_service]
trait Geometry {
    async fn scale(&self, _: f64) -> f64;
}

fn main() {}
