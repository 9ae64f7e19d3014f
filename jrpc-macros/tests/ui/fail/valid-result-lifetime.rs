use std::borrow::Cow;

use jrpc_runtime::rpc_service;

#[rpc_service]
trait Info {
    fn name<'a>(&'a self) -> Cow<'a, str>;
}

fn main() {}
