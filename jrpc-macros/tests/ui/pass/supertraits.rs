//! Supertraits are allowed; their methods are not in the table. A
//! supertrait that is a service itself is served with `Methods::merge`.
#![deny(warnings)]

use std::sync::Arc;

use jrpc_runtime::{Methods, rpc_service};

/// The base service.
#[rpc_service]
pub trait Base {
    /// From the base.
    fn version(&self) -> u32;
}

/// A service extending it.
#[rpc_service]
pub trait Extended: Base + Send + Sync {
    /// Its own.
    fn name(&self) -> String;
}

struct Impl;

impl Base for Impl {
    fn version(&self) -> u32 {
        1
    }
}

impl Extended for Impl {
    fn name(&self) -> String {
        "impl".to_owned()
    }
}

/// Both tables from one value.
#[derive(Clone)]
struct Shared(Arc<Impl>);

impl Base for Shared {
    fn version(&self) -> u32 {
        self.0.version()
    }
}

impl Extended for Shared {
    fn name(&self) -> String {
        self.0.name()
    }
}

fn main() {
    let shared = Shared(Arc::new(Impl));
    let mut methods: Methods = Extended::into_methods(shared.clone());
    let _ = methods.merge(Base::into_methods(shared));
    let _ = Extended::into_methods(Impl);
}
