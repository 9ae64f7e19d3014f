//! The `#[rpc_service]` attribute of jrpc.
//!
//! Use it through `jrpc_runtime` (feature `macros`, on by default), which
//! re-exports it: the generated code names the runtime by the absolute path
//! `::jrpc_runtime`, so this crate is not meant to be depended on directly.
//!
//! # On a trait
//!
//! ```ignore
//! use jrpc_runtime::{rpc_service, Context, RpcError};
//!
//! #[rpc_service(namespace = "calc")]
//! pub trait Calculator {
//!     /// Adds two integers.
//!     async fn add(&self, a: i64, b: i64) -> i64;
//!     async fn divide(&self, dividend: f64, divisor: f64) -> Result<f64, RpcError>;
//!     #[rpc(params = whole)]
//!     async fn sum(&self, numbers: Vec<i64>) -> i64;
//!     #[rpc(name = "get_data")]
//!     async fn data(&self) -> (String, u32);
//!     #[notification]
//!     async fn update(&self, values: Vec<i64>);
//!     async fn whoami(&self, ctx: &Context) -> String;
//! }
//! ```
//!
//! generates:
//!
//! - the trait, with each `async fn` rewritten to
//!   `fn ...(..) -> impl Future<Output = T> + Send`, so handlers run on a
//!   multi-threaded runtime (implementations may still be written as
//!   `async fn`); sync methods, doc comments and other attributes are kept;
//! - a provided method `fn into_methods(self) -> Methods` (for
//!   `Self: Sized + Send + Sync + 'static`) that registers every method in a
//!   new `Methods` table with `Methods::register`,
//!   `Methods::register_notification` for a `#[notification]`, or
//!   `Methods::register_subscription` for a `#[subscription]`;
//! - `{Trait}Client<C>` (or the name given with `client = "..."`), a client
//!   stub over any `C: Caller`: `new(caller)`, `with_encoding(ParamEncoding)`
//!   (params by position, the default, or by name), `caller()`,
//!   `into_caller()`, and one `async fn` per method with the same name and
//!   parameters (`&Context` left out), returning `Result<T, ClientError>`
//!   where `T` is the method's success type (`()` for a notification, which
//!   is sent without an id); a subscription's method is in an `impl` of its
//!   own, for `C: Subscriber` (see *Subscriptions*);
//! - `{Stub}Batch<'_, C>`, made by the stub's `batch()`: a method per service
//!   method, with its parameters, adding a call (it returns the
//!   `jrpc_runtime::Slot<T>` its answer is taken with) or a notification;
//!   `.await` on the batch sends it through `Caller::batch_raw` and gives the
//!   `BatchAnswers`.
//!
//! # On an inherent `impl` block
//!
//! Only `into_methods` is generated (as `pub fn`, in an `impl` block of its
//! own): without a trait there is nothing for a client to share. Every `fn`
//! of the block is a method of the service; keep constructors and helpers in
//! another `impl` block.
//!
//! # Options of `#[rpc_service(...)]`
//!
//! | option | effect |
//! | --- | --- |
//! | `namespace = "calc"` | wire names are `calc.add`, ... |
//! | `separator = "/"` | between namespace and name; default `.` |
//! | `rename_all = "camelCase"` | method wire names (not parameter names, nor names given with `#[rpc(name = ...)]`) follow one of serde's rules: `lowercase`, `UPPERCASE`, `PascalCase`, `camelCase`, `snake_case`, `SCREAMING_SNAKE_CASE`, `kebab-case`, `SCREAMING-KEBAB-CASE` |
//! | `client = "Name"` | the client stub's name; default `{Trait}Client` (traits only) |
//! | `client = false` | no client stub (traits only); its constraints (below) then do not apply |
//! | `client_error = MyError` | the stub's methods return `Result<T, MyError>`, converting every failure with `MyError: From<ClientError>` (traits only) |
//! | `schema` | the description of each method carries the JSON Schema of every parameter and result type (needs the runtime's `schema` feature; each type must implement `schemars::JsonSchema`) |
//! | `crate = "path"` | the path of the runtime in generated code; default `::jrpc_runtime` |
//!
//! # Method and parameter attributes
//!
//! - `#[rpc(name = "get_data")]` on a method: its wire name, used as written
//!   (`rename_all` does not apply; the namespace is still prefixed).
//! - `#[rpc(name = EXPR)]` on a method: its wire name is the value of a
//!   constant expression of type `&'static str`, such as a protocol crate's
//!   name for the method: `#[rpc(name = lsp_types::request::HoverRequest::METHOD)]`
//!   (an associated constant; its trait in scope, or written
//!   `<HoverRequest as Request>::METHOD`), `#[rpc(name = acp::AGENT_METHOD_NAMES.initialize)]`
//!   (a field of a constant), a `const` of one's own, or `concat!(...)`. It is
//!   used as written, as a literal is: `rename_all` does not apply and the
//!   namespace is prefixed (a protocol's constants are usually whole wire
//!   names, so such a service usually has no namespace). The server and the
//!   client stub both use the value, which is evaluated in a `const`: an
//!   expression that is not a `&str` or not constant is a compile error at
//!   it, as is a value that is empty or starts with `rpc.`. The macro cannot
//!   see the value, so it cannot compare it with the other methods' names: two
//!   methods with one wire name are then found where `into_methods` builds the
//!   table, which panics naming both methods (see *Decisions*).
//! - `#[rpc(params = whole)]` on a method with exactly one parameter (besides
//!   `&Context`): the whole `params` value decodes into that parameter, instead
//!   of an array or object of parameters. No parameter name is on the wire,
//!   so when `params` do not decode, the `-32602`'s `data` gives the path into
//!   the value instead: ``params.textDocument: missing field `uri` ``.
//! - `#[notification]` on a method: never answered when sent without an id
//!   (a call with an id is answered `null`); it returns nothing, and its stub
//!   sends a notification.
//! - `#[subscription(notification = ..., unsubscribe = ...)]` on a method: a
//!   subscription (see *Subscriptions*).
//! - `#[rpc(name = "x")]` on a parameter: its wire name, for params by name
//!   (and in the `-32602` that names the parameter). A string literal only:
//!   parameter names are checked against each other by the macro, and
//!   protocols publish no constants for them.
//!
//! The macro reads `#[rpc]`, `#[notification]` and `#[subscription]` by name,
//! before `cfg` is evaluated: they cannot be applied through `cfg_attr`, and
//! another attribute with one of these names cannot be used on a service's
//! methods.
//!
//! # Subscriptions
//!
//! ```ignore
//! use jrpc_runtime::{rpc_service, Context, Items, RpcError};
//!
//! #[rpc_service(namespace = "eth", separator = "_")]
//! pub trait PubSub {
//!     /// Subscribes to events of one kind: `newHeads`, `logs`...
//!     #[subscription(name = "subscribe", notification = "subscription", unsubscribe = "unsubscribe")]
//!     async fn subscribe(&self, kind: String, params: Option<Value>, ctx: &Context)
//!         -> Result<Items<Event>, RpcError>;
//! }
//! ```
//!
//! A `#[subscription]` method is called as any method is (`eth_subscribe`,
//! its parameters typed and decoded as a method's: by position or by name,
//! trailing `Option`s optional, `&Context` injected, `params = whole`), and
//! returns the subscription's items: `Items<T>`, or `Result<Items<T>, E>`
//! with `E: Into<RpcError>` (an `Err` answers the subscribe call, and no
//! subscription opens). The runtime answers the call with the subscription's
//! id, then sends each item as a notification `{"method": "eth_subscription",
//! "params": {"subscription": ID, "result": ITEM}}`, until the stream ends,
//! the client calls `eth_unsubscribe(ID)`, or the connection closes: see
//! `Methods::register_subscription`, which the table registers it with, and
//! `Items`, for a subscription's bound and what a full bound does. `T` is the
//! item type: `Serialize` on the server, `Deserialize` for the stub.
//!
//! The keys of `#[subscription(...)]`:
//!
//! | key | value |
//! | --- | --- |
//! | `name` | the subscribe method's wire name; default the method's own name (after `rename_all`) |
//! | `notification` | the method of the notifications that carry the items (required) |
//! | `unsubscribe` | the method that ends a subscription, given its id (required; the runtime serves it) |
//! | `params = whole` | as in `#[rpc(...)]`: the whole `params` value is the one parameter |
//!
//! Each name is a string literal or a constant expression, as `#[rpc(name =
//! EXPR)]` takes. The namespace is prefixed to all three, as it is to a name
//! given in `#[rpc(name = ...)]` (`namespace = "eth", separator = "_"` and
//! `name = "subscribe"` make `eth_subscribe`, as jsonrpsee names them);
//! `rename_all` applies only to the default name, the method's own. Several
//! subscriptions may share one notification and one unsubscribe method (an
//! Ethereum node's `eth_subscription` and `eth_unsubscribe` serve every
//! kind): the unsubscribe method is served once, for all of them. It may be
//! neither another method's name nor its own subscribe method's.
//!
//! On the client stub, the method of the same name, with the same
//! parameters, returns `Result<Subscription<T>, ClientError>`: a typed
//! stream of the items from the answer on, which unsubscribes when dropped.
//! It is in an `impl` block bounded `C: Subscriber`, so it exists on a stub
//! over a connection that stays open (a `Peer`, the WebSocket client) and
//! not on one over HTTP, which cannot carry the notifications; a typed batch
//! has no subscriptions.
//!
//! # Parameters
//!
//! A parameter of type `&Context` (any path ending in `Context`, taken by
//! shared reference) is given the request's context by the runtime, never
//! read from `params`, and may stand anywhere in the list; that the type is
//! `jrpc_runtime::Context` is checked by type. Every other parameter is read
//! from `params`, a type of one's own named `Context` included, by position
//! or by its wire name; one that is missing or does not decode is `-32602`
//! whose `data` names it by its wire name (`parameter "textDocument" is
//! missing`). A method reads at most 16 parameters (gather more in a struct
//! and take it with `params = whole`).
//!
//! # Results: decided by the type
//!
//! A method returns `T: Serialize`, or `Result<T, E>` with
//! `E: Into<RpcError>`. Whether the return type is a `Result` is decided by
//! the type, where the crate is compiled, not by how it is written: an alias
//! (`type Answer = Result<u8, RpcError>`, `io::Result<T>`, a crate's own
//! `Result<T>`) answers `Ok` as the result and `Err` as an error, and a type
//! of one's own that happens to be named `Result` answers as a value.
//!
//! The client stub must name the success type in its signature, so it reads
//! it from the signature: `T` of a return type written `Result<T, E>` or
//! `Something::Result<T>`, else the whole type. When the type says otherwise
//! (an alias such as `Answer` that hides a `Result`, or a look-alike named
//! `Result`), that is one compile error at the return type: write the
//! `Result` out, or leave the stub out with `client = false`.
//!
//! Methods may be sync (`fn`): they run as plain calls inside the handler's
//! future. A method gives a future when it is an `async fn`, or a `fn`
//! returning `impl Future<Output = T>` or `Pin<Box<dyn Future<Output = T> +
//! Send>>` (a boxed future keeps the trait dyn-compatible): the future is
//! awaited, `T` answers, and the stub returns `T`. A boxed future without
//! `Send` is one error at its `dyn`.
//!
//! # The client stub's name
//!
//! The stub is defined in a hidden module and brought into the trait's
//! module by a glob import, so a type of the same name there is not a
//! clash of definitions with errors all over: it is one error, at the
//! trait's name (or at `client = "..."`), saying to rename the stub with
//! `client = "..."` or to leave it out with `client = false`.
//!
//! # Supertraits
//!
//! A service trait may have supertraits (`Send + Sync`, or any trait of
//! one's own). Their methods are not served and are not on the stub: the
//! macro sees only the trait it is put on. To serve a supertrait's methods,
//! put `#[rpc_service]` on the supertrait too and add its table:
//! `methods.merge(Base::into_methods(service.clone()))` (both tables from
//! one value: implement both traits for a cheap `Clone` handle such as an
//! `Arc`).
//!
//! # Rules (each a compile error pointing at the guilty token)
//!
//! Methods take `&self` (calls run concurrently on one shared value); they
//! and the trait are not generic over types (lifetime parameters on methods
//! are fine: they change no type on the wire), and the trait has no
//! associated types (the stub needs concrete types) nor `Self` in a
//! method's parameters or result; parameters are plain names (the name is
//! the wire name) of owned types, with no borrow inside (params are decoded
//! from the request body, which nothing may borrow from); results are
//! owned, or `'static` borrows when there is no stub (the stub decodes into
//! an owned value); a notification returns nothing; wire names are unique
//! (for a name given by an expression, when the table is built), not empty
//! and do not start with `rpc.` (reserved by JSON-RPC 2.0);
//! `params = whole` needs exactly one parameter; a method has at most one
//! `&Context`; methods may not be named `into_methods` (nor, with a stub,
//! `new`, `with_encoding`, `caller` or `into_caller`, the stub's own
//! methods) — keep the wire name with `#[rpc(name = "...")]`; a
//! `#[subscription]` method is `async` (or returns a future), returns
//! `Items<T>` or `Result<Items<T>, E>` written out (the macro reads `T` from
//! the signature: an alias that hides it is "no item type"), has
//! `notification` and `unsubscribe`, and carries neither `#[notification]`
//! (it is answered its id) nor `#[rpc]` (its keys are in
//! `#[subscription(...)]`). The stub
//! derives `Clone` and `Debug`: a method named `clone` or `fmt` is allowed,
//! and then `client.clone()` calls the service; write `Clone::clone(&client)`
//! for a copy of the stub, or rename the Rust method.
//!
//! Parameter, result and error types are checked by rustc, through bounds
//! reported at each type, so "`Foo` cannot be a jrpc method parameter"
//! points at `Foo`, once. With a stub, parameter types must also be
//! `Serialize` and success types `Deserialize`, each its own error at the
//! type (a type missing both derives gets one error per missing derive).
//!
//! The attribute applied twice, `#[async_trait]` left on the trait (above or
//! below `#[rpc_service]`), `#[rpc]` on the trait itself or on an item that
//! is not a method, and `#[rpc_service]` on a method are each one error
//! saying what to do. With `#[async_trait]`, the trait is emitted as
//! `#[async_trait]` makes it, so impls that carry it too add no error of
//! their own: the one error says to remove it from the trait and the impls.
//!
//! # Decisions
//!
//! - `#[cfg]` on a parameter is honoured, as rustc honours it on any
//!   function: in a build where it is false the parameter is not decoded,
//!   not described, and not on the stub's method, so a parameter that exists
//!   on one platform only needs no second method. The macro cannot evaluate
//!   `cfg`, so such a method is registered once per combination of its
//!   parameters' distinct `#[cfg]` predicates, each registration under the
//!   `#[cfg]` that selects it (the compiler keeps exactly one); the stub
//!   carries the `#[cfg]`s on its parameters. `params = whole` decodes into
//!   its parameter in every build, so a `#[cfg]` there is one error at it.
//! - `#[cfg]` on a method is honoured: its registration and its stub method
//!   carry the same `#[cfg]`. Two methods may share a wire name under
//!   `#[cfg]`s that exclude each other: the macro cannot evaluate `cfg`, so
//!   it emits the duplicate-name error under `#[cfg(all(first, second))]`,
//!   where it fires exactly in the builds that have both.
//! - `#[allow(...)]` on a method, a parameter or the trait is copied onto
//!   the stub's copy of it (`#[expect(...)]` as `#[allow(...)]`, as the stub
//!   may not trip the lint), so `#![deny(warnings)]` holds there too.
//! - A trait method with a default body gets `async move { body }` as its
//!   future; add `Send + Sync` supertraits if the body uses `self` across an
//!   `.await`.
//! - The stub has the trait's visibility (a `pub` stub of a private trait
//!   would expose private types), and carries `#[allow(dead_code)]`, as does
//!   `into_methods`: a private service need not use them. Its type parameter
//!   is `C`, or `JrpcCaller` when a method's signature names a type `C`.
//! - When the service has errors, the macro still emits the item (helper
//!   attributes removed) with stand-ins for `into_methods` and the stub, so
//!   one mistake shows as one error, not as errors wherever the service is
//!   used. A stand-in repeats no type it cannot (`impl Trait`, `Self`, a
//!   method's own lifetime or type parameter).
//! - A syntax error in the item was reported by rustc before the attribute
//!   ran, and is not reported again. When it is inside a method's body, the
//!   service is read with the bodies set aside and generated as usual (the
//!   bodies put back as written); otherwise the item is emitted without the
//!   helper attributes.
//! - Registering a method cannot fail for a name the macro knows: it checks
//!   every such name (two methods under `#[cfg]`s that exclude each other
//!   included). A name given by an expression is checked in a `const` (a
//!   `&str`, not empty, not `rpc.`); a clash between it and another method's
//!   name is a mistake in the service's definition that only the built table
//!   shows, so `into_methods` panics there, naming the service, both methods
//!   and the name (its doc then has a `# Panics` section), rather than leave
//!   one method out (generated code's registration errors were assertions in
//!   debug builds only, as none could happen). No input from outside can
//!   reach it: it shows on the first call of `into_methods`, in any test that
//!   builds the table.
//! - Each method is registered by one call of a helper of the runtime's
//!   `__private` module for its shape (call or notification, number of
//!   parameters), whose bounds are the runtime's `RpcParam`, `RpcResult` and
//!   `IntoRpcError`. Each type is inferred from an argument spanned at the
//!   user's type, so rustc reports an unmet bound there, once; a future
//!   that is not `Send` is blamed on the method's name. A parameter's type
//!   is not repeated in `into_methods` (it is inferred from the handler's
//!   call of the method), so a type that does not resolve is one error, at
//!   the signature.
//! - On an inherent `impl` block, `into_methods` requires
//!   `Self: Send + Sync + 'static` (written `for<'jrpc> Self: Service<'jrpc>`
//!   so that rustc checks it where `into_methods` is called, once, rather
//!   than also where the block defines it). Methods of the block get
//!   `#[allow(clippy::unused_self)]`: `&self` is required of them, used or
//!   not.
//! - `#[deprecated]` is copied onto the stub's method; registering a
//!   deprecated method is not a use of it.
//! - Each registration also describes its method, for the OpenRPC document
//!   and `rpc.discover`: the doc comment's text (its `#[doc = "..."]`
//!   literals; a doc from a macro such as `include_str!` is left out) and
//!   whether it is `#[deprecated]`; parameters and whether each is required
//!   come from the runtime, by type. With `schema`, each parameter's witness
//!   and the success type's also carry the type's JSON Schema, so a type
//!   without `JsonSchema` is one error at that type; without `schema`
//!   nothing is asked of the types. `schema` is a choice per service, not a
//!   cargo feature of this crate: a feature turned on by one crate in the
//!   build would otherwise ask schemas of every other crate's services.
//! - A subscription is described as its subscribe method (its result the
//!   subscription's id) carrying the subscription in an `x-subscription`
//!   member: the notification's and the unsubscribe method's names, and the
//!   item's schema (with `schema`; else `{}`, as any result is described).
//!   The runtime describes the unsubscribe method (`subscription` in, a
//!   boolean out). See `Methods::openrpc`.
//! - A subscription is `async` (or returns a future), where a method may be
//!   sync: the runtime checks that the call's connection can carry
//!   notifications (and has room for one more subscription), then awaits the
//!   future for the items, and opening a subscription usually waits on
//!   something (a topic, a channel, a first value). One shape keeps the
//!   trait, the handler and the stub's `async` method alike; a sync `fn` is
//!   one error at `fn`, saying to write `async fn`.
//! - A subscription's names are checked as a method's are: literals by the
//!   macro (not empty, not `rpc.`, no clash of the subscribe or unsubscribe
//!   method with another method's name; a shared unsubscribe method is no
//!   clash), constants in `const`s and, for a clash, where `into_methods`
//!   builds the table, which panics naming the service, both methods and the
//!   name. The notification is no method of the table: its name may be any
//!   but an empty one or one starting with `rpc.`.

mod ast;
mod attr;
mod case;
mod ctxt;
mod expand;
mod recover;
mod ty;
mod valid;

use proc_macro::TokenStream;

/// Turns a trait or an inherent `impl` block into a JSON-RPC service. See the
/// [crate documentation](crate) for options, attributes and rules.
#[proc_macro_attribute]
pub fn rpc_service(args: TokenStream, input: TokenStream) -> TokenStream {
    rpc_service_impl(args.into(), input.into()).into()
}

fn rpc_service_impl(
    args: proc_macro2::TokenStream,
    input: proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    let mut cx = ctxt::Ctxt::new();
    let args = attr::ServiceArgs::parse(args, &mut cx);
    // A syntax error was reported by rustc before the attribute ran; when
    // it is inside a body, the service is read with the bodies set aside.
    let (mut item, bodies) = match syn::parse2::<syn::Item>(input.clone()) {
        Ok(item) => (item, Vec::new()),
        Err(_) => {
            let (aside, bodies) = recover::set_bodies_aside(&input);
            match syn::parse2::<syn::Item>(aside) {
                Ok(item) if !bodies.is_empty() => (item, bodies),
                _ => {
                    let (result, conditional) = cx.finish();
                    let mut out = errors(result);
                    out.extend(conditional);
                    out.extend(recover::strip_helpers(input));
                    return out;
                }
            }
        }
    };
    // The inner attribute serves the item; this one only reports.
    if let Some(inner) = ast::nested_service(&item) {
        valid::applied_twice(inner, &mut cx);
        let (result, _) = cx.finish();
        let mut out = errors(result);
        out.extend(input);
        return out;
    }
    let service = match ast::Service::from_item(&mut item, &args, &mut cx) {
        Ok(service) => {
            valid::check(&service, &args, &mut cx);
            Some(service)
        }
        Err(misplaced) => {
            valid::misplaced(&misplaced, &item, &mut cx);
            None
        }
    };
    let (result, mut out) = cx.finish();
    match (result, service) {
        (Ok(()), Some(service)) => out.extend(expand::expand(item, &service, &args)),
        (result, service) => {
            out.extend(errors(result));
            out.extend(expand::fallback(item, service.as_ref(), &args));
        }
    }
    recover::restore(out, &bodies)
}

fn errors(result: Result<(), syn::Error>) -> proc_macro2::TokenStream {
    result
        .err()
        .map(|e| e.to_compile_error())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
