use jrpc_runtime::rpc_service;

/// A method's number, not its name.
const HOVER: u32 = 7;

#[rpc_service]
trait Editor {
    #[rpc(name = HOVER)]
    async fn hover(&self, line: u32) -> u32;
}

fn main() {}
