// Lifetime parameters are allowed, but params cannot borrow for them.
use std::borrow::Cow;

use jrpc_runtime::rpc_service;

#[rpc_service]
trait Words {
    async fn count<'a>(&'a self, text: Cow<'a, str>) -> usize;
}

fn main() {}
