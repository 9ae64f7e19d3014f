//! The rules a service must follow.
//!
//! Every rule lives here, so expansion never finds a new error. Each rule
//! reports at the smallest guilty token and the checks go on after a
//! failure, so one build shows every problem, each once.

use std::collections::HashMap;

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::{GenericParam, Item, ItemImpl, Pat, Type};

use crate::ast::{
    Kind, Method, Misplaced, Output, Param, ParamKind, Service, WireName, is_context,
};
use crate::attr::{Client, MethodName, ServiceArgs, cfg_predicate};
use crate::ctxt::Ctxt;
use crate::ty::Scan;

mod subscription;

use subscription::{check_subscription, check_subscription_names};

/// Names the generated code defines next to the user's methods.
pub(crate) const INTO_METHODS: &str = "into_methods";
/// Names of the client stub's own methods.
pub(crate) const CLIENT_METHODS: &[&str] =
    &["new", "with_encoding", "caller", "into_caller", "batch"];
/// Caps the parameters a method may read from `params`: the runtime decodes
/// tuples of up to 16.
pub(crate) const MAX_PARAMS: usize = 16;

pub(crate) fn check(service: &Service, args: &ServiceArgs, cx: &mut Ctxt) {
    if check_stray(service, cx) {
        // `#[async_trait]` rewrote the methods: every other rule would
        // report what it wrote, not what the user did.
        return;
    }
    check_kind(&service.kind, cx);
    if let (Kind::Impl { .. }, Client::Named(_, lit)) = (&service.kind, &args.client) {
        cx.error_spanned(
            lit,
            "`client` applies to a trait: an `impl` block has no client stub; remove the option",
        );
    }
    if let (Kind::Impl { .. }, Client::Off(lit)) = (&service.kind, &args.client) {
        cx.error_spanned(
            lit,
            "`client` applies to a trait: an `impl` block has no client stub; remove the option",
        );
    }
    let namespace_reserved = check_namespace(args, cx);
    for method in &service.methods {
        check_method(method, service, namespace_reserved, cx);
    }
    check_duplicates(&service.methods, cx);
}

/// Attributes where they do not belong. Returns whether `#[async_trait]`
/// already rewrote the trait.
fn check_stray(service: &Service, cx: &mut Ctxt) -> bool {
    let stray = &service.stray;
    for (attr, what) in &stray.helpers {
        if attr.path().is_ident("rpc") && matches!(*what, "a trait" | "an `impl` block") {
            cx.error_spanned(
                attr,
                format_args!(
                    "`#[rpc]` goes on methods and parameters, not on {what}: give service \
                     options to the attribute itself, `#[rpc_service(...)]`"
                ),
            );
        } else if attr.path().is_ident("rpc") {
            cx.error_spanned(
                attr,
                format_args!("`#[rpc]` goes on methods and parameters, not on {what}: remove it"),
            );
        } else {
            let name = if attr.path().is_ident("subscription") {
                "subscription"
            } else {
                "notification"
            };
            cx.error_spanned(
                attr,
                format_args!("`#[{name}]` goes on a method, not on {what}: remove it"),
            );
        }
    }
    for attr in &stray.services {
        cx.error_spanned(
            attr,
            "`#[rpc_service]` goes on the trait or the `impl` block, not on its methods: remove \
             this one",
        );
    }
    // Its boxed futures and `'async_trait` lifetimes are not what a jrpc
    // service is written with; `#[rpc_service]` makes native futures `Send`.
    if let Some(attr) = &stray.async_trait {
        cx.error_spanned(
            attr,
            "`#[async_trait]` is not used with `#[rpc_service]`: remove it here and from the \
             impls; write `async fn` in the trait, and `#[rpc_service]` makes its futures `Send`",
        );
    }
    if let Some(span) = stray.async_trait_expanded {
        cx.error_at(
            span,
            "`#[async_trait]` rewrote this trait before `#[rpc_service]` could read it: remove \
             `#[async_trait]` here and from the impls; write `async fn` in the trait, and \
             `#[rpc_service]` makes its futures `Send`",
        );
        return true;
    }
    false
}

fn check_kind(kind: &Kind, cx: &mut Ctxt) {
    match kind {
        Kind::Trait {
            generics,
            assoc_types,
            ..
        } => {
            // The stub and the method table need one concrete type per
            // parameter; a generic trait has none.
            if !generics.params.is_empty() {
                cx.error_spanned(
                    generics,
                    "a jrpc service trait cannot be generic: params and results are decoded \
                     into concrete types; remove the generic parameters",
                );
            }
            // The client stub cannot name `Self::Item`.
            for ident in assoc_types {
                cx.error_spanned(
                    ident,
                    "a jrpc service trait cannot have associated types: the client stub \
                     needs concrete types; use a concrete type in the signatures",
                );
            }
        }
        Kind::Impl { generics, .. } => {
            if !generics.params.is_empty() {
                cx.error_spanned(
                    generics,
                    "`#[rpc_service]` cannot be used on a generic `impl` block: put it on an \
                     `impl` for a concrete type",
                );
            }
        }
    }
}

/// Checks the namespace; returns whether it alone makes every wire name
/// reserved (reported once, here, instead of once per method).
fn check_namespace(args: &ServiceArgs, cx: &mut Ctxt) -> bool {
    let Some(namespace) = &args.namespace else {
        return false;
    };
    let value = namespace.value();
    if value.is_empty() {
        cx.error_spanned(
            namespace,
            "`namespace` cannot be empty: leave the option out for no namespace",
        );
    }
    if format!("{value}{}", args.separator).starts_with("rpc.") {
        cx.error_spanned(
            namespace,
            "this namespace makes every method name start with `rpc.`, which JSON-RPC 2.0 \
             reserves for the protocol: choose another namespace",
        );
        return true;
    }
    false
}

fn check_method(method: &Method, service: &Service, namespace_reserved: bool, cx: &mut Ctxt) {
    let sig = &method.sig;

    check_receiver(method, &service.kind, cx);

    // One handler per wire name, with one type per parameter. Lifetime
    // parameters change no type, so they are fine.
    if let Some(param) = sig
        .generics
        .params
        .iter()
        .find(|p| !matches!(p, GenericParam::Lifetime(_)))
    {
        cx.error_spanned(
            param,
            "jrpc methods cannot be generic over types: params are decoded into concrete \
             types; remove the type parameters",
        );
    }
    if let Some(unsafety) = &sig.unsafety {
        cx.error_spanned(
            unsafety,
            "jrpc methods cannot be `unsafe`: a remote caller cannot uphold a safety contract",
        );
    }
    if let Some(abi) = &sig.abi {
        cx.error_spanned(abi, "jrpc methods cannot have an `extern` ABI: remove it");
    }

    // Handlers run on a multi-threaded runtime: a boxed future must say
    // it is `Send` (an `async fn` is made `Send` by the macro).
    if let Some(dyn_) = &method.boxed_future
        && !dyn_.bounds.iter().any(|bound| {
            matches!(bound, syn::TypeParamBound::Trait(t)
                if t.path.segments.last().is_some_and(|s| s.ident == "Send"))
        })
    {
        cx.error_spanned(
            dyn_,
            "the future of a jrpc method must be `Send`: handlers run on a multi-threaded \
             runtime; write `dyn Future<Output = ...> + Send`",
        );
    }
    check_reserved_ident(method, service, cx);
    check_subscription(method, cx);
    check_output(method, service, cx);
    check_params(method, service, cx);

    // Method names. A name given by an expression is checked where the expansion evaluates
    // it, in a `const`.
    if let Some(MethodName::Literal(lit)) = method.attrs.name_attr()
        && lit.value().is_empty()
    {
        cx.error_at(
            method.wire_name_span(),
            "a jrpc method name cannot be empty: write one, or remove `name = \"\"` to use \
             the method's own name",
        );
    }
    if !namespace_reserved
        && method
            .wire_name
            .known()
            .is_some_and(|name| name.starts_with("rpc."))
    {
        cx.error_at(
            method.wire_name_span(),
            "method names starting with `rpc.` are reserved by JSON-RPC 2.0 for the protocol: \
             choose another name",
        );
    }
    check_subscription_names(method, namespace_reserved, cx);
}

fn check_receiver(method: &Method, kind: &Kind, cx: &mut Ctxt) {
    // Calls run concurrently on one shared service, so every method borrows
    // it: `&self`, nothing else.
    let Some(receiver) = &method.receiver else {
        let ident = &method.sig.ident;
        match kind {
            // Every `fn` of the block is a method of the service, so an
            // associated function (a constructor) belongs in another block.
            Kind::Impl { .. } => cx.error_spanned(
                ident,
                format_args!(
                    "`{ident}` has no `self`, and every `fn` of a `#[rpc_service]` impl is a \
                     jrpc method: move `{ident}` to another `impl` block (or take `&self` to \
                     serve it)"
                ),
            ),
            Kind::Trait { .. } => cx.error_spanned(
                ident,
                "jrpc methods must take `&self`: add `&self` as the first parameter",
            ),
        }
        return;
    };
    let found = if receiver.colon_token.is_some() {
        match &*receiver.ty {
            Type::Reference(r) if r.mutability.is_none() && is_self(&r.elem) => return,
            _ => "a typed `self`".to_owned(),
        }
    } else {
        match (&receiver.reference, &receiver.mutability) {
            (Some(_), None) => return,
            (Some(_), Some(_)) => {
                cx.error_spanned(
                    receiver,
                    "jrpc methods must take `&self`, not `&mut self`: calls run concurrently; \
                     keep mutable state behind a `Mutex`, an `RwLock` or an atomic",
                );
                return;
            }
            (None, Some(_)) => "`mut self`".to_owned(),
            (None, None) => "`self`".to_owned(),
        }
    };
    cx.error_spanned(
        receiver,
        format_args!(
            "jrpc methods must take `&self`, not {found}: one service value serves every call"
        ),
    );
}

fn is_self(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.is_ident("Self"))
}

/// Names the generated code defines itself.
fn check_reserved_ident(method: &Method, service: &Service, cx: &mut Ctxt) {
    // `r#new` defines `new` as well.
    let ident = method.sig.ident.unraw().to_string();
    let owner = if ident == INTO_METHODS {
        "the generated `into_methods`".to_owned()
    } else if let Some(client) = &service.client {
        if CLIENT_METHODS.contains(&ident.as_str()) {
            format!("the generated `{}::{ident}`", client.unraw())
        } else {
            return;
        }
    } else {
        return;
    };
    cx.error_spanned(
        &method.sig.ident,
        format_args!(
            "the method name `{ident}` is taken by {owner}: rename the method and keep its wire \
             name with `#[rpc(name = \"{ident}\")]`"
        ),
    );
}

fn check_output(method: &Method, service: &Service, cx: &mut Ctxt) {
    let Some(written) = &method.output_ty else {
        return;
    };
    if method.is_notification() {
        // Nobody receives a notification's answer, and a call to one is
        // answered `null`.
        if !matches!(method.output, Output::Unit) {
            cx.error_spanned(
                written,
                "a `#[notification]` method cannot return a value: a notification is never \
                 answered; remove the return type",
            );
        }
        return;
    }
    let stub = service.client.is_some();
    let in_trait = matches!(service.kind, Kind::Trait { .. });
    let scan = Scan::of(written);
    if let Some(imp) = scan.impls.first() {
        cx.error_spanned(
            imp,
            "jrpc methods need a concrete result type, not `impl Trait`: the answer is encoded \
             from it (and the client stub decodes into it); name the type",
        );
        return;
    }
    if in_trait && let Some(segment) = scan.selfs.first() {
        cx.error_spanned(
            segment,
            "a jrpc service trait cannot name `Self` in a result: the client stub has no \
                 `Self` to decode into; use a concrete type",
        );
        return;
    }
    // The answer is encoded after the call returns, from a value the method
    // gives away; the stub decodes it into a value it owns.
    for r in &scan.refs {
        if r.lifetime.as_ref().is_none_or(|l| l.ident != "static") {
            cx.error_spanned(
                r,
                "a jrpc result cannot be borrowed: the answer is sent after the call returns; \
                 return an owned type",
            );
            return;
        }
        if stub {
            let hint = owned_hint(&r.elem);
            cx.error_spanned(
                r,
                format_args!(
                    "the client stub decodes the result into an owned value: {hint} (or leave \
                     the stub out with `#[rpc_service(client = false)]`)"
                ),
            );
            return;
        }
    }
    if let Some(lifetime) = scan.lifetimes.first() {
        cx.error_spanned(
            lifetime,
            "a jrpc result cannot borrow: the answer is sent after the call returns; return an \
             owned type (`'static` data, `String`, `Vec`...)",
        );
    }
}

/// Returns what to take instead of a borrow of `elem`.
fn owned_hint(elem: &Type) -> String {
    match elem {
        Type::Path(p) if p.path.is_ident("str") => "use `String` instead of `&str`".to_owned(),
        Type::Slice(_) => "use a `Vec` instead of a slice".to_owned(),
        _ => "use the value itself (remove the `&`)".to_owned(),
    }
}

fn check_params(method: &Method, service: &Service, cx: &mut Ctxt) {
    let mut context: Option<&Param> = None;
    let mut names: HashMap<&str, &Param> = HashMap::new();
    let in_trait = matches!(service.kind, Kind::Trait { .. });
    for param in &method.params {
        match param.kind {
            ParamKind::Context => {
                // The runtime has one context per call to give.
                if context.is_some() {
                    cx.error_spanned(
                        &param.ty,
                        "a jrpc method takes at most one `&Context` parameter: remove this one",
                    );
                }
                context.get_or_insert(param);
                if let Some(name) = &param.attrs.name {
                    cx.error_spanned(
                        name,
                        "the context is not read from `params`, so it has no wire name: remove \
                         `name = ...`",
                    );
                }
            }
            ParamKind::Value => {
                // The name is the parameter's wire name.
                if let Pat::Wild(_) = &*param.pat {
                    cx.error_spanned(
                        &param.pat,
                        "jrpc parameters need a name, not `_`: the name is the parameter's wire \
                         name; name it (`#[rpc(name = \"...\")]` sets another wire name)",
                    );
                } else if param.ident().is_none() {
                    cx.error_spanned(
                        &param.pat,
                        "jrpc parameters must be plain names, not patterns: the name is the \
                         parameter's wire name; bind a name and destructure it in the body",
                    );
                }
                check_param_type(&param.ty, in_trait, cx);
                if param
                    .attrs
                    .name
                    .as_ref()
                    .is_some_and(|n| n.value().is_empty())
                {
                    cx.error_at(
                        param.wire_name_span(),
                        "a parameter name cannot be empty: write one, or remove `name = \"\"` \
                         to use the parameter's own name",
                    );
                } else if !param.wire_name.is_empty() {
                    if names.contains_key(param.wire_name.as_str()) {
                        cx.error_at(
                            param.wire_name_span(),
                            format_args!(
                                "two parameters have the wire name `{}`: rename one with \
                                 `#[rpc(name = \"...\")]`",
                                param.wire_name
                            ),
                        );
                    } else {
                        names.insert(&param.wire_name, param);
                    }
                }
            }
        }
    }
    check_param_count(method, cx);
}

/// `params = whole` has exactly one parameter, in every build; others at most [`MAX_PARAMS`].
fn check_param_count(method: &Method, cx: &mut Ctxt) {
    let count = method.values().count();
    // `params = whole` decodes into one parameter in every build.
    if method.whole().is_some()
        && let Some(cfg) = method.values().find_map(|param| param.cfgs.first())
    {
        cx.error_spanned(
            cfg,
            "`params = whole` decodes `params` into its one parameter in every build: remove \
             this `#[cfg]`, or put the `#[cfg]` on the method",
        );
    }
    if let Some(whole) = method.whole() {
        let found = match count {
            1 => return,
            0 => "none".to_owned(),
            n => n.to_string(),
        };
        cx.error_spanned(
            whole,
            format_args!(
                "`params = whole` needs exactly one parameter (besides `&Context`) to decode \
                 `params` into, found {found}"
            ),
        );
    } else if let Some(extra) = method.values().nth(MAX_PARAMS) {
        // The runtime decodes tuples of up to 16 parameters.
        cx.error_spanned(
            &extra.pat,
            format_args!(
                "a jrpc method takes at most {MAX_PARAMS} parameters (besides `&Context`), found \
                 {count}: gather them in a struct that derives `serde::Deserialize`, and take it \
                 with `#[rpc(params = whole)]`"
            ),
        );
    }
}

fn check_param_type(ty: &Type, in_trait: bool, cx: &mut Ctxt) {
    let scan = Scan::of(ty);
    if let Some(imp) = scan.impls.first() {
        cx.error_spanned(
            imp,
            "jrpc parameters need a concrete type, not `impl Trait`: params are decoded into it",
        );
        return;
    }
    if in_trait && let Some(segment) = scan.selfs.first() {
        cx.error_spanned(
            segment,
            "a jrpc service trait cannot name `Self` in a parameter: the method table and \
                 the client stub need a concrete type; use one",
        );
        return;
    }
    // Params are decoded from the request body into values the handler
    // owns; nothing outlives the body to borrow from.
    if let Some(r) = scan.refs.first() {
        let outermost = top_reference(ty).is_some_and(|top| std::ptr::eq(top, *r));
        let message = if is_context(&r.elem) && r.mutability.is_some() && outermost {
            "the context is shared by reference: take `&Context`, not `&mut Context`".to_owned()
        } else if is_context(&r.elem) {
            "the context is given to a `&Context` parameter of its own, never missing: take \
             `ctx: &Context`"
                .to_owned()
        } else {
            let hint = match &*r.elem {
                Type::Path(p) if p.path.is_ident("str") => {
                    "take a `String` instead of `&str`".to_owned()
                }
                Type::Slice(_) => "take a `Vec` instead of a slice".to_owned(),
                _ => "take the value itself (remove the `&`)".to_owned(),
            };
            format!(
                "jrpc parameters cannot be borrowed: params are decoded into owned values; {hint}"
            )
        };
        cx.error_spanned(r, message);
        return;
    }
    if let Some(lifetime) = scan.lifetimes.first() {
        cx.error_spanned(
            lifetime,
            "jrpc parameters cannot borrow: params are decoded into owned values; use an owned \
             type (`'static` data, `String`, `Vec`...)",
        );
    }
}

/// `ty` itself, when it is a reference (through parentheses).
fn top_reference(ty: &Type) -> Option<&syn::TypeReference> {
    match ty {
        Type::Reference(r) => Some(r),
        Type::Paren(p) => top_reference(&p.elem),
        Type::Group(g) => top_reference(&g.elem),
        _ => None,
    }
}

/// Two methods with one wire name: one error, at the second. Methods under
/// different `#[cfg]`s may share a name when the `cfg`s exclude each other,
/// which only the compiler knows: the error is then emitted under
/// `#[cfg(all(first, second))]`, so it fires exactly when both are built.
/// A name given by an expression is not known here: a clash with it is found
/// when the table is built.
///
/// A subscription's subscribe and unsubscribe methods are methods of the table too; subscriptions
/// may share one unsubscribe method (the runtime serves it once for all of them).
fn check_duplicates(methods: &[Method], cx: &mut Ctxt) {
    // Per wire name, the first name of each distinct set of `#[cfg]`s.
    let mut first: HashMap<&str, Vec<(String, Named<'_>)>> = HashMap::new();
    for named in methods.iter().flat_map(Named::of) {
        let Some(wire_name) = named.wire_name().filter(|name| !name.is_empty()) else {
            continue;
        };
        let method = named.method;
        let cfg = cfg_predicate(&method.cfgs);
        let key = cfg.to_string();
        let earlier = first.entry(wire_name).or_default();
        let message = |other: &Named<'_>, both: &str| {
            format!(
                "duplicate jrpc method name `{wire_name}`, also the name of {}{both}: rename \
                 one with {}",
                other.describe(),
                named.hint()
            )
        };
        // Two methods with one Rust name: rustc reports that. A shared unsubscribe method is
        // no clash.
        let clashes = |other: &Named<'_>| {
            other.method.sig.ident.unraw() != method.sig.ident.unraw()
                && !(other.unsubscribe && named.unsubscribe)
        };
        match earlier.iter().find(|(k, _)| *k == key) {
            Some((_, other)) if !clashes(other) => {}
            Some((_, other)) => cx.error_at(named.span(), message(other, "")),
            None => {
                for (_, other) in earlier.iter() {
                    if !clashes(other) {
                        continue;
                    }
                    let both = cfg_both(&cfg_predicate(&other.method.cfgs), &cfg);
                    cx.error_if(
                        both,
                        named.span(),
                        format!(
                            "{}, or make their `#[cfg]`s exclude each other",
                            message(other, ", and both are compiled in")
                        ),
                    );
                }
                earlier.push((key, named));
            }
        }
    }
}

/// One wire name a method puts in the table: its own, or its subscription's unsubscribe method.
#[derive(Clone, Copy)]
struct Named<'a> {
    method: &'a Method,
    /// Whether this is the unsubscribe method of the method's subscription.
    unsubscribe: bool,
}

impl<'a> Named<'a> {
    fn of(method: &'a Method) -> impl Iterator<Item = Named<'a>> {
        let unsubscribe = method
            .subscription
            .as_ref()
            .is_some_and(|sub| sub.unsubscribe.is_some());
        [Some(Self {
            method,
            unsubscribe: false,
        })]
        .into_iter()
        .chain([unsubscribe.then_some(Self {
            method,
            unsubscribe: true,
        })])
        .flatten()
    }

    fn wire_name(&self) -> Option<&'a str> {
        if self.unsubscribe {
            self.method
                .subscription
                .as_ref()
                .and_then(|sub| sub.unsubscribe.as_ref())
                .and_then(WireName::known)
        } else {
            self.method.wire_name.known()
        }
    }

    /// Returns the span to blame for the name: its value in the attribute, or the method's name.
    fn span(&self) -> proc_macro2::Span {
        match (self.unsubscribe, self.method.attrs.subscription.as_ref()) {
            (true, Some(attr)) => attr
                .unsubscribe
                .as_ref()
                .map_or_else(|| self.method.wire_name_span(), MethodName::span),
            _ => self.method.wire_name_span(),
        }
    }

    /// Returns the name's owner in a sentence.
    fn describe(&self) -> String {
        let ident = self.method.sig.ident.unraw();
        if self.unsubscribe {
            format!("the unsubscribe method of subscription `{ident}`")
        } else {
            format!("method `{ident}`")
        }
    }

    /// Returns where to give this name another value.
    fn hint(&self) -> &'static str {
        match (self.unsubscribe, self.method.subscription.is_some()) {
            (true, _) => "`unsubscribe = \"...\"`",
            (false, true) => "`#[subscription(name = \"...\")]`",
            (false, false) => "`#[rpc(name = \"...\")]`",
        }
    }
}

fn cfg_both(a: &TokenStream, b: &TokenStream) -> TokenStream {
    quote::quote!(all(#a, #b))
}

fn pair(a: &impl ToTokens, b: &impl ToTokens) -> TokenStream {
    let mut tokens = a.to_token_stream();
    b.to_tokens(&mut tokens);
    tokens
}

/// `#[rpc_service]` applied twice: reported at the second, which then does
/// the work alone.
pub(crate) fn applied_twice(attr: &syn::Attribute, cx: &mut Ctxt) {
    cx.error_spanned(
        attr,
        "`#[rpc_service]` is applied twice: remove this one (give all the options to one)",
    );
}

/// `#[rpc_service]` on something that is not a service.
pub(crate) fn misplaced(misplaced: &Misplaced, item: &Item, cx: &mut Ctxt) {
    if let (
        Misplaced::TraitImpl,
        Item::Impl(ItemImpl {
            trait_: Some((_, path, _)),
            ..
        }),
    ) = (misplaced, item)
    {
        let name = path
            .segments
            .last()
            .map_or_else(String::new, |s| format!(" `{}`", s.ident));
        cx.error_spanned(
            path,
            format_args!(
                "`#[rpc_service]` cannot be used on a trait impl: put `#[rpc_service]` on the \
                 trait{name} and implement it as usual"
            ),
        );
        return;
    }
    // The keyword and the name: enough to point at, short of the body.
    let (tokens, what) = match item {
        Item::Struct(i) => (pair(&i.struct_token, &i.ident), "a struct"),
        Item::Enum(i) => (pair(&i.enum_token, &i.ident), "an enum"),
        Item::Union(i) => (pair(&i.union_token, &i.ident), "a union"),
        Item::Fn(i) => (pair(&i.sig.fn_token, &i.sig.ident), "a function"),
        Item::Mod(i) => (pair(&i.mod_token, &i.ident), "a module"),
        Item::Const(i) => (pair(&i.const_token, &i.ident), "a constant"),
        Item::Static(i) => (pair(&i.static_token, &i.ident), "a static"),
        Item::Type(i) => (pair(&i.type_token, &i.ident), "a type alias"),
        Item::TraitAlias(i) => (pair(&i.trait_token, &i.ident), "a trait alias"),
        Item::Use(i) => (i.use_token.to_token_stream(), "a `use` item"),
        Item::ExternCrate(i) => (
            pair(&i.extern_token, &i.crate_token),
            "an `extern crate` item",
        ),
        Item::ForeignMod(i) => (i.abi.to_token_stream(), "an `extern` block"),
        Item::Macro(i) => (i.mac.path.to_token_stream(), "a macro invocation"),
        _ => (item.to_token_stream(), "this item"),
    };
    cx.error_spanned(
        tokens,
        format_args!(
            "`#[rpc_service]` applies to a trait or an inherent `impl` block, not to {what}"
        ),
    );
}
