//! Sixteen parameters, the most a method may read from params.
#![deny(warnings)]

use jrpc_runtime::rpc_service;

/// Wide methods.
#[rpc_service]
pub trait Wide {
    /// Sums sixteen values.
    #[allow(clippy::too_many_arguments)]
    fn sum(
        &self,
        a: u8, b: u8, c: u8, d: u8, e: u8, f: u8, g: u8, h: u8,
        i: u8, j: u8, k: u8, l: u8, m: u8, n: u8, o: u8, p: u8,
    ) -> u32;
    /// Sixteen values and the context.
    #[notification]
    #[allow(clippy::too_many_arguments)]
    fn note(
        &self,
        a: u8, b: u8, c: u8, d: u8, e: u8, f: u8, g: u8, h: u8,
        ctx: &jrpc_runtime::Context,
        i: u8, j: u8, k: u8, l: u8, m: u8, n: u8, o: u8, p: u8,
    );
}

struct Impl;

impl Wide for Impl {
    fn sum(
        &self,
        a: u8, b: u8, c: u8, d: u8, e: u8, f: u8, g: u8, h: u8,
        i: u8, j: u8, k: u8, l: u8, m: u8, n: u8, o: u8, p: u8,
    ) -> u32 {
        [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p]
            .iter()
            .map(|&x| u32::from(x))
            .sum()
    }
    fn note(
        &self,
        _a: u8, _b: u8, _c: u8, _d: u8, _e: u8, _f: u8, _g: u8, _h: u8,
        _ctx: &jrpc_runtime::Context,
        _i: u8, _j: u8, _k: u8, _l: u8, _m: u8, _n: u8, _o: u8, _p: u8,
    ) {
    }
}

fn main() {
    let _ = Impl.into_methods();
}
