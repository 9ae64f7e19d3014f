use jrpc_runtime::rpc_service;

#[derive(serde::Serialize, serde::Deserialize)]
struct Point {
    x: f64,
    y: f64,
}

#[rpc_service(schema)]
trait Geometry {
    async fn length(&self, point: Point) -> f64;
}

fn main() {}
