// The stub decodes into an owned value; without a stub
// (`client = false`, or an `impl` block) `&'static str` is fine.
use jrpc_runtime::rpc_service;

#[rpc_service]
trait Info {
    fn version(&self) -> &'static str;
}

fn main() {}
