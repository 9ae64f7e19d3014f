use jrpc_runtime::rpc_service;

struct Printer;

#[rpc_service]
impl Printer {
    fn print(&self, value: impl serde::de::DeserializeOwned) {
        let _ = value;
    }
}

fn main() {}
