// Only the runtime's context is injected; a type of one's own is taken by
// value and read from params.
use jrpc_runtime::rpc_service;

#[derive(serde::Deserialize)]
struct Context {
    user: String,
}

struct Session;

#[rpc_service]
impl Session {
    fn whoami(&self, ctx: &Context) -> String {
        ctx.user.clone()
    }
}

fn main() {}
