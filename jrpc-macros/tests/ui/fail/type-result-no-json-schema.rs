use jrpc_runtime::rpc_service;

#[derive(serde::Serialize, serde::Deserialize)]
struct Point {
    x: f64,
    y: f64,
}

#[rpc_service(schema)]
trait Geometry {
    async fn origin(&self) -> Result<Point, jrpc_runtime::RpcError>;
}

fn main() {}
