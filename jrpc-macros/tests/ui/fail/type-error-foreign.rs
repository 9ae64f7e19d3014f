// A foreign error type: the note says how to convert it, not to write an
// impl the orphan rule forbids.
use jrpc_runtime::rpc_service;

#[rpc_service]
trait Files {
    async fn read(&self, path: String) -> Result<String, std::io::Error>;
}

fn main() {}
