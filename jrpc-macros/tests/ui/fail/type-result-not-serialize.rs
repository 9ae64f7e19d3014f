use jrpc_runtime::rpc_service;

#[derive(serde::Deserialize)]
struct Point {
    x: f64,
    y: f64,
}

#[rpc_service]
trait Geometry {
    async fn origin(&self) -> Point;
}

fn main() {}
