// Two methods may share a wire name under `#[cfg]`s that exclude each
// other; these two are both compiled in, which only the compiler can tell.
use jrpc_runtime::rpc_service;

#[rpc_service]
trait System {
    #[cfg(all())]
    #[rpc(name = "os")]
    fn os_a(&self) -> String;
    #[cfg(not(any()))]
    #[rpc(name = "os")]
    fn os_b(&self) -> String;
}

fn main() {}
