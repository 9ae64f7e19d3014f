use jrpc_runtime::rpc_service;

struct Registry;

#[rpc_service]
impl Registry {
    fn into_methods(&self) -> Vec<String> {
        Vec::new()
    }
}

fn main() {}
