// The macro runs before `cfg` is evaluated, so it cannot honour `#[rpc]`
// inside `cfg_attr`: one error, and no "cannot find attribute `rpc`".
use jrpc_runtime::rpc_service;

#[rpc_service]
trait Calculator {
    #[cfg_attr(feature = "camel", rpc(name = "addNumbers"))]
    async fn add(&self, a: i64, b: i64) -> i64;
}

fn main() {}
