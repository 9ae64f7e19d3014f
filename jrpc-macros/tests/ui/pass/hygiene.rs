//! Generated code names everything by absolute path: it compiles without
//! the prelude, next to items that shadow the prelude's and the runtime's
//! names, with parameters named like the generated code's locals.
#![no_implicit_prelude]
#![deny(warnings)]

use ::jrpc_runtime::rpc_service;

#[allow(dead_code)]
mod shadows {
    pub struct Result;
    pub struct Option;
    pub struct Ok;
    pub struct Err;
    pub struct Some;
    pub struct None;
    pub struct Box;
    pub struct Arc;
    pub struct Vec;
    pub struct String;
    pub struct Methods;
    pub struct Caller;
    pub struct ParamsBuilder;
    pub trait Send {}
    pub trait Sync {}
    pub trait Sized {}
    pub trait Future {}
    pub trait Clone {}
    pub trait Debug {}
}
#[allow(unused_imports)]
use shadows::*;

/// A parameter type named like the stub's type parameter.
#[derive(::serde::Serialize, ::serde::Deserialize)]
pub struct C(pub i64);

/// Every kind of method, with names that could collide with generated ones.
#[rpc_service]
pub trait Hygiene {
    /// Plain values.
    async fn add(&self, this: i64, ctx: i64) -> i64;
    /// A fallible method.
    async fn check(
        &self,
        methods: ::std::string::String,
        params: ::std::option::Option<u8>,
    ) -> ::std::result::Result<u8, ::jrpc_runtime::RpcError>;
    /// The whole params.
    #[rpc(params = whole)]
    async fn sum(&self, builder: ::std::vec::Vec<i64>) -> i64;
    /// A notification.
    #[notification]
    async fn ping(&self, raw: C);
    /// The context, between values.
    async fn who(&self, caller: u8, context: &::jrpc_runtime::Context, encoding: u8) -> C;
    /// A sync method.
    fn version(&self) -> u32;
    /// Nothing in, nothing out.
    async fn nothing(&self);
    /// A name given by a constant (evaluated in constants of the generated code).
    #[rpc(name = NAME)]
    async fn named(&self);
    /// A subscription, its names from constants, its items from a fallible method.
    #[subscription(notification = TICK, unsubscribe = UNTICK)]
    async fn ticks(
        &self,
        items: u8,
        names: &::jrpc_runtime::Context,
    ) -> ::std::result::Result<::jrpc_runtime::Items<C>, ::jrpc_runtime::RpcError>;
}

/// The wire name of `Hygiene::named`.
const NAME: &str = "named";
/// The names of `Hygiene::ticks`'s notification and unsubscribe method.
const TICK: &str = "tick";
const UNTICK: &str = "untick";

struct Impl;

impl Hygiene for Impl {
    async fn add(&self, this: i64, ctx: i64) -> i64 {
        this + ctx
    }
    async fn check(
        &self,
        methods: ::std::string::String,
        params: ::std::option::Option<u8>,
    ) -> ::std::result::Result<u8, ::jrpc_runtime::RpcError> {
        let _ = methods;
        ::std::result::Result::Ok(::std::option::Option::unwrap_or(params, 0))
    }
    async fn sum(&self, builder: ::std::vec::Vec<i64>) -> i64 {
        ::std::iter::Iterator::sum(::std::iter::IntoIterator::into_iter(builder))
    }
    async fn ping(&self, raw: C) {
        let _ = raw;
    }
    async fn who(&self, caller: u8, context: &::jrpc_runtime::Context, encoding: u8) -> C {
        let _ = context;
        C(<i64 as ::std::convert::From<u8>>::from(caller) + <i64 as ::std::convert::From<u8>>::from(encoding))
    }
    fn version(&self) -> u32 {
        1
    }
    async fn nothing(&self) {}
    async fn named(&self) {}
    async fn ticks(
        &self,
        items: u8,
        names: &::jrpc_runtime::Context,
    ) -> ::std::result::Result<::jrpc_runtime::Items<C>, ::jrpc_runtime::RpcError> {
        let _ = names;
        let ticks = ::futures_util::stream::iter([C(<i64 as ::std::convert::From<u8>>::from(items))]);
        ::std::result::Result::Ok(::jrpc_runtime::Items::new(ticks))
    }
}

/// The same in an inherent `impl` block.
pub struct Inherent;

#[rpc_service]
impl Inherent {
    /// A method.
    pub async fn add(&self, this: i64, ctx: i64) -> i64 {
        this + ctx
    }
}

fn main() {
    let _table: ::jrpc_runtime::Methods = Impl.into_methods();
    let _table: ::jrpc_runtime::Methods = Inherent.into_methods();
    let _client = HygieneClient::new(::jrpc_runtime::Methods::new());
}

/// The stub's subscription, over a caller that can subscribe.
#[allow(dead_code)]
async fn subscribe(client: HygieneClient<::jrpc_runtime::Peer>) {
    let _: ::jrpc_runtime::Subscription<C> = ::std::result::Result::unwrap(client.ticks(1).await);
}
