use jrpc_runtime::rpc_service;

struct Geometry;

#[rpc_service]
impl Geometry {
    async fn length(&self, (x, y): (f64, f64)) -> f64 {
        x.hypot(y)
    }
}

fn main() {}
