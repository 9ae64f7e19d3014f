//! A `#[cfg]` on a parameter leaves it out of decoding and of the stub in
//! the builds where it is false: `b` is never built here, `c` always is.
#![deny(warnings)]

use jrpc_runtime::rpc_service;

/// Parameters under `#[cfg]`s.
#[rpc_service]
pub trait Calculator {
    /// `b` exists only under a `cfg` that is never true.
    async fn add(&self, a: i64, #[cfg(any())] b: i64, #[cfg(all())] c: i64) -> i64;
    /// The context under a `cfg`.
    fn who(&self, #[cfg(any())] ctx: &jrpc_runtime::Context, #[cfg(any())] d: u8) -> u8;
}

struct Calc;

impl Calculator for Calc {
    async fn add(&self, a: i64, #[cfg(any())] b: i64, #[cfg(all())] c: i64) -> i64 {
        a + c
    }
    fn who(&self, #[cfg(any())] _ctx: &jrpc_runtime::Context, #[cfg(any())] _d: u8) -> u8 {
        7
    }
}

fn main() {
    let methods = Calc.into_methods();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let answer = methods
            .handle(r#"{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}"#)
            .await;
        assert_eq!(
            answer.as_deref(),
            Some(r#"{"jsonrpc":"2.0","result":3,"id":1}"#)
        );
        let client = CalculatorClient::new(methods.clone());
        assert_eq!(client.add(4, 5).await.ok(), Some(9));
        assert_eq!(client.who().await.ok(), Some(7));
        // By name, the wire names are those of this build's parameters.
        let named = client.with_encoding(jrpc_runtime::ParamEncoding::Named);
        assert_eq!(named.add(4, 6).await.ok(), Some(10));
    });
}
