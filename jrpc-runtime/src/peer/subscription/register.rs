//! Registers a subscription on a table: its subscribe method, which runs the handler, gives the
//! subscription an id and starts its pump, and its unsubscribe method.

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::hash::{BuildHasher as _, Hasher as _};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

use super::hub::Reader;
use super::items::{Items, Source, TopicFeed, WhenFull};
use super::lane::Lane;
use super::registry::Refused;
use crate::dispatch::{
    Context, FromParams, MethodDoc, Methods, ParamDoc, SchemaDoc, SubscriptionDoc,
};
use crate::error::RegisterError;
use crate::peer::handle::Peer;
use crate::wire::{ErrorCode, Id, RpcError};

/// Makes the id of each new subscription (see [`Methods::subscription_ids`]).
pub type IdProvider = Arc<dyn Fn() -> Id + Send + Sync>;

/// Holds what a table's subscriptions share: their unsubscribe methods, and where their ids come
/// from.
#[derive(Clone, Default)]
struct Table(Arc<Mutex<TableState>>);

#[derive(Default)]
struct TableState {
    unsubscribes: HashSet<String>,
    ids: Option<IdProvider>,
}

impl Table {
    fn ids(&self) -> Option<IdProvider> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .ids
            .clone()
    }
}

impl fmt::Debug for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Table").finish_non_exhaustive()
    }
}

/// Returns a random id, as geth and reth make them: a hex quantity of 128 bits
/// (`"0x9cef478923ff08bf67fde6c64013158d"`). Random enough that ids do not repeat across
/// connections and restarts; not a secret (unsubscribing needs the subscription's own
/// connection).
pub fn random_id() -> Id {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // `RandomState` is seeded from the system's randomness, once per thread and then stepped:
    // hashing a counter with a fresh one gives unpredictable bits without a dependency.
    let mut bits = [0u64; 2];
    for half in &mut bits {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        *half = hasher.finish();
    }
    let value = (u128::from(bits[0]) << 64) | u128::from(bits[1]);
    Id::from(format!("0x{value:x}"))
}

impl Methods {
    /// Registers a subscription: `subscribe` runs `handler`, which returns the subscription's
    /// [`Items`] (or an error, answered as a call's); the call is answered the subscription's id,
    /// and then each item goes out as `{"method": NOTIFICATION, "params": {"subscription": ID,
    /// "result": ITEM}}`, the Ethereum shape that jsonrpsee and every chain client read.
    /// `unsubscribe(ID)` answers `true` for a live subscription of the caller's own connection
    /// and ends it, else `false`; subscriptions registered with the same unsubscribe method share
    /// it.
    ///
    /// Both methods are described for discovery: the subscribe method with `names` and the
    /// subscription's id as its result, and its [`SubscriptionDoc`] (a `{}` item; give it a
    /// schema with [`Methods::describe`]); the unsubscribe method with its parameter
    /// `subscription` and a boolean result.
    ///
    /// A subscription lives on a connection that stays open (a WebSocket, any [`Peer`], an
    /// event stream): over a plain HTTP `POST`, or in process, the call is answered `-32000`
    /// ("Subscriptions need a connection"), and so is a notification. Past
    /// [`max_subscriptions`](crate::Limits::max_subscriptions) it is answered `-32005`.
    ///
    /// # Errors
    ///
    /// [`RegisterError`] when `subscribe` is taken or reserved, or `unsubscribe` is taken by a
    /// method that is no unsubscribe method.
    ///
    /// ```
    /// use futures_util::stream;
    /// use jrpc_runtime::{Items, Methods, RpcError};
    ///
    /// let mut methods = Methods::new();
    /// methods
    ///     .register_subscription(
    ///         "subscribe_count",
    ///         &["to"],
    ///         "count",
    ///         "unsubscribe_count",
    ///         |(to,): (u64,), _ctx| async move { Ok::<_, RpcError>(Items::new(stream::iter(0..to))) },
    ///     )
    ///     .unwrap();
    /// assert!(methods.contains("unsubscribe_count"));
    /// ```
    pub fn register_subscription<P, F, Fut, T>(
        &mut self,
        subscribe: &str,
        names: &'static [&'static str],
        notification: &str,
        unsubscribe: &str,
        handler: F,
    ) -> Result<&mut Self, RegisterError>
    where
        P: FromParams,
        F: Fn(P, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Items<T>, RpcError>> + Send + 'static,
        T: Serialize + 'static,
    {
        let table = self.extension::<Table>();
        let shared_unsubscribe = table
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .unsubscribes
            .contains(unsubscribe);
        if !shared_unsubscribe && self.contains(unsubscribe) {
            return Err(RegisterError::Duplicate(unsubscribe.to_owned()));
        }
        let spec = Arc::new(Spec {
            notification: serde_json::to_string(notification).unwrap_or_default(),
            unsubscribe: Arc::from(unsubscribe),
            table: table.clone(),
        });
        self.register(subscribe, names, move |params: P, ctx: Context| {
            let spec = Arc::clone(&spec);
            let made = handler(params, ctx.clone());
            async move {
                let (peer, request) = match (ctx.peer(), ctx.id()) {
                    (Some(peer), Some(request)) => (peer.clone(), request.clone()),
                    _ => return Err(needs_connection()),
                };
                peer.shared.subscriptions.check_room().map_err(refused)?;
                let items = made.await?;
                open(&peer, &spec, request, items)
            }
        })?;
        describe_subscribe(self, subscribe, notification, unsubscribe);
        if !shared_unsubscribe {
            let name: Arc<str> = Arc::from(unsubscribe);
            self.register(
                unsubscribe,
                &["subscription"],
                move |(id,): (Id,), ctx: Context| {
                    let live = ctx
                        .peer()
                        .is_some_and(|peer| peer.shared.subscriptions.remove(&id, &name));
                    async move { Ok::<_, RpcError>(live) }
                },
            )?;
            table
                .0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .unsubscribes
                .insert(unsubscribe.to_owned());
            describe_unsubscribe(self, unsubscribe);
        }
        Ok(self)
    }

    /// Sets where the ids of this table's subscriptions come from (default [`random_id`]: random
    /// 128-bit hex quantities, as geth and reth give). An id the connection holds already is
    /// asked for again, a few times.
    pub fn subscription_ids(&mut self, ids: impl Fn() -> Id + Send + Sync + 'static) -> &mut Self {
        let table = self.extension::<Table>();
        table.0.lock().unwrap_or_else(PoisonError::into_inner).ids = Some(Arc::new(ids));
        self
    }
}

/// Holds what a subscribe method knows of its subscription.
struct Spec {
    /// The notification's method, as JSON.
    notification: String,
    unsubscribe: Arc<str>,
    table: Table,
}

/// Returns the schema of a subscription's id: a string (random hex quantities by default), or a
/// number, as an id provider may give.
fn id_schema() -> SchemaDoc {
    SchemaDoc::json(serde_json::json!({ "type": ["string", "integer"] }))
}

/// Describes a subscribe method as its registration left it, with the subscription's id as its
/// result and the subscription it opens.
fn describe_subscribe(
    methods: &mut Methods,
    subscribe: &str,
    notification: &str,
    unsubscribe: &str,
) {
    let Some(doc) = methods.description(subscribe) else {
        return;
    };
    let mut doc = doc.clone();
    doc.result = Some(id_schema());
    doc.subscription = Some(SubscriptionDoc::new(
        notification.to_owned(),
        unsubscribe.to_owned(),
    ));
    let _ = methods.describe(subscribe, doc);
}

/// Describes an unsubscribe method: the id in, whether it was live out.
fn describe_unsubscribe(methods: &mut Methods, unsubscribe: &str) {
    let mut doc = MethodDoc::new().with_doc_comment(
        "Ends a subscription of this connection, given its id.\n\nAnswers `true` when the \
         subscription was live, else `false` (another connection's id included).",
    );
    doc.params.push(ParamDoc::new("subscription", id_schema()));
    doc.result = Some(SchemaDoc::json(serde_json::json!({ "type": "boolean" })));
    let _ = methods.describe(unsubscribe, doc);
}

/// Returns the error a subscribe call gets where nothing can carry its notifications.
fn needs_connection() -> RpcError {
    RpcError::new(ErrorCode::SERVER_ERROR, "Subscriptions need a connection").with_data(
        "notifications need a connection that stays open: a WebSocket, stdio or a socket, or a POST that asks for `Accept: text/event-stream`",
    )
}

/// Returns the error a subscribe call gets when the connection cannot take it.
fn refused(why: Refused) -> RpcError {
    match why {
        Refused::Full(limit) => RpcError::new(ErrorCode::new(-32005), "Too many subscriptions")
            .with_data(&serde_json::json!({"max_subscriptions": limit})),
        Refused::Closed => RpcError::new(ErrorCode::SERVER_ERROR, "The connection is closing"),
        Refused::Taken => RpcError::internal(),
    }
}

/// Opens the subscription `items` on `peer`'s connection, for the call `request`: returns its id.
/// Its producer is polled by the connection's taker once the answer is on its way.
fn open<T>(peer: &Peer, spec: &Spec, request: Id, items: Items<T>) -> Result<Id, RpcError> {
    let shared = &peer.shared;
    let provider = spec.table.ids();
    let Items {
        source,
        bound_items,
        bound_bytes,
        when_full,
        ..
    } = items;
    // A lane that waits for room reads its feed alone: a connection's hub cannot wait for one.
    let (mut parts, mut reader) = match source {
        Source::Producer(producer) => ((Some(producer), None), None),
        Source::Feed(TopicFeed {
            id,
            producer,
            rx,
            guard,
        }) => {
            let reader = (when_full != WhenFull::Wait).then_some(Reader { feed: id, rx });
            ((Some(producer), Some(guard)), reader)
        }
    };
    let mut tries = 0;
    let id = loop {
        let id = provider.as_ref().map_or_else(random_id, |ids| ids());
        let lane = Arc::new(Lane::new(
            id.clone(),
            format!(
                r#"{{"jsonrpc":"2.0","method":{},"params":{{"subscription":{id},"#,
                spec.notification
            ),
            parts,
            (bound_items, bound_bytes, when_full),
            &shared.subscriptions.ready,
            Arc::clone(&shared.budget),
        ));
        match shared.subscriptions.add(
            &id,
            request.clone(),
            &lane,
            Arc::clone(&spec.unsubscribe),
            &mut reader,
        ) {
            Ok(()) => {
                // Once added (its producer is first polled once its answer goes): a lane that
                // was not is never the connection's lone one.
                shared.subscriptions.ready.slot_lane(&lane);
                break id;
            }
            Err(Refused::Taken) if tries < 3 => {
                tries += 1;
                // Never added: its producer (or its feed's guard) goes to the next try.
                parts = lane.take_parts();
            }
            Err(why) => return Err(refused(why)),
        }
    };
    // A handle's push began: a reader that answers calls where it reads them queues this answer
    // behind, through the loop, so that the lane opens as the answer goes out.
    shared.pushes.fetch_add(1, Ordering::AcqRel);
    Ok(id)
}
