// rustc reports the syntax error; the item is emitted without the helper
// attributes, so "cannot find attribute `rpc`" is not added.
use jrpc_runtime::rpc_service;

#[rpc_service]
trait Calculator {
    #[rpc(name = "sum")]
    fn add(&self, a: i64, b: ) -> i64;
}

fn main() {}
