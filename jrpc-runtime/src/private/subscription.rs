//! Holds what `#[subscription]` methods expand to: their registration helpers, `subscribe_N` (by
//! the number of parameters) and `subscribe_whole`, the bound an item type must meet on the
//! server ([`RpcItem`]) and on the client stub ([`StubItem`]).
//!
//! As for calls, each bound is a trait of this module with its own
//! `#[diagnostic::on_unimplemented]` message and no supertrait, checked first at the item type as
//! written: what needs serde's trait (registering, subscribing) is the blanket impl's own method,
//! where the type is known to meet it.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::table::Table;
use super::{IntoRpcError, Kind, Meta, Param, RpcParam};
use crate::caller::BoxFuture;
use crate::dispatch::{Context, FromParams, Methods, SchemaDoc, Whole};
use crate::error::{ClientError, RegisterError};
use crate::peer::{Items, Subscriber, Subscription};
use crate::wire::RpcError;

/// Marks the types a subscription's items may have.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a subscription item",
    label = "this type does not implement `serde::Serialize`",
    note = "each item is encoded into a notification: derive `serde::Serialize` for `{Self}`"
)]
pub trait RpcItem: Sized {
    /// Registers a subscription of these items (`Methods::register_subscription`, which needs
    /// the items to be `Serialize`, as the blanket impl knows they are).
    ///
    /// # Errors
    ///
    /// As `Methods::register_subscription`.
    fn register<P, F, Fut>(
        methods: &mut Methods,
        subscribe: &str,
        names: &'static [&'static str],
        subscription: Names,
        handler: F,
    ) -> Result<(), RegisterError>
    where
        P: FromParams,
        F: Fn(P, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Items<Self>, RpcError>> + Send + 'static;

    /// Returns the witness of this item type, which the expansion makes first, at the type (as
    /// [`RpcParam::witness`]).
    #[inline]
    fn witness() -> Item<Self> {
        Item(SchemaDoc::any(), PhantomData)
    }
}
#[diagnostic::do_not_recommend]
impl<T: Serialize + 'static> RpcItem for T {
    #[inline]
    fn register<P, F, Fut>(
        methods: &mut Methods,
        subscribe: &str,
        names: &'static [&'static str],
        subscription: Names,
        handler: F,
    ) -> Result<(), RegisterError>
    where
        P: FromParams,
        F: Fn(P, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Items<T>, RpcError>> + Send + 'static,
    {
        methods
            .register_subscription(subscribe, names, subscription.0, subscription.1, handler)
            .map(drop)
    }
}

/// Marks the item types of a client stub's subscriptions.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an item of the client stub",
    label = "this type does not implement `serde::Deserialize` (owned)",
    note = "the client stub decodes each item from its notification: derive `serde::Deserialize` for `{Self}` and give it no borrowed fields, or leave the stub out with `#[rpc_service(client = false)]`"
)]
pub trait StubItem: Sized {
    /// Subscribes through `caller` (`Subscriber::subscribe`, which needs the items to be
    /// `Deserialize`, as the blanket impl knows they are). The expansion calls it at the item type
    /// as written: rustc reports an unmet `StubItem` there, with no note into the runtime. (The
    /// future is boxed: an `impl Future` here would be the impl's type, which rustc would check
    /// the bound of a second time, where the future is awaited.)
    ///
    /// # Errors
    ///
    /// As `Subscriber::subscribe`.
    fn subscribe<'a, C: Subscriber>(
        caller: &'a C,
        method: &'a str,
        params: Option<Box<RawValue>>,
        subscription: Names,
    ) -> BoxFuture<'a, Result<Subscription<Self>, ClientError>>
    where
        Self: 'a;
}
#[diagnostic::do_not_recommend]
impl<T: DeserializeOwned> StubItem for T {
    #[inline]
    fn subscribe<'a, C: Subscriber>(
        caller: &'a C,
        method: &'a str,
        params: Option<Box<RawValue>>,
        subscription: Names,
    ) -> BoxFuture<'a, Result<Subscription<T>, ClientError>>
    where
        T: 'a,
    {
        Box::pin(caller.subscribe::<T>(method, params, subscription.0, subscription.1))
    }
}

/// Carries a subscription's item type, as an argument the expansion spans at the user's type, with
/// its schema for the description (`{}` unless the service has `schema`).
pub struct Item<T>(pub(super) SchemaDoc, PhantomData<fn() -> T>);

impl<T> Item<T> {
    /// Returns the witness, as the expansion passes it to a helper.
    #[inline]
    pub fn at(self) -> Self {
        self
    }

    /// Returns the witness with `schema`.
    #[inline]
    pub(super) fn with_schema(self, schema: SchemaDoc) -> Self {
        Self(schema, PhantomData)
    }
}

/// Holds a subscription's other wire names: its notification's and its unsubscribe method's.
#[derive(Clone, Copy)]
pub struct Names(pub &'static str, pub &'static str);

/// Completes the description [`Methods::register_subscription`] gave the subscribe method, as
/// `describe` does a call's: the item's schema goes to its subscription.
#[cold]
fn describe(table: &mut Methods, meta: &Meta, params: &[SchemaDoc], item: SchemaDoc) {
    super::describe(table, meta, params, SchemaDoc::any());
    let Some(doc) = table.description(meta.0) else {
        return;
    };
    let mut doc = doc.clone();
    if let (false, Some(subscription)) = (item.is_any(), doc.subscription.as_mut()) {
        subscription.item = item;
        let _ = table.describe(meta.0, doc);
    }
}

/// Writes `subscribe_N` for one number of parameters (as `shape!` writes `call_N`).
macro_rules! subscribe_shape {
    ($subscribe:ident, $n:literal; $($p:ident: $P:ident),*) => {
        #[doc = concat!("Registers a subscription with ", $n, " parameters.")]
        #[allow(clippy::too_many_arguments)]
        #[track_caller]
        pub fn $subscribe<S, $($P,)* T, KO, KE, F, Fut>(
            table: &mut Table,
            this: &Arc<S>,
            meta: Meta,
            names: Names,
            $($p: Param<$P>,)*
            item: Item<T>,
            _ok: KO,
            _err: KE,
            handler: F,
        ) where
            S: Send + Sync + 'static,
            $($P: RpcParam,)*
            T: RpcItem,
            KO: Kind<Ok = Items<T>>,
            KE: Kind,
            KE::Err: IntoRpcError,
            F: Fn(Arc<S>, ($($P,)*), Context) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = Result<Items<T>, KE::Err>> + Send + 'static,
        {
            let this = Arc::clone(this);
            let result = T::register(
                table.methods(),
                meta.0,
                meta.1,
                names,
                move |($($p,)*): ($($P::Owned,)*), ctx| {
                    let items = handler(Arc::clone(&this), ($($P::from_owned($p),)*), ctx);
                    async move { items.await.map_err(IntoRpcError::into_rpc_error) }
                },
            );
            table.subscribed(result, meta.0, names.1, meta.4);
            describe(table.methods(), &meta, &[$($p.0,)*], item.0);
        }
    };
}

subscribe_shape!(subscribe_0, 0;);
subscribe_shape!(subscribe_1, 1; p0: P0);
subscribe_shape!(subscribe_2, 2; p0: P0, p1: P1);
subscribe_shape!(subscribe_3, 3; p0: P0, p1: P1, p2: P2);
subscribe_shape!(subscribe_4, 4; p0: P0, p1: P1, p2: P2, p3: P3);
subscribe_shape!(subscribe_5, 5; p0: P0, p1: P1, p2: P2, p3: P3, p4: P4);
subscribe_shape!(subscribe_6, 6; p0: P0, p1: P1, p2: P2, p3: P3, p4: P4, p5: P5);
subscribe_shape!(subscribe_7, 7; p0: P0, p1: P1, p2: P2, p3: P3, p4: P4, p5: P5, p6: P6);
subscribe_shape!(subscribe_8, 8; p0: P0, p1: P1, p2: P2, p3: P3, p4: P4, p5: P5, p6: P6, p7: P7);
subscribe_shape!(subscribe_9, 9; p0: P0, p1: P1, p2: P2, p3: P3, p4: P4, p5: P5, p6: P6, p7: P7, p8: P8);
subscribe_shape!(subscribe_10, 10; p0: P0, p1: P1, p2: P2, p3: P3, p4: P4, p5: P5, p6: P6, p7: P7, p8: P8, p9: P9);
subscribe_shape!(subscribe_11, 11; p0: P0, p1: P1, p2: P2, p3: P3, p4: P4, p5: P5, p6: P6, p7: P7, p8: P8, p9: P9, p10: P10);
subscribe_shape!(subscribe_12, 12; p0: P0, p1: P1, p2: P2, p3: P3, p4: P4, p5: P5, p6: P6, p7: P7, p8: P8, p9: P9, p10: P10, p11: P11);
subscribe_shape!(subscribe_13, 13; p0: P0, p1: P1, p2: P2, p3: P3, p4: P4, p5: P5, p6: P6, p7: P7, p8: P8, p9: P9, p10: P10, p11: P11, p12: P12);
subscribe_shape!(subscribe_14, 14; p0: P0, p1: P1, p2: P2, p3: P3, p4: P4, p5: P5, p6: P6, p7: P7, p8: P8, p9: P9, p10: P10, p11: P11, p12: P12, p13: P13);
subscribe_shape!(subscribe_15, 15; p0: P0, p1: P1, p2: P2, p3: P3, p4: P4, p5: P5, p6: P6, p7: P7, p8: P8, p9: P9, p10: P10, p11: P11, p12: P12, p13: P13, p14: P14);
subscribe_shape!(subscribe_16, 16; p0: P0, p1: P1, p2: P2, p3: P3, p4: P4, p5: P5, p6: P6, p7: P7, p8: P8, p9: P9, p10: P10, p11: P11, p12: P12, p13: P13, p14: P14, p15: P15);

/// Registers a subscription whose one parameter is the whole `params`.
#[allow(clippy::too_many_arguments)]
#[track_caller]
pub fn subscribe_whole<S, P, T, KO, KE, F, Fut>(
    table: &mut Table,
    this: &Arc<S>,
    meta: Meta,
    names: Names,
    param: Param<P>,
    item: Item<T>,
    _ok: KO,
    _err: KE,
    handler: F,
) where
    S: Send + Sync + 'static,
    P: RpcParam,
    T: RpcItem,
    KO: Kind<Ok = Items<T>>,
    KE: Kind,
    KE::Err: IntoRpcError,
    F: Fn(Arc<S>, Whole<P>, Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Items<T>, KE::Err>> + Send + 'static,
{
    let this = Arc::clone(this);
    let result = T::register(
        table.methods(),
        meta.0,
        meta.1,
        names,
        move |Whole(owned): Whole<P::Owned>, ctx| {
            let items = handler(Arc::clone(&this), Whole(P::from_owned(owned)), ctx);
            async move { items.await.map_err(IntoRpcError::into_rpc_error) }
        },
    );
    table.subscribed(result, meta.0, names.1, meta.4);
    describe(table.methods(), &meta, &[param.0], item.0);
}
