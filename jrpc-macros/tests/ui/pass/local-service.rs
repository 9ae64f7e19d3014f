//! A service defined inside a function: the stub's module and its import
//! work in a block as in a module.
#![deny(warnings)]

fn main() {
    use jrpc_runtime::{Methods, rpc_service};

    /// A local service.
    #[rpc_service]
    trait Local {
        /// Adds.
        fn add(&self, a: i64, b: i64) -> i64;
    }

    struct Impl;

    impl Local for Impl {
        fn add(&self, a: i64, b: i64) -> i64 {
            a + b
        }
    }

    let _ = Impl.into_methods();
    let _ = LocalClient::new(Methods::new());
}
