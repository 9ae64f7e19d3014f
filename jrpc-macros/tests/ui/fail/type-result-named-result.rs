// A return type named `Result` that is not `core::result::Result`: the stub
// would read `u8` as its success type.
use jrpc_runtime::rpc_service;

mod wrapped {
    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct Result<T>(pub T);
}

#[rpc_service]
trait Calculator {
    fn five(&self) -> wrapped::Result<u8>;
}

fn main() {}
