//! Generated code is clean under `deny(warnings)` and `missing_docs`, also
//! for a private service whose stub is never used.
#![deny(warnings, missing_docs, unused, rust_2018_idioms, unreachable_pub, unused_qualifications)]
#![warn(clippy::pedantic)]

use jrpc_runtime::{Context, RpcError, rpc_service};

mod private {
    use super::{Context, RpcError, rpc_service};

    #[rpc_service]
    pub(crate) trait Internal {
        async fn one(&self, a: u8) -> u8;
        #[notification]
        async fn two(&self, ctx: &Context);
        fn three(&self) -> Result<(), RpcError>;
    }

    pub(crate) struct Impl;

    impl Internal for Impl {
        async fn one(&self, a: u8) -> u8 {
            a
        }
        async fn two(&self, _ctx: &Context) {}
        fn three(&self) -> Result<(), RpcError> {
            Ok(())
        }
    }
}

/// A public service of a library with `deny(missing_docs)`.
#[rpc_service]
pub trait Public {
    /// One.
    async fn one(&self, a: u8) -> u8;
}

fn main() {
    use private::Internal as _;
    let _ = private::Impl.into_methods();
}
