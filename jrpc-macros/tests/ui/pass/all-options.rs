//! Every option of the attribute and of its helper attributes.
#![deny(warnings)]

use jrpc_runtime::{Context, ParamEncoding, RpcError, rpc_service};

#[rpc_service(namespace = "calc", separator = "/", rename_all = "camelCase", crate = "::jrpc_runtime")]
pub trait Calculator {
    /// `calc/addAll`.
    async fn add_all(&self, numbers: Vec<i64>) -> i64;
    /// `calc/get_data`, not renamed further.
    #[rpc(name = "get_data")]
    async fn data(&self) -> (String, u32);
    /// The whole params.
    #[rpc(params = whole)]
    async fn sum_up(&self, numbers: Vec<i64>) -> i64;
    /// A notification.
    #[notification]
    async fn update_values(&self, values: Vec<i64>);
    /// A renamed parameter and an optional one.
    async fn scale(&self, #[rpc(name = "by")] factor: f64, offset: Option<f64>) -> Result<f64, RpcError>;
    /// The context first.
    async fn whoami(&self, ctx: &Context, verbose: bool) -> String;
    /// Only in some builds.
    #[cfg(any())]
    async fn hidden(&self) -> u8;
    /// On its way out: serving it is no use of it.
    #[deprecated = "use `add_all`"]
    async fn old(&self) -> u8;
}

/// Every rule name.
#[rpc_service(rename_all = "lowercase")]
pub trait Lower {
    /// A method.
    async fn get_it(&self);
}

/// Every rule name.
#[rpc_service(rename_all = "UPPERCASE")]
pub trait Upper {
    /// A method.
    async fn get_it(&self);
}

/// Every rule name.
#[rpc_service(rename_all = "PascalCase")]
pub trait Pascal {
    /// A method.
    async fn get_it(&self);
}

/// Every rule name.
#[rpc_service(rename_all = "snake_case")]
pub trait Snake {
    /// A method.
    async fn get_it(&self);
}

/// Every rule name.
#[rpc_service(rename_all = "SCREAMING_SNAKE_CASE")]
pub trait ScreamingSnake {
    /// A method.
    async fn get_it(&self);
}

/// Every rule name.
#[rpc_service(rename_all = "kebab-case")]
pub trait Kebab {
    /// A method.
    async fn get_it(&self);
}

/// Every rule name.
#[rpc_service(rename_all = "SCREAMING-KEBAB-CASE")]
pub trait ScreamingKebab {
    /// A method.
    async fn get_it(&self);
}

/// No methods at all.
#[rpc_service]
pub trait Empty {}

struct Impl;

impl Calculator for Impl {
    async fn add_all(&self, numbers: Vec<i64>) -> i64 {
        numbers.iter().sum()
    }
    async fn data(&self) -> (String, u32) {
        (String::new(), 0)
    }
    async fn sum_up(&self, numbers: Vec<i64>) -> i64 {
        numbers.iter().sum()
    }
    async fn update_values(&self, _values: Vec<i64>) {}
    async fn scale(&self, factor: f64, offset: Option<f64>) -> Result<f64, RpcError> {
        Ok(factor + offset.unwrap_or(0.0))
    }
    async fn whoami(&self, ctx: &Context, verbose: bool) -> String {
        format!("{}{verbose}", ctx.transport().as_str())
    }
    async fn old(&self) -> u8 {
        0
    }
}

impl Empty for Impl {}

#[allow(deprecated)]
fn old_is_still_callable(client: &CalculatorClient<jrpc_runtime::Methods>) {
    let _ = client.old();
}

fn main() {
    let _ = Calculator::into_methods(Impl);
    let _ = Empty::into_methods(Impl);
    let client = CalculatorClient::new(Calculator::into_methods(Impl)).with_encoding(ParamEncoding::Named);
    let _ = client.caller();
    let _ = client.clone().into_caller();
    let _ = EmptyClient::new(());
    let _ = old_is_still_callable;
}
