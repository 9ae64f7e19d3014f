//! Holds the items the `#[rpc_service]` expansion names; not a public API.
//!
//! The expansion is per-method glue only: one call of a registration helper (`call_N`,
//! `notify_N`, `call_whole`, `notify_whole`) with the user's types and a closure calling the
//! method. Everything that does not depend on the method lives here, once.
//!
//! Every bound a user's type must meet is a trait of this module (the result and error ones are
//! the method table's, re-exported here) with its own `#[diagnostic::on_unimplemented]`
//! message, checked where the expansion names the type (an explicit type argument, or an
//! argument spanned at the type), so rustc reports it once, at the type, in jrpc's words. Where
//! a helper also bounds the type, the expansion calls the trait's own method first, at the same
//! place: rustc reports that with no note into this module, and leaves the helper's out. Their
//! blanket impls are `#[diagnostic::do_not_recommend]`, so the error names the jrpc trait rather
//! than serde's, without a list of serde's implementors.

use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::Arc;

use serde::de::DeserializeOwned;

use crate::dispatch::{Context, Methods, SchemaDoc, Whole};
pub use crate::dispatch::{IntoRpcError, RpcResult};
use crate::wire::RpcError;

#[path = "private/stub.rs"]
mod stub;
#[path = "private/subscription.rs"]
mod subscription;
#[path = "private/table.rs"]
mod table;

pub use stub::*;
pub use subscription::*;
pub use table::*;

/// Marks the types a method parameter may have. No supertrait (rustc reports a missing one as a
/// bound of the trait, with a note into this module): the helpers decode through its items.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a jrpc method parameter",
    label = "this type does not implement `serde::Deserialize` (owned), or is not `Send`",
    note = "parameters are decoded from the request: derive `serde::Deserialize` for `{Self}` and give it no borrowed fields"
)]
pub trait RpcParam: Sized {
    /// Names what is decoded from the request: the type itself.
    type Owned: DeserializeOwned + Send + 'static;

    /// Returns the parameter, from what was decoded.
    fn from_owned(owned: Self::Owned) -> Self;

    /// Returns the witness of this parameter type, which the expansion makes first, at the type:
    /// rustc reports the trait there with no note, and leaves out a helper's bound on the
    /// type at an argument spanned the same way (the same error at the same place).
    #[inline]
    fn witness() -> Param<Self> {
        Param(SchemaDoc::any(), PhantomData)
    }
}
#[diagnostic::do_not_recommend]
impl<T: DeserializeOwned + Send + 'static> RpcParam for T {
    type Owned = T;

    #[inline]
    fn from_owned(owned: T) -> T {
        owned
    }
}

/// Marks the types a service with `schema` describes: the JSON Schema of each parameter and result
/// is schemars'. Without the `schema` feature every type is one (with `{}`): the one error is
/// [`schema_feature`]'s.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no JSON Schema",
    label = "this type does not implement `schemars::JsonSchema`",
    note = "`#[rpc_service(schema)]` describes every parameter and result type: derive `schemars::JsonSchema` for `{Self}` (schemars 1.x), or leave `schema` out"
)]
pub trait RpcSchema {
    /// Returns the type's schema.
    fn schema() -> SchemaDoc;

    /// Returns a parameter's witness with its schema, made at the type as [`RpcParam::witness`] is.
    #[inline]
    fn describe(witness: Param<Self>) -> Param<Self>
    where
        Self: Sized,
    {
        Param(Self::schema(), witness.1)
    }

    /// Returns a subscription item's witness with its schema, made at the type as
    /// [`RpcItem::witness`] is.
    #[inline]
    fn item(witness: Item<Self>) -> Item<Self>
    where
        Self: Sized,
    {
        witness.with_schema(Self::schema())
    }

    /// Returns a success type's schema, which the expansion takes at the type as written: rustc
    /// reports a type without one there, with no note.
    #[inline]
    fn of(_ok: PhantomData<Self>) -> SchemaDoc
    where
        Self: Sized,
    {
        Self::schema()
    }
}
#[cfg(feature = "schema")]
#[diagnostic::do_not_recommend]
impl<T: schemars::JsonSchema + ?Sized> RpcSchema for T {
    #[inline]
    fn schema() -> SchemaDoc {
        SchemaDoc::of::<T>()
    }
}
#[cfg(not(feature = "schema"))]
impl<T: ?Sized> RpcSchema for T {
    #[inline]
    fn schema() -> SchemaDoc {
        SchemaDoc::any()
    }
}

/// Marks a runtime built with the `schema` feature: implemented only then.
#[diagnostic::on_unimplemented(
    message = "`#[rpc_service(schema)]` needs the `schema` feature of `jrpc-runtime`",
    label = "this service describes its types with JSON Schemas",
    note = "turn it on in Cargo.toml (`features = [\"schema\"]` on the `jrpc-runtime` dependency), or leave `schema` out"
)]
pub trait SchemaFeature {}
#[cfg(feature = "schema")]
impl SchemaFeature for () {}

/// Checks, once per service with `schema`, that the runtime can generate schemas.
#[inline]
pub fn schema_feature<T: SchemaFeature>() {}

/// Says what a served value must be: calls run concurrently, on any thread, sharing one value.
///
/// The lifetime only makes `for<'a> Self: Service<'a>` a bound rustc checks where
/// `into_methods` is called rather than also where an inherent `impl` defines it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be served by jrpc",
    label = "calls share one `{Self}` across threads",
    note = "a service must be `Send + Sync + 'static`: keep mutable state behind a `Mutex`, an `RwLock` or an atomic"
)]
pub trait Service<'a>: Sized + Send + Sync + 'static {}
impl<T: Send + Sync + 'static> Service<'_> for T {}

/// Marks the runtime's context, the only type a `&Context` parameter is given.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not `jrpc_runtime::Context`",
    label = "a `&Context` parameter is given the request's context",
    note = "only `&jrpc_runtime::Context` is injected; take a type of your own by value to read it from the params"
)]
pub trait Injected {
    /// Returns the context itself.
    fn from_context(ctx: &Context) -> &Self;
}

#[diagnostic::do_not_recommend]
impl Injected for Context {
    #[inline]
    fn from_context(ctx: &Context) -> &Self {
        ctx
    }
}

// ---------------------------------------------------------------------------------------------
// What a return type answers, decided by the type.
//
// `Probe::<R>::NEW.kind()` is `IsResult<T, E>` when `R` is `Result<T, E>` (under any name: an
// alias, `io::Result<T>`), else `IsValue<R>`: method lookup tries `Probe<R>` (an inherent method
// for `Probe<Result<T, E>>` only) before its `Deref` target `Fallback<R>` (for any `R`). The
// expansion names the concrete return type, so the choice is made where the type is known.
// ---------------------------------------------------------------------------------------------

/// Finds out whether `R` is a `Result`; see [`Probe::NEW`].
pub struct Probe<R>(Fallback<R>);

/// Answers for any type that is not a `Result`: what [`Probe`] dereferences to.
pub struct Fallback<R>(PhantomData<fn() -> R>);

impl<R> Probe<R> {
    /// Holds the probe of `R`.
    pub const NEW: Self = Self(Fallback(PhantomData));
}

impl<R> Deref for Probe<R> {
    type Target = Fallback<R>;

    #[inline]
    fn deref(&self) -> &Fallback<R> {
        &self.0
    }
}

impl<T, E> Probe<Result<T, E>> {
    /// Returns the kind of a `Result`: `Ok` answers a result, `Err` an error.
    #[inline]
    pub fn kind(&self) -> IsResult<T, E> {
        IsResult(PhantomData)
    }
}

impl<R> Fallback<R> {
    /// Returns the kind of any other type: the value is the result.
    #[inline]
    pub fn kind(&self) -> IsValue<R> {
        IsValue(PhantomData)
    }
}

/// Marks a return type that is a value, answered as the result.
pub struct IsValue<R>(PhantomData<fn() -> R>);

/// Marks a return type that is `Result<T, E>`.
pub struct IsResult<T, E>(PhantomData<fn() -> (T, E)>);

impl<R> Clone for IsValue<R> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<R> Copy for IsValue<R> {}
impl<T, E> Clone for IsResult<T, E> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, E> Copy for IsResult<T, E> {}

impl<R> IsValue<R> {
    /// Returns the answer: always a success.
    #[inline]
    pub fn split(self, value: R) -> Result<R, RpcError> {
        Ok(value)
    }
}

impl<T, E> IsResult<T, E> {
    /// Returns the answer, as it is.
    #[inline]
    pub fn split(self, result: Result<T, E>) -> Result<T, E> {
        result
    }
}

/// Names the success and error types a probed return type answers with.
pub trait Kind {
    /// `T` of `Result<T, E>`, or the value's own type.
    type Ok;
    /// `E` of `Result<T, E>`, or `RpcError` (never used) for a value.
    type Err;

    /// Returns the success type's schema in the method's description: `{}` unless [`at_described`]
    /// gave one.
    #[inline]
    fn schema(self) -> SchemaDoc
    where
        Self: Sized,
    {
        SchemaDoc::any()
    }
}

/// Holds a probe's kind with the success type's schema (a service with `schema`).
pub struct Described<K>(K, SchemaDoc);

impl<K: Kind> Kind for Described<K> {
    type Ok = K::Ok;
    type Err = K::Err;

    #[inline]
    fn schema(self) -> SchemaDoc {
        self.1
    }
}

impl<R> Kind for IsValue<R> {
    type Ok = R;
    type Err = RpcError;
}

impl<T, E> Kind for IsResult<T, E> {
    type Ok = T;
    type Err = E;
}

/// Returns a probe's kind, as an argument the expansion spans at a user's type (a call, so the span
/// covers the call).
#[inline]
pub fn at<K: Kind>(kind: K) -> K {
    kind
}

/// Returns a kind's success type, for [`RpcResult::check`].
#[inline]
pub fn ok_of<K: Kind>(_kind: K) -> PhantomData<K::Ok> {
    PhantomData
}

/// Returns a kind's error type, for [`IntoRpcError::check`].
#[inline]
pub fn err_of<K: Kind>(_kind: K) -> PhantomData<K::Err> {
    PhantomData
}

/// Does what [`at`] does, for a service with `schema`: the success type's schema comes along, taken
/// by the expansion with [`RpcSchema::of`] at the type as written.
#[inline]
pub fn at_described<K: Kind>(kind: K, schema: SchemaDoc) -> Described<K> {
    Described(kind, schema)
}

/// Carries a parameter type, as an argument the expansion spans at the user's type: a registration
/// helper's bound on it is then reported there. It carries the type's schema for the method's
/// description (`{}` unless the service has `schema`).
pub struct Param<P>(SchemaDoc, PhantomData<fn() -> P>);

impl<P> Param<P> {
    /// Returns the witness, as the expansion passes it to a helper, spanned as where it was made.
    #[inline]
    pub fn at(self) -> Self {
        self
    }
}

/// Stands for the runtime's `Context`, taken by value. Never implemented: a parameter of a type
/// named `Context` goes through [`Probe::param`], which asks for it only of the runtime's context,
/// where it is the one error. The helper's error at the same place is implied by it: rustc
/// compares the bound that failed there, [`RpcParam`]'s impl's, with these supertraits.
#[diagnostic::on_unimplemented(
    message = "the context is passed by reference: take `&Context`, not `Context`",
    label = "the request's context, taken by value",
    note = "a `&Context` parameter is given the request's context; parameters taken by value are decoded from `params`"
)]
pub trait ByReference<'a>: RpcParam + DeserializeOwned + Send + 'static {}

impl Probe<Context> {
    /// Returns the witness of a parameter of the runtime's `Context`: an error.
    #[inline]
    pub fn param(&self) -> Param<Context>
    where
        for<'a> Context: ByReference<'a>,
    {
        Param(SchemaDoc::any(), PhantomData)
    }

    /// Does what [`param`](Probe::param) does, for a service with `schema`.
    #[inline]
    pub fn described(&self) -> Param<Context>
    where
        for<'a> Context: ByReference<'a>,
    {
        Param(SchemaDoc::any(), PhantomData)
    }
}

impl<R> Fallback<R> {
    /// Returns the witness of a parameter of any other type.
    #[inline]
    pub fn param(&self) -> Param<R> {
        Param(SchemaDoc::any(), PhantomData)
    }

    /// Does what [`param`](Fallback::param) does, for a service with `schema`.
    #[inline]
    pub fn described(&self) -> Param<R>
    where
        R: RpcSchema,
    {
        Param(R::schema(), PhantomData)
    }
}

/// Returns the witness of parameter type `P`.
#[inline]
pub const fn param<P>() -> Param<P> {
    Param(SchemaDoc::any(), PhantomData)
}

/// Holds what the expansion says of a method besides its types: its wire name, the wire names of
/// its parameters, the text of its doc comment, whether it is `#[deprecated]`, and its Rust name.
#[derive(Clone, Copy)]
pub struct Meta(
    pub &'static str,
    pub &'static [&'static str],
    pub &'static str,
    pub bool,
    pub &'static str,
);

/// Completes the description [`Methods::register`] gave the method: the doc comment's
/// text, `#[deprecated]`, and the schemas of a service with `schema` (`{}` ones change nothing).
#[cold]
fn describe(table: &mut Methods, meta: &Meta, params: &[SchemaDoc], result: SchemaDoc) {
    let Meta(name, _, text, deprecated, _) = *meta;
    let Some(doc) = table.description(name) else {
        return;
    };
    let mut doc = doc.clone();
    if !text.is_empty() {
        doc = doc.with_doc_comment(text);
    }
    doc.deprecated = deprecated;
    doc.set_schemas(params.iter().cloned());
    if let (false, Some(slot)) = (result.is_any(), doc.result.as_mut()) {
        *slot = result;
    }
    let _ = table.describe(name, doc);
}

/// Says that a stub's success type (as written) agrees with what the server answers, for the kind
/// `K` of the method's return type. (`Self` is the stub's type, so that rustc, knowing it, cannot
/// pick an impl by `K` alone.)
#[diagnostic::on_unimplemented(
    message = "the client stub cannot tell the success type of this return type",
    label = "the stub reads its success type here",
    note = "the stub returns `Result<T, ClientError>` with `T` read from the signature: `T` of a return type written `Result<T, E>` (or `io::Result<T>`), else the type itself; here the type says otherwise (a `Result` under another name, or a type named `Result` that is not one)",
    note = "write the return type so that it shows the success type, or leave the stub out with `#[rpc_service(client = false)]`"
)]
pub trait OkOf<K: Kind> {
    /// Returns the decoded success value, as the stub returns it.
    fn from_ok(ok: K::Ok) -> Self;

    /// Does what [`from_ok`](Self::from_ok) does, with `K` given by a value: the expansion calls it
    /// at the success type as written, where rustc then reports an unmet `OkOf` with no note.
    #[inline]
    fn from_kind(_kind: K, ok: K::Ok) -> Self
    where
        Self: Sized,
    {
        Self::from_ok(ok)
    }
}

impl<R> OkOf<IsValue<R>> for R {
    #[inline]
    fn from_ok(ok: R) -> R {
        ok
    }
}

impl<T, E> OkOf<IsResult<T, E>> for T {
    #[inline]
    fn from_ok(ok: T) -> T {
        ok
    }
}

// ---------------------------------------------------------------------------------------------
// Registration helpers, one per shape: call or notification, and the number of parameters (or
// the whole params in one). They take no explicit type arguments: each type is inferred from an
// argument the expansion spans at the user's type (a `Param` witness per parameter, the probe's
// kind for the success and for the error type), and rustc reports an unmet bound at the argument
// it was inferred from, so at the type.
// ---------------------------------------------------------------------------------------------

/// Writes `call_N` and `notify_N` for one number of parameters. rustc's note on an unmet bound
/// ("required by a bound in `call_2`") then points at the bound here and at the one line that
/// makes the helper, instead of 34 written-out copies of the same function.
macro_rules! shape {
    ($call:ident, $notify:ident, $n:literal; $($p:ident: $P:ident),*) => {
        #[doc = concat!("Registers a call with ", $n, " parameters.")]
        #[allow(clippy::too_many_arguments)]
        #[track_caller]
        pub fn $call<S, $($P,)* KO, KE, F, Fut>(
            table: &mut Table,
            this: &Arc<S>,
            meta: Meta,
            $($p: Param<$P>,)*
            ok: KO,
            _err: KE,
            handler: F,
        ) where
            S: Send + Sync + 'static,
            $($P: RpcParam,)*
            KO: Kind,
            KO::Ok: RpcResult,
            KE: Kind,
            KE::Err: IntoRpcError,
            F: Fn(Arc<S>, ($($P,)*), Context) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = Result<KO::Ok, KE::Err>> + Send + 'static,
        {
            let this = Arc::clone(this);
            let result = table.methods().register(meta.0, meta.1, move |($($p,)*): ($($P::Owned,)*), ctx| {
                handler(Arc::clone(&this), ($($P::from_owned($p),)*), ctx)
            }).map(drop);
            table.registered(result, meta.0, meta.4);
            describe(table.methods(), &meta, &[$($p.0,)*], ok.schema());
        }

        #[doc = concat!("Registers a notification with ", $n, " parameters.")]
        #[allow(clippy::too_many_arguments)]
        #[track_caller]
        pub fn $notify<S, $($P,)* F, Fut>(
            table: &mut Table,
            this: &Arc<S>,
            meta: Meta,
            $($p: Param<$P>,)*
            handler: F,
        ) where
            S: Send + Sync + 'static,
            $($P: RpcParam,)*
            F: Fn(Arc<S>, ($($P,)*), Context) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = ()> + Send + 'static,
        {
            let this = Arc::clone(this);
            let result = table.methods().register_notification(meta.0, meta.1, move |($($p,)*): ($($P::Owned,)*), ctx| {
                handler(Arc::clone(&this), ($($P::from_owned($p),)*), ctx)
            }).map(drop);
            table.registered(result, meta.0, meta.4);
            describe(table.methods(), &meta, &[$($p.0,)*], SchemaDoc::any());
        }
    };
}

shape!(call_0, notify_0, 0;);
shape!(call_1, notify_1, 1; p0: P0);
shape!(call_2, notify_2, 2; p0: P0, p1: P1);
shape!(call_3, notify_3, 3; p0: P0, p1: P1, p2: P2);
shape!(call_4, notify_4, 4; p0: P0, p1: P1, p2: P2, p3: P3);
shape!(call_5, notify_5, 5; p0: P0, p1: P1, p2: P2, p3: P3, p4: P4);
shape!(call_6, notify_6, 6; p0: P0, p1: P1, p2: P2, p3: P3, p4: P4, p5: P5);
shape!(call_7, notify_7, 7; p0: P0, p1: P1, p2: P2, p3: P3, p4: P4, p5: P5, p6: P6);
shape!(call_8, notify_8, 8; p0: P0, p1: P1, p2: P2, p3: P3, p4: P4, p5: P5, p6: P6, p7: P7);
shape!(call_9, notify_9, 9; p0: P0, p1: P1, p2: P2, p3: P3, p4: P4, p5: P5, p6: P6, p7: P7, p8: P8);
shape!(call_10, notify_10, 10; p0: P0, p1: P1, p2: P2, p3: P3, p4: P4, p5: P5, p6: P6, p7: P7, p8: P8, p9: P9);
shape!(call_11, notify_11, 11; p0: P0, p1: P1, p2: P2, p3: P3, p4: P4, p5: P5, p6: P6, p7: P7, p8: P8, p9: P9, p10: P10);
shape!(call_12, notify_12, 12; p0: P0, p1: P1, p2: P2, p3: P3, p4: P4, p5: P5, p6: P6, p7: P7, p8: P8, p9: P9, p10: P10, p11: P11);
shape!(call_13, notify_13, 13; p0: P0, p1: P1, p2: P2, p3: P3, p4: P4, p5: P5, p6: P6, p7: P7, p8: P8, p9: P9, p10: P10, p11: P11, p12: P12);
shape!(call_14, notify_14, 14; p0: P0, p1: P1, p2: P2, p3: P3, p4: P4, p5: P5, p6: P6, p7: P7, p8: P8, p9: P9, p10: P10, p11: P11, p12: P12, p13: P13);
shape!(call_15, notify_15, 15; p0: P0, p1: P1, p2: P2, p3: P3, p4: P4, p5: P5, p6: P6, p7: P7, p8: P8, p9: P9, p10: P10, p11: P11, p12: P12, p13: P13, p14: P14);
shape!(call_16, notify_16, 16; p0: P0, p1: P1, p2: P2, p3: P3, p4: P4, p5: P5, p6: P6, p7: P7, p8: P8, p9: P9, p10: P10, p11: P11, p12: P12, p13: P13, p14: P14, p15: P15);

/// Registers a call whose one parameter is the whole `params`.
#[allow(clippy::too_many_arguments)]
#[track_caller]
pub fn call_whole<S, P, KO, KE, F, Fut>(
    table: &mut Table,
    this: &Arc<S>,
    meta: Meta,
    param: Param<P>,
    ok: KO,
    _err: KE,
    handler: F,
) where
    S: Send + Sync + 'static,
    P: RpcParam,
    KO: Kind,
    KO::Ok: RpcResult,
    KE: Kind,
    KE::Err: IntoRpcError,
    F: Fn(Arc<S>, Whole<P>, Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<KO::Ok, KE::Err>> + Send + 'static,
{
    let this = Arc::clone(this);
    let result = table
        .methods()
        .register(meta.0, meta.1, move |Whole(owned): Whole<P::Owned>, ctx| {
            handler(Arc::clone(&this), Whole(P::from_owned(owned)), ctx)
        })
        .map(drop);
    table.registered(result, meta.0, meta.4);
    describe(table.methods(), &meta, &[param.0], ok.schema());
}

/// Registers a notification whose one parameter is the whole `params`.
#[track_caller]
pub fn notify_whole<S, P, F, Fut>(
    table: &mut Table,
    this: &Arc<S>,
    meta: Meta,
    param: Param<P>,
    handler: F,
) where
    S: Send + Sync + 'static,
    P: RpcParam,
    F: Fn(Arc<S>, Whole<P>, Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let this = Arc::clone(this);
    let result = table
        .methods()
        .register_notification(meta.0, meta.1, move |Whole(owned): Whole<P::Owned>, ctx| {
            handler(Arc::clone(&this), Whole(P::from_owned(owned)), ctx)
        })
        .map(drop);
    table.registered(result, meta.0, meta.4);
    describe(table.methods(), &meta, &[param.0], SchemaDoc::any());
}
