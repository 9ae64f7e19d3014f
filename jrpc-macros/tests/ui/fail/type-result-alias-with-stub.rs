// Which answers are errors is decided by the type; the stub, though, must
// name the success type, which an alias hides.
use jrpc_runtime::{RpcError, rpc_service};

type Answer = Result<u8, RpcError>;

#[rpc_service]
trait Calculator {
    fn five(&self) -> Answer;
}

fn main() {}
