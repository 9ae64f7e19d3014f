//! Lint attributes on methods and parameters apply to the stub's copies
//! too (`expect` as `allow`, as the stub may not trigger the lint).
#![deny(warnings)]

use jrpc_runtime::rpc_service;

/// Names from another protocol.
#[rpc_service]
#[allow(non_camel_case_types)]
pub trait legacy_api {
    /// A camel-case method.
    #[allow(non_snake_case)]
    fn getValue(&self, #[allow(non_snake_case)] keyName: String) -> u32;
    /// Expected to trip the lint.
    #[expect(non_snake_case)]
    fn setValue(&self, value: u32);
}

struct Impl;

impl legacy_api for Impl {
    #[allow(non_snake_case)]
    fn getValue(&self, #[allow(non_snake_case)] keyName: String) -> u32 {
        u32::try_from(keyName.len()).unwrap_or(0)
    }
    #[allow(non_snake_case)]
    fn setValue(&self, _value: u32) {}
}

fn main() {
    let _ = Impl.into_methods();
    let _ = legacy_apiClient::new(jrpc_runtime::Methods::new());
}
