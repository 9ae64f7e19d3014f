// Two derives are missing: one error for each, both at the type, each
// naming what to derive (none of them raw).
use jrpc_runtime::rpc_service;

struct Point {
    x: f64,
    y: f64,
}

#[rpc_service]
trait Geometry {
    async fn length(&self, point: Point) -> f64;
}

fn main() {}
