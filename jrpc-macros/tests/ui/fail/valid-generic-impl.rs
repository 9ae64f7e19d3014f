use jrpc_runtime::rpc_service;

struct Store<T>(Vec<T>);

#[rpc_service]
impl<T: Clone + Send + Sync + 'static> Store<T> {
    async fn len(&self) -> usize {
        self.0.len()
    }
}

fn main() {}
