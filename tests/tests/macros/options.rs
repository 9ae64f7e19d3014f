//! The attribute's options and helper attributes, seen on the wire: wire
//! names (namespace, separator, `rename_all`, `#[rpc(name)]`), renamed
//! parameters, inherent `impl` blocks, sync methods and `thiserror` errors.
#![deny(warnings)]
#![warn(clippy::pedantic)]

use std::sync::atomic::{AtomicU64, Ordering};

use jrpc_runtime::{
    ClientError, Context, ErrorCode, Methods, ParamEncoding, RpcError, rpc_service,
};
use serde_json::{Value, json};

/// Errors of the inventory, each answered with its own code.
#[derive(Debug, thiserror::Error)]
pub enum InventoryError {
    /// No such item.
    #[error("no item named {0}")]
    NotFound(String),
    /// Not enough of the item.
    #[error("only {available} left")]
    Short {
        /// How many there are.
        available: u32,
    },
}

impl From<InventoryError> for RpcError {
    fn from(err: InventoryError) -> Self {
        match &err {
            InventoryError::NotFound(name) => {
                RpcError::new(-32001, err.to_string()).with_data(name)
            }
            InventoryError::Short { available } => {
                RpcError::new(-32002, err.to_string()).with_data(available)
            }
        }
    }
}

/// Namespaced, renamed methods.
#[rpc_service(namespace = "inventory", separator = "/", rename_all = "camelCase")]
pub trait Inventory {
    /// `inventory/itemCount`.
    async fn item_count(&self, item_name: String) -> Result<u32, InventoryError>;
    /// `inventory/take`, with a parameter renamed on the wire.
    async fn take(
        &self,
        #[rpc(name = "item")] item_name: String,
        count: u32,
    ) -> Result<u32, InventoryError>;
    /// `inventory/list_all`: a given name is used as written.
    #[rpc(name = "list_all")]
    fn list_everything(&self) -> Vec<String>;
    /// `inventory/resetAll`, a notification with the context first.
    #[notification]
    fn reset_all(&self, ctx: &Context, to: u32);
    /// Only in some builds; neither registered nor in the stub otherwise.
    #[cfg(any())]
    async fn hidden(&self) -> u8;
}

struct Store {
    apples: AtomicU64,
}

impl Inventory for Store {
    async fn item_count(&self, item_name: String) -> Result<u32, InventoryError> {
        match item_name.as_str() {
            "apple" => Ok(u32::try_from(self.apples.load(Ordering::SeqCst)).unwrap()),
            _ => Err(InventoryError::NotFound(item_name)),
        }
    }
    async fn take(&self, item_name: String, count: u32) -> Result<u32, InventoryError> {
        let available = self.item_count(item_name).await?;
        if count > available {
            return Err(InventoryError::Short { available });
        }
        self.apples.fetch_sub(u64::from(count), Ordering::SeqCst);
        Ok(available - count)
    }
    fn list_everything(&self) -> Vec<String> {
        vec!["apple".to_owned()]
    }
    fn reset_all(&self, ctx: &Context, to: u32) {
        assert_eq!(ctx.transport().as_str(), "in-process");
        self.apples.store(u64::from(to), Ordering::SeqCst);
    }
}

fn inventory() -> Methods {
    Store {
        apples: AtomicU64::new(10),
    }
    .into_methods()
}

async fn call(methods: &Methods, method: &str, params: Value) -> Value {
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let answer = methods
        .handle(&request.to_string())
        .await
        .expect("a call is answered");
    serde_json::from_str(&answer).unwrap()
}

#[tokio::test]
async fn wire_names() {
    let m = inventory();
    assert_eq!(
        call(&m, "inventory/itemCount", json!(["apple"])).await["result"],
        10
    );
    assert_eq!(
        call(&m, "inventory/list_all", json!([])).await["result"],
        json!(["apple"])
    );
    assert_eq!(
        call(&m, "inventory/resetAll", json!([3])).await["result"],
        Value::Null
    );
    assert_eq!(
        call(&m, "inventory/itemCount", json!(["apple"])).await["result"],
        3
    );
    for unknown in [
        "item_count",
        "inventory.itemCount",
        "inventory/item_count",
        "inventory/listAll",
        "inventory/hidden",
    ] {
        assert_eq!(
            call(&m, unknown, json!([])).await["error"]["code"],
            -32601,
            "{unknown}"
        );
    }
}

#[tokio::test]
async fn renamed_parameter() {
    let m = inventory();
    let answer = call(&m, "inventory/take", json!({"item": "apple", "count": 4})).await;
    assert_eq!(answer["result"], 6);
    // The Rust name is not the wire name.
    let answer = call(
        &m,
        "inventory/take",
        json!({"item_name": "apple", "count": 1}),
    )
    .await;
    assert_eq!(answer["error"]["code"], -32602);
    assert!(
        answer["error"]["data"]
            .as_str()
            .unwrap()
            .contains("\"item\""),
        "{answer}"
    );
}

#[tokio::test]
async fn thiserror_errors() {
    let m = inventory();
    let answer = call(&m, "inventory/itemCount", json!(["pear"])).await;
    assert_eq!(
        answer["error"],
        json!({"code": -32001, "message": "no item named pear", "data": "pear"})
    );
    let answer = call(&m, "inventory/take", json!(["apple", 11])).await;
    assert_eq!(
        answer["error"],
        json!({"code": -32002, "message": "only 10 left", "data": 10})
    );
}

#[tokio::test]
async fn client_uses_wire_names() {
    for encoding in [ParamEncoding::Positional, ParamEncoding::Named] {
        let client = InventoryClient::new(inventory()).with_encoding(encoding);
        assert_eq!(client.item_count("apple".to_owned()).await.unwrap(), 10);
        assert_eq!(client.take("apple".to_owned(), 2).await.unwrap(), 8);
        assert_eq!(client.list_everything().await.unwrap(), ["apple"]);
        client.reset_all(1).await.unwrap();
        assert_eq!(client.item_count("apple".to_owned()).await.unwrap(), 1);
        match client.item_count("pear".to_owned()).await {
            Err(ClientError::Failed(err)) => {
                assert_eq!(err.code(), ErrorCode::new(-32001));
                assert_eq!(err.message(), "no item named pear");
            }
            other => panic!("{other:?}"),
        }
    }
}

/// A counter served from an inherent `impl` block.
#[derive(Default)]
pub struct Counter {
    value: AtomicU64,
}

#[rpc_service(namespace = "counter", rename_all = "SCREAMING-KEBAB-CASE")]
impl Counter {
    /// Adds and answers the new value.
    pub async fn add_to(&self, by: u64) -> u64 {
        tokio::task::yield_now().await;
        self.value.fetch_add(by, Ordering::SeqCst) + by
    }

    /// The value, from a sync method.
    pub fn current_value(&self) -> u64 {
        self.value.load(Ordering::SeqCst)
    }

    /// Fails on zero, from a sync method.
    fn non_zero(&self, value: u64) -> Result<u64, RpcError> {
        let _ = self;
        if value == 0 {
            Err(RpcError::invalid_params("zero"))
        } else {
            Ok(value)
        }
    }

    /// A notification that sets the value.
    #[notification]
    async fn set(&self, #[rpc(name = "value")] new_value: u64) {
        tokio::task::yield_now().await;
        self.value.store(new_value, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn inherent_impl() {
    let m = Counter::default().into_methods();
    assert_eq!(call(&m, "counter.ADD-TO", json!([2])).await["result"], 2);
    assert_eq!(
        call(&m, "counter.ADD-TO", json!({"by": 3})).await["result"],
        5
    );
    assert_eq!(
        call(&m, "counter.CURRENT-VALUE", json!([])).await["result"],
        5
    );
    assert_eq!(
        call(&m, "counter.NON-ZERO", json!([0])).await["error"]["code"],
        -32602
    );
    assert_eq!(call(&m, "counter.NON-ZERO", json!([4])).await["result"], 4);
    let notification = json!({"jsonrpc": "2.0", "method": "counter.SET", "params": {"value": 9}});
    assert_eq!(m.handle(&notification.to_string()).await, None);
    assert_eq!(
        call(&m, "counter.CURRENT-VALUE", json!([])).await["result"],
        9
    );
}

#[tokio::test]
async fn tables_merge() {
    let mut m = inventory();
    m.merge(Counter::default().into_methods()).unwrap();
    assert_eq!(call(&m, "counter.ADD-TO", json!([1])).await["result"], 1);
    assert_eq!(
        call(&m, "inventory/itemCount", json!(["apple"])).await["result"],
        10
    );
}
