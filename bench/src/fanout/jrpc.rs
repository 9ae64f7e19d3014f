//! jrpc's `newHeads` service for the fan-out benchmark, as the `chain` example declares it:
//! `eth_subscribe("newHeads")` answers an id, then each header published to the topic goes to
//! every subscription (encoded once per publish, `Topics::items`), each under its own id;
//! `eth_unsubscribe(id)` answers `true` or `false`. A subscriber that falls behind loses its
//! oldest heads (a bound of 16), never its connection.
//!
//! Also the instruction gate's (`bench/gate/`, by `#[path]`): it uses only `super::header`.

use jrpc_runtime::server::Topics;
use jrpc_runtime::{Context, Methods, RpcError, WhenFull};
use serde_json::Value;

use super::header::{Header, NEW_HEADS};

/// How many heads a subscriber may leave unread before its oldest are dropped (the `chain`
/// example's).
const HEADS_BOUND: usize = 16;

/// Returns the table: `eth_subscribe` and `eth_unsubscribe`, fed from `topics`.
pub fn methods(topics: &Topics) -> Methods {
    let topics = topics.clone();
    let mut methods = Methods::new();
    methods
        .register_subscription(
            "eth_subscribe",
            &["kind", "params"],
            "eth_subscription",
            "eth_unsubscribe",
            move |(kind, _params): (String, Option<Value>), _ctx: Context| {
                let heads = (kind == NEW_HEADS).then(|| {
                    topics
                        .items::<Header>(NEW_HEADS)
                        .bound(HEADS_BOUND, 64 * 1024)
                        .when_full(WhenFull::DropOldest)
                });
                async move {
                    heads.ok_or_else(|| {
                        RpcError::invalid_params(format!("unknown subscription kind {kind:?}"))
                    })
                }
            },
        )
        .expect("a fresh table");
    methods
}

/// Publishes `header` to every subscription: encoded once.
pub fn publish(topics: &Topics, header: &Header) {
    topics
        .publish(NEW_HEADS, NEW_HEADS, header)
        .expect("a header encodes");
}
