//! What the user wrote, read into a model of the service.
//!
//! Reading takes the helper attributes out of the item (so the item can be
//! emitted as the user's code, error or not) and records what the rules in
//! [`crate::valid`] need; it judges nothing beyond attribute syntax.

use proc_macro2::Span;
use quote::{ToTokens as _, format_ident};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{
    Attribute, FnArg, GenericArgument, GenericParam, Generics, Ident, ImplItem, Item, ItemImpl,
    ItemTrait, Pat, PathArguments, Receiver, ReturnType, Signature, TraitItem, Type,
    TypeParamBound, Visibility,
};

use crate::attr::{self, Client, MethodAttrs, MethodName, ParamAttrs, ServiceArgs};
use crate::ctxt::Ctxt;

/// One service: a trait or an inherent `impl` block.
pub(crate) struct Service {
    pub(crate) kind: Kind,
    pub(crate) methods: Vec<Method>,
    /// The client stub's name; `None` for an `impl` block or `client = false`.
    pub(crate) client: Option<Ident>,
    /// `allow` lints of the trait, copied onto the stub.
    pub(crate) lints: Vec<Attribute>,
    /// Facts about attributes in places they do not belong.
    pub(crate) stray: Stray,
}

pub(crate) enum Kind {
    Trait {
        ident: Ident,
        vis: Visibility,
        generics: Generics,
        /// Associated types, which a client stub could not name.
        assoc_types: Vec<Ident>,
        /// Whether the trait has supertraits other than lifetimes.
        supertraits: bool,
    },
    Impl {
        self_ty: Box<Type>,
        generics: Generics,
    },
}

/// Attributes found where they do not belong, taken out of the item.
#[derive(Default)]
pub(crate) struct Stray {
    /// `#[rpc]` or `#[notification]` on the trait, the `impl` block or an
    /// item that is not a method; with what it was on.
    pub(crate) helpers: Vec<(Attribute, &'static str)>,
    /// `#[rpc_service]` on a method.
    pub(crate) services: Vec<Attribute>,
    /// `#[async_trait]` below `#[rpc_service]`.
    pub(crate) async_trait: Option<Attribute>,
    /// A method lifetime `'async_trait`: `#[async_trait]` ran first.
    pub(crate) async_trait_expanded: Option<Span>,
}

/// Names what `#[rpc_service]` was put on, when it is not a service.
pub(crate) enum Misplaced {
    /// `impl Trait for Type`: the trait is where the attribute belongs.
    TraitImpl,
    /// Anything else: a struct, a function, a module...
    Other,
}

pub(crate) struct Method {
    /// The signature as written, helper attributes removed.
    pub(crate) sig: Signature,
    /// `#[doc]` and `#[deprecated]` attributes, copied onto the client stub.
    pub(crate) docs: Vec<Attribute>,
    /// The text of the doc comment (its `#[doc = "..."]` lines, joined), for the description.
    pub(crate) doc_text: String,
    /// Whether the method is `#[deprecated]`.
    pub(crate) deprecated: bool,
    /// `#[cfg]` attributes, copied onto everything generated for the method.
    pub(crate) cfgs: Vec<Attribute>,
    /// `allow` lints (and `expect`s, as `allow`), copied onto the stub method.
    pub(crate) lints: Vec<Attribute>,
    pub(crate) attrs: MethodAttrs,
    pub(crate) receiver: Option<Receiver>,
    /// The parameters after the receiver.
    pub(crate) params: Vec<Param>,
    /// Whether calling the method gives a future: an `async fn`, or a
    /// `fn` returning `impl Future<Output = T>`.
    pub(crate) is_async: bool,
    /// The type the method (or its future) gives back, as written.
    pub(crate) output_ty: Option<Box<Type>>,
    /// `dyn Future<Output = T> ...` of a return type written
    /// `Pin<Box<dyn Future<Output = T> ...>>`.
    pub(crate) boxed_future: Option<syn::TypeTraitObject>,
    pub(crate) output: Output,
    /// The name on the wire, namespace included: a subscription's subscribe method's.
    pub(crate) wire_name: WireName,
    /// What `#[subscription(...)]` declares, with the item type read from the signature.
    pub(crate) subscription: Option<Subscription>,
}

/// Describes a subscription: the method answers an id, then its items go out as notifications.
pub(crate) struct Subscription {
    /// The notification's method, namespace included; `None` when it is missing (reported).
    pub(crate) notification: Option<WireName>,
    /// The unsubscribe method, namespace included; `None` when it is missing (reported).
    pub(crate) unsubscribe: Option<WireName>,
    /// `T` of `Items<T>` in the return type, as written; `None` when the type names no item.
    pub(crate) item: Option<Box<Type>>,
}

/// Names a method on the wire, namespace included.
pub(crate) enum WireName {
    /// Known to the macro: the method's own name (after `rename_all`), or `name = "..."`.
    Known(String),
    /// `name = EXPR`: the namespace and separator (or nothing), then the value of `expr`, which
    /// only the compiler knows.
    Expr {
        prefix: String,
        expr: Box<syn::Expr>,
    },
}

impl WireName {
    /// Returns the name, when the macro knows it.
    pub(crate) fn known(&self) -> Option<&str> {
        match self {
            Self::Known(name) => Some(name),
            Self::Expr { .. } => None,
        }
    }

    /// Returns the method in a sentence of generated docs, with `noun` ("method", "notification"):
    /// "the `calc.add` method", or "the method named by `EXPR`" (with a namespace, "the method
    /// named `calc.` and the name in `EXPR`").
    pub(crate) fn in_docs(&self, noun: &str) -> String {
        match self {
            Self::Known(name) => format!("the `{name}` {noun}"),
            Self::Expr { prefix, expr } => {
                let expr = tokens_text(&expr.to_token_stream());
                if prefix.is_empty() {
                    format!("the {noun} named by `{expr}`")
                } else {
                    format!("the {noun} named `{prefix}` and the name in `{expr}`")
                }
            }
        }
    }
}

/// Tokens as a reader writes them: `a::B::C`, `x.y`, not `a :: B :: C`, `x . y` (a space only
/// between two words).
pub(crate) fn tokens_text(tokens: &proc_macro2::TokenStream) -> String {
    use proc_macro2::{Delimiter, TokenTree};
    let mut out = String::new();
    let mut word = false;
    for tree in tokens.clone() {
        match tree {
            TokenTree::Group(group) => {
                let (open, close) = match group.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Brace => ("{", "}"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::None => ("", ""),
                };
                out.push_str(open);
                out.push_str(&tokens_text(&group.stream()));
                out.push_str(close);
                word = false;
            }
            TokenTree::Punct(punct) => {
                out.push(punct.as_char());
                word = false;
            }
            TokenTree::Ident(_) | TokenTree::Literal(_) => {
                if word {
                    out.push(' ');
                }
                out.push_str(&tree.to_string());
                word = true;
            }
        }
    }
    out
}

pub(crate) struct Param {
    pub(crate) attrs: ParamAttrs,
    /// `allow` lints, copied onto the stub's parameter.
    pub(crate) lints: Vec<Attribute>,
    /// `#[cfg]` attributes: the parameter is left out of decoding and of
    /// the stub in builds where they are false.
    pub(crate) cfgs: Vec<Attribute>,
    pub(crate) pat: Box<Pat>,
    pub(crate) ty: Box<Type>,
    pub(crate) kind: ParamKind,
    /// The name on the wire: the Rust name or `#[rpc(name = "...")]`.
    pub(crate) wire_name: String,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParamKind {
    /// `&Context`: injected by the runtime, not read from `params`.
    Context,
    /// Read from `params`.
    Value,
}

/// How the return type reads, as written. Whether it is a `Result` is
/// decided by the type when the crate is compiled; this reading gives the
/// client stub its success type and the errors their spans.
pub(crate) enum Output {
    /// Nothing: no `->`, or `-> ()`.
    Unit,
    /// `-> T`.
    Value(Box<Type>),
    /// `-> Result<T, E>` (any path whose last segment is `Result`). `E` is
    /// `None` for a one-argument alias such as `io::Result<T>`.
    Result {
        ok: Box<Type>,
        err: Option<Box<Type>>,
    },
}

impl Output {
    /// Returns the type a successful call gives to the client, as written.
    pub(crate) fn ok_type(&self) -> Option<&Type> {
        match self {
            Self::Unit => None,
            Self::Value(ty) | Self::Result { ok: ty, .. } => Some(ty),
        }
    }
}

impl Service {
    /// Reads the service out of `item`, taking helper attributes out of it.
    pub(crate) fn from_item(
        item: &mut Item,
        args: &ServiceArgs,
        cx: &mut Ctxt,
    ) -> Result<Self, Misplaced> {
        match item {
            Item::Trait(item) => Ok(Self::from_trait(item, args, cx)),
            Item::Impl(item) if item.trait_.is_none() => Ok(Self::from_impl(item, args, cx)),
            Item::Impl(item) => {
                strip_impl(item);
                Err(Misplaced::TraitImpl)
            }
            _ => Err(Misplaced::Other),
        }
    }

    fn from_trait(item: &mut ItemTrait, args: &ServiceArgs, cx: &mut Ctxt) -> Self {
        let mut stray = Stray::default();
        take_item_attrs(&mut item.attrs, "a trait", &mut stray);
        let mut methods = Vec::new();
        let mut assoc_types = Vec::new();
        for trait_item in &mut item.items {
            match trait_item {
                TraitItem::Fn(f) => {
                    take_services(&mut f.attrs, &mut stray);
                    note_async_trait(&f.sig.generics, &mut stray);
                    methods.push(Method::read(&mut f.attrs, &mut f.sig, args, cx));
                }
                TraitItem::Type(ty) => {
                    take_stray(&mut ty.attrs, "an associated type", &mut stray);
                    assoc_types.push(ty.ident.clone());
                }
                TraitItem::Const(c) => {
                    take_stray(&mut c.attrs, "an associated constant", &mut stray)
                }
                TraitItem::Macro(m) => take_stray(&mut m.attrs, "a macro invocation", &mut stray),
                _ => {}
            }
        }
        let client = match &args.client {
            Client::Default => Some(format_ident!(
                "{}Client",
                item.ident.unraw(),
                span = item.ident.span()
            )),
            Client::Named(ident, _) => Some(ident.clone()),
            Client::Off(_) => None,
        };
        let supertraits = item
            .supertraits
            .iter()
            .any(|bound| matches!(bound, TypeParamBound::Trait(_)));
        Self {
            kind: Kind::Trait {
                ident: item.ident.clone(),
                vis: item.vis.clone(),
                generics: item.generics.clone(),
                assoc_types,
                supertraits,
            },
            methods,
            client,
            lints: attr::lint_attrs(&item.attrs),
            stray,
        }
    }

    fn from_impl(item: &mut ItemImpl, args: &ServiceArgs, cx: &mut Ctxt) -> Self {
        let mut stray = Stray::default();
        take_item_attrs(&mut item.attrs, "an `impl` block", &mut stray);
        let mut methods = Vec::new();
        for impl_item in &mut item.items {
            match impl_item {
                ImplItem::Fn(f) => {
                    take_services(&mut f.attrs, &mut stray);
                    methods.push(Method::read(&mut f.attrs, &mut f.sig, args, cx));
                }
                ImplItem::Type(ty) => {
                    take_stray(&mut ty.attrs, "an associated type", &mut stray);
                }
                ImplItem::Const(c) => {
                    take_stray(&mut c.attrs, "an associated constant", &mut stray)
                }
                ImplItem::Macro(m) => take_stray(&mut m.attrs, "a macro invocation", &mut stray),
                _ => {}
            }
        }
        Self {
            kind: Kind::Impl {
                self_ty: item.self_ty.clone(),
                generics: item.generics.clone(),
            },
            methods,
            client: None,
            lints: Vec::new(),
            stray,
        }
    }

    /// Returns the name of the module holding the stub struct.
    pub(crate) fn stub_module(client: &Ident) -> Ident {
        format_ident!("__jrpc_{}", client.unraw(), span = client.span())
    }
}

/// Takes helpers and `#[async_trait]` out of the service item's own attributes.
fn take_item_attrs(attrs: &mut Vec<Attribute>, what: &'static str, stray: &mut Stray) {
    take_stray(attrs, what, stray);
    if let Some(i) = attrs.iter().position(|a| last_segment_is(a, "async_trait")) {
        stray.async_trait = Some(attrs.remove(i));
    }
}

/// Helper attributes on something that is not a method.
fn take_stray(attrs: &mut Vec<Attribute>, what: &'static str, stray: &mut Stray) {
    let (helpers, rest): (Vec<_>, Vec<_>) =
        std::mem::take(attrs).into_iter().partition(attr::is_helper);
    *attrs = rest;
    stray.helpers.extend(helpers.into_iter().map(|a| (a, what)));
}

/// `#[rpc_service]` on a method.
fn take_services(attrs: &mut Vec<Attribute>, stray: &mut Stray) {
    let (services, rest): (Vec<_>, Vec<_>) = std::mem::take(attrs)
        .into_iter()
        .partition(|a| last_segment_is(a, "rpc_service"));
    *attrs = rest;
    stray.services.extend(services);
}

/// `'async_trait`, the lifetime `#[async_trait]` gives each method.
fn note_async_trait(generics: &Generics, stray: &mut Stray) {
    if stray.async_trait_expanded.is_some() {
        return;
    }
    stray.async_trait_expanded = generics.params.iter().find_map(|param| match param {
        GenericParam::Lifetime(l) if l.lifetime.ident == "async_trait" => Some(l.lifetime.span()),
        _ => None,
    });
}

/// Returns whether `attr`'s path ends in `name` (`#[name]`, `#[a::name]`).
pub(crate) fn last_segment_is(attr: &Attribute, name: &str) -> bool {
    attr.path().segments.last().is_some_and(|s| s.ident == name)
}

/// `#[rpc_service]` among the item's attributes: the attribute applied twice.
pub(crate) fn nested_service(item: &Item) -> Option<&Attribute> {
    let attrs = match item {
        Item::Trait(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        _ => return None,
    };
    attrs.iter().find(|a| last_segment_is(a, "rpc_service"))
}

/// Strips helper attributes from a misplaced `impl Trait for Type`, so the
/// only error is the one about the attribute's place.
fn strip_impl(item: &mut ItemImpl) {
    for impl_item in &mut item.items {
        if let ImplItem::Fn(f) = impl_item {
            attr::drop_helpers(&mut f.attrs);
            for input in &mut f.sig.inputs {
                if let FnArg::Typed(arg) = input {
                    attr::drop_helpers(&mut arg.attrs);
                }
            }
        }
    }
}

impl Param {
    /// Returns a typed parameter of a method, its `#[rpc(...)]` attributes taken off.
    fn read(arg: &mut syn::PatType, cx: &mut Ctxt) -> Self {
        let attrs = ParamAttrs::take(&mut arg.attrs, cx);
        let kind = if is_context_ref(&arg.ty) {
            ParamKind::Context
        } else {
            ParamKind::Value
        };
        let wire_name = match (&attrs.name, param_ident(&arg.pat)) {
            (Some(name), _) => name.value(),
            (None, Some(ident)) => ident.unraw().to_string(),
            (None, None) => String::new(),
        };
        Self {
            attrs,
            lints: attr::lint_attrs(&arg.attrs),
            cfgs: arg
                .attrs
                .iter()
                .filter(|a| a.path().is_ident("cfg"))
                .cloned()
                .collect(),
            pat: arg.pat.clone(),
            ty: arg.ty.clone(),
            kind,
            wire_name,
        }
    }
}

impl Method {
    fn read(
        attrs: &mut Vec<Attribute>,
        sig: &mut Signature,
        args: &ServiceArgs,
        cx: &mut Ctxt,
    ) -> Self {
        let method_attrs = MethodAttrs::take(attrs, cx);
        let docs: Vec<Attribute> = attrs
            .iter()
            .filter(|a| a.path().is_ident("doc") || a.path().is_ident("deprecated"))
            .cloned()
            .collect();
        let doc_text = doc_text(&docs);
        let deprecated = docs.iter().any(|a| a.path().is_ident("deprecated"));
        let cfgs = attrs
            .iter()
            .filter(|a| a.path().is_ident("cfg"))
            .cloned()
            .collect();
        let lints = attr::lint_attrs(attrs);

        let mut receiver = None;
        let mut params = Vec::new();
        for input in &mut sig.inputs {
            match input {
                FnArg::Receiver(r) => receiver = Some(r.clone()),
                FnArg::Typed(arg) => params.push(Param::read(arg, cx)),
            }
        }

        let (is_async, output_ty) = match (&sig.asyncness, &sig.output) {
            (_, ReturnType::Default) => (sig.asyncness.is_some(), None),
            (Some(_), ReturnType::Type(_, ty)) => (true, Some(ty.clone())),
            (None, ReturnType::Type(_, ty)) => match future_output(ty) {
                Some(inner) => (true, Some(Box::new(inner.clone()))),
                None => match boxed_future(ty).and_then(|dyn_| bounds_output(&dyn_.bounds)) {
                    Some(inner) => (true, Some(Box::new(inner.clone()))),
                    None => (false, Some(ty.clone())),
                },
            },
        };
        let boxed_future = match (&sig.asyncness, &sig.output) {
            (None, ReturnType::Type(_, ty)) => boxed_future(ty)
                .filter(|dyn_| bounds_output(&dyn_.bounds).is_some())
                .cloned(),
            _ => None,
        };
        let output = output_ty.as_deref().map_or(Output::Unit, Output::of);

        // A name given in the attribute is used as written: `rename_all` does not apply; the
        // namespace is prefixed.
        let prefix = match &args.namespace {
            Some(namespace) => format!("{}{}", namespace.value(), args.separator),
            None => String::new(),
        };
        let given = |name: &MethodName| match name {
            MethodName::Literal(lit) => WireName::Known(format!("{prefix}{}", lit.value())),
            MethodName::Expr(expr) => WireName::Expr {
                prefix: prefix.clone(),
                expr: expr.clone(),
            },
        };
        let wire_name = match method_attrs.name_attr() {
            Some(name) => given(name),
            None => {
                let ident = sig.ident.unraw().to_string();
                let name = match args.rename_all {
                    Some(rule) => rule.apply(&ident),
                    None => ident,
                };
                WireName::Known(format!("{prefix}{name}"))
            }
        };
        let subscription = method_attrs.subscription.as_ref().map(|attr| Subscription {
            notification: attr.notification.as_ref().map(given),
            unsubscribe: attr.unsubscribe.as_ref().map(given),
            item: match &output {
                Output::Value(ty) | Output::Result { ok: ty, .. } => {
                    items_item(ty).map(|item| Box::new(item.clone()))
                }
                Output::Unit => None,
            },
        });

        Self {
            sig: sig.clone(),
            docs,
            doc_text,
            deprecated,
            cfgs,
            lints,
            attrs: method_attrs,
            receiver,
            params,
            is_async,
            output_ty,
            boxed_future,
            output,
            wire_name,
            subscription,
        }
    }

    /// Returns whether the method is a `#[notification]` (and not a subscription, which a
    /// `#[notification]` cannot be: an error).
    pub(crate) fn is_notification(&self) -> bool {
        self.attrs.notification.is_some() && self.subscription.is_none()
    }

    /// `params = whole`, of `#[rpc(...)]` or, on a subscription, of `#[subscription(...)]`.
    pub(crate) fn whole(&self) -> Option<&syn::Meta> {
        match &self.attrs.subscription {
            Some(sub) => sub.whole.as_ref(),
            None => self.attrs.whole.as_ref(),
        }
    }

    /// Returns the span to blame for the wire name: the `name = ...` value when
    /// there is one, else the method's name.
    pub(crate) fn wire_name_span(&self) -> Span {
        match self.attrs.name_attr() {
            Some(name) => name.span(),
            None => self.sig.ident.span(),
        }
    }

    /// Returns the parameters read from `params`, in order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &Param> {
        self.params.iter().filter(|p| p.kind == ParamKind::Value)
    }
}

impl Param {
    /// Returns the parameter's name, when its pattern is a plain name.
    pub(crate) fn ident(&self) -> Option<&Ident> {
        param_ident(&self.pat)
    }

    /// Returns the span to blame for the wire name.
    pub(crate) fn wire_name_span(&self) -> Span {
        match &self.attrs.name {
            Some(lit) => lit.span(),
            None => self.pat.span(),
        }
    }
}

impl Output {
    fn of(ty: &Type) -> Self {
        match ty {
            Type::Tuple(tuple) if tuple.elems.is_empty() => Self::Unit,
            Type::Paren(inner) => Self::of(&inner.elem),
            Type::Group(inner) => Self::of(&inner.elem),
            Type::Path(path) if path.qself.is_none() => {
                let Some(last) = path.path.segments.last() else {
                    return Self::Value(Box::new(ty.clone()));
                };
                if last.ident != "Result" {
                    return Self::Value(Box::new(ty.clone()));
                }
                let PathArguments::AngleBracketed(args) = &last.arguments else {
                    return Self::Value(Box::new(ty.clone()));
                };
                let mut types = args.args.iter().filter_map(|arg| match arg {
                    GenericArgument::Type(ty) => Some(Box::new(ty.clone())),
                    _ => None,
                });
                match types.next() {
                    Some(ok) => Self::Result {
                        ok,
                        err: types.next(),
                    },
                    None => Self::Value(Box::new(ty.clone())),
                }
            }
            _ => Self::Value(Box::new(ty.clone())),
        }
    }
}

/// `T` in `Items<T>` (any path whose last segment is `Items`, with one type argument): a
/// subscription's item type.
fn items_item(ty: &Type) -> Option<&Type> {
    match ty {
        Type::Paren(inner) => items_item(&inner.elem),
        Type::Group(inner) => items_item(&inner.elem),
        Type::Path(path) if path.qself.is_none() => {
            let last = path.path.segments.last()?;
            if last.ident != "Items" {
                return None;
            }
            let PathArguments::AngleBracketed(args) = &last.arguments else {
                return None;
            };
            match args.args.iter().collect::<Vec<_>>().as_slice() {
                [GenericArgument::Type(item)] => Some(item),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Returns the lines of `#[doc = "..."]` attributes given as string literals, joined by newlines (a
/// doc given by a macro, such as `include_str!`, cannot be read here and is left out).
fn doc_text(attrs: &[Attribute]) -> String {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|attr| attr.path().is_ident("doc"))
        .filter_map(|attr| match &attr.meta {
            syn::Meta::NameValue(syn::MetaNameValue {
                value:
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(lit),
                        ..
                    }),
                ..
            }) => Some(lit.value()),
            _ => None,
        })
        .collect();
    lines.join("\n")
}

/// Returns the name bound by a parameter pattern, if it is a plain (maybe `mut`)
/// name.
fn param_ident(pat: &Pat) -> Option<&Ident> {
    match pat {
        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => Some(&p.ident),
        _ => None,
    }
}

/// `&Context` (any path whose last segment is `Context`, shared borrow):
/// the parameter the runtime injects. That it is the runtime's `Context` is
/// checked by type, where the crate is compiled.
pub(crate) fn is_context_ref(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) if r.mutability.is_none() => is_context(&r.elem),
        Type::Paren(p) => is_context_ref(&p.elem),
        Type::Group(g) => is_context_ref(&g.elem),
        _ => false,
    }
}

/// Returns whether `ty` is a path whose last segment is a bare `Context`.
pub(crate) fn is_context(ty: &Type) -> bool {
    match ty {
        Type::Path(path) if path.qself.is_none() => path
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "Context" && s.arguments.is_none()),
        Type::Paren(p) => is_context(&p.elem),
        Type::Group(g) => is_context(&g.elem),
        _ => false,
    }
}

/// `T` in `impl Future<Output = T> (+ ...)`.
fn future_output(ty: &Type) -> Option<&Type> {
    let Type::ImplTrait(imp) = ty else {
        return None;
    };
    bounds_output(&imp.bounds)
}

/// `dyn ...` in `Pin<Box<dyn ...>>` (any paths ending in `Pin` and `Box`).
fn boxed_future(ty: &Type) -> Option<&syn::TypeTraitObject> {
    fn only_arg<'a>(ty: &'a Type, name: &str) -> Option<&'a Type> {
        let Type::Path(path) = ty else {
            return None;
        };
        let last = path.path.segments.last()?;
        if path.qself.is_some() || last.ident != name {
            return None;
        }
        let PathArguments::AngleBracketed(args) = &last.arguments else {
            return None;
        };
        match args.args.first() {
            Some(GenericArgument::Type(ty)) if args.args.len() == 1 => Some(ty),
            _ => None,
        }
    }
    match only_arg(only_arg(ty, "Pin")?, "Box")? {
        Type::TraitObject(dyn_) => Some(dyn_),
        _ => None,
    }
}

/// `T` in bounds `Future<Output = T> (+ ...)`.
fn bounds_output(
    bounds: &syn::punctuated::Punctuated<TypeParamBound, syn::Token![+]>,
) -> Option<&Type> {
    bounds.iter().find_map(|bound| {
        let TypeParamBound::Trait(bound) = bound else {
            return None;
        };
        let last = bound.path.segments.last()?;
        if last.ident != "Future" {
            return None;
        }
        let PathArguments::AngleBracketed(args) = &last.arguments else {
            return None;
        };
        args.args.iter().find_map(|arg| match arg {
            GenericArgument::AssocType(assoc) if assoc.ident == "Output" => Some(&assoc.ty),
            _ => None,
        })
    })
}
