//! The rules a service must follow.
//!
//! Every rule lives here, so expansion never finds a new error. Each rule
//! reports at the smallest guilty token and the checks go on after a
//! failure, so one build shows every problem.

use std::collections::HashMap;

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::{Item, ItemImpl, Pat, Type};

use crate::ast::{Kind, Method, Misplaced, Output, Param, ParamKind, Service, is_context};
use crate::attr::ServiceArgs;
use crate::ctxt::Ctxt;

/// Names the generated code defines next to the user's methods.
pub(crate) const INTO_METHODS: &str = "into_methods";
/// Names of the client stub's own methods.
pub(crate) const CLIENT_METHODS: &[&str] = &["new", "with_encoding", "caller", "into_caller"];

pub(crate) fn check(service: &Service, args: &ServiceArgs, cx: &mut Ctxt) {
    check_kind(&service.kind, cx);
    let namespace_reserved = check_namespace(args, cx);
    for method in &service.methods {
        check_method(method, &service.kind, namespace_reserved, cx);
    }
    check_duplicates(&service.methods, cx);
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

fn check_method(method: &Method, kind: &Kind, namespace_reserved: bool, cx: &mut Ctxt) {
    let sig = &method.sig;

    check_receiver(method, cx);

    // One handler per wire name, with one type per parameter.
    if !sig.generics.params.is_empty() {
        cx.error_spanned(
            &sig.generics,
            "jrpc methods cannot be generic: params are decoded into concrete types; remove \
             the generic parameters",
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

    check_reserved_ident(method, kind, cx);
    check_output(method, cx);
    check_params(method, cx);

    // Method names.
    if method
        .attrs
        .name
        .as_ref()
        .is_some_and(|n| n.value().is_empty())
    {
        cx.error_at(
            method.wire_name_span(),
            "a jrpc method name cannot be empty: write one, or remove `name = \"\"` to use \
             the method's own name",
        );
    }
    if !namespace_reserved && method.wire_name.starts_with("rpc.") {
        cx.error_at(
            method.wire_name_span(),
            "method names starting with `rpc.` are reserved by JSON-RPC 2.0 for the protocol: \
             choose another name",
        );
    }
}

fn check_receiver(method: &Method, cx: &mut Ctxt) {
    // Calls run concurrently on one shared service, so every method borrows
    // it: `&self`, nothing else.
    let Some(receiver) = &method.receiver else {
        cx.error_spanned(
            &method.sig.ident,
            "jrpc methods must take `&self`: add `&self` as the first parameter",
        );
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
fn check_reserved_ident(method: &Method, kind: &Kind, cx: &mut Ctxt) {
    // `r#new` defines `new` as well.
    let ident = method.sig.ident.unraw().to_string();
    let owner = if ident == INTO_METHODS {
        "the generated `into_methods`".to_owned()
    } else if let Kind::Trait {
        ident: trait_ident, ..
    } = kind
    {
        if CLIENT_METHODS.contains(&ident.as_str()) {
            format!("the generated `{trait_ident}Client::{ident}`")
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

fn check_output(method: &Method, cx: &mut Ctxt) {
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
    if let Some(ty) = method.output.ok_type() {
        check_result_type(ty, cx);
    }
}

fn check_result_type(ty: &Type, cx: &mut Ctxt) {
    match ty {
        Type::ImplTrait(_) => cx.error_spanned(
            ty,
            "jrpc methods need a concrete result type, not `impl Trait`: the client stub \
             decodes the result into it",
        ),
        Type::Reference(r) if r.lifetime.as_ref().is_none_or(|l| l.ident != "static") => cx
            .error_spanned(
                ty,
                "a jrpc result cannot be borrowed: the answer is sent after the call returns; \
                 return an owned type",
            ),
        _ => {}
    }
}

fn check_params(method: &Method, cx: &mut Ctxt) {
    let mut context: Option<&Param> = None;
    let mut names: HashMap<&str, &Param> = HashMap::new();
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
                check_param_type(&param.ty, cx);
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

    if let Some(whole) = &method.attrs.whole {
        let found = match method.values().count() {
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
    }
}

fn check_param_type(ty: &Type, cx: &mut Ctxt) {
    match ty {
        Type::Reference(r) if is_context(&r.elem) => cx.error_spanned(
            ty,
            "the context is shared by reference: take `&Context`, not `&mut Context`",
        ),
        // Params are decoded from the request body into values the handler
        // owns; nothing outlives the body to borrow from.
        Type::Reference(r) => {
            let hint = match &*r.elem {
                Type::Path(p) if p.path.is_ident("str") => {
                    "take a `String` instead of `&str`".to_owned()
                }
                Type::Slice(_) => "take a `Vec` instead of a slice".to_owned(),
                _ => "take the value itself (remove the `&`)".to_owned(),
            };
            cx.error_spanned(
                ty,
                format_args!("jrpc parameters cannot be borrowed: params are decoded into owned values; {hint}"),
            );
        }
        _ if is_context(ty) => cx.error_spanned(
            ty,
            "the context is passed by reference: take `&Context`, not `Context`",
        ),
        Type::ImplTrait(_) => cx.error_spanned(
            ty,
            "jrpc parameters need a concrete type, not `impl Trait`: params are decoded into it",
        ),
        _ => {}
    }
}

/// Two methods with one wire name: an error at the second, and one at the
/// first so both are visible.
fn check_duplicates(methods: &[Method], cx: &mut Ctxt) {
    let mut first: HashMap<&str, &Method> = HashMap::new();
    for method in methods {
        if method.wire_name.is_empty() {
            continue;
        }
        match first.get(method.wire_name.as_str()) {
            // Two methods with one Rust name: rustc reports that.
            Some(earlier) if earlier.sig.ident.unraw() == method.sig.ident.unraw() => {}
            Some(earlier) => {
                cx.error_at(
                    method.wire_name_span(),
                    format_args!(
                        "duplicate jrpc method name `{}`: rename one method with \
                         `#[rpc(name = \"...\")]`",
                        method.wire_name
                    ),
                );
                cx.error_at(
                    earlier.wire_name_span(),
                    format_args!("the first method named `{}` is here", method.wire_name),
                );
            }
            None => {
                first.insert(&method.wire_name, method);
            }
        }
    }
}

fn pair(a: &impl ToTokens, b: &impl ToTokens) -> TokenStream {
    let mut tokens = a.to_token_stream();
    b.to_tokens(&mut tokens);
    tokens
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
