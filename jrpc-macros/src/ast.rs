//! What the user wrote, read into a model of the service.
//!
//! Reading takes the helper attributes out of the item (so the item can be
//! emitted as the user's code, error or not) and records what the rules in
//! [`crate::valid`] need; it judges nothing beyond attribute syntax.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{
    Attribute, FnArg, GenericArgument, Generics, Ident, ImplItem, Item, ItemImpl, ItemTrait, Pat,
    PathArguments, Receiver, ReturnType, Signature, TraitItem, Type, TypeParamBound, Visibility,
};

use crate::attr::{MethodAttrs, ParamAttrs, ServiceArgs};
use crate::ctxt::Ctxt;

/// One service: a trait or an inherent `impl` block.
pub(crate) struct Service {
    pub(crate) kind: Kind,
    pub(crate) methods: Vec<Method>,
}

pub(crate) enum Kind {
    Trait {
        ident: Ident,
        vis: Visibility,
        generics: Generics,
        /// Associated types, which a client stub could not name.
        assoc_types: Vec<Ident>,
    },
    Impl {
        self_ty: Box<Type>,
        generics: Generics,
    },
}

/// What `#[rpc_service]` was put on, when it is not a service.
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
    /// `#[cfg]` attributes, copied onto everything generated for the method.
    pub(crate) cfgs: Vec<Attribute>,
    pub(crate) attrs: MethodAttrs,
    pub(crate) receiver: Option<Receiver>,
    /// The parameters after the receiver.
    pub(crate) params: Vec<Param>,
    /// Whether calling the method gives a future: an `async fn`, or a
    /// `fn` returning `impl Future<Output = T>`.
    pub(crate) is_async: bool,
    /// The type the method (or its future) gives back, as written.
    pub(crate) output_ty: Option<Box<Type>>,
    pub(crate) output: Output,
    /// The name on the wire, namespace included.
    pub(crate) wire_name: String,
}

pub(crate) struct Param {
    pub(crate) attrs: ParamAttrs,
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

/// What the method's future (or the method, when sync) gives back.
pub(crate) enum Output {
    /// Nothing: no `->`, or `-> ()`.
    Unit,
    /// `-> T`, answered as a success.
    Value(Box<Type>),
    /// `-> Result<T, E>` (any type whose last path segment is `Result`).
    /// `E` is `None` for a one-argument alias such as `io::Result<T>`.
    Result {
        ok: Box<Type>,
        err: Option<Box<Type>>,
    },
}

impl Output {
    /// The type a successful call gives to the client.
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
        let mut methods = Vec::new();
        let mut assoc_types = Vec::new();
        for trait_item in &mut item.items {
            match trait_item {
                TraitItem::Fn(f) => methods.push(Method::read(&mut f.attrs, &mut f.sig, args, cx)),
                TraitItem::Type(ty) => assoc_types.push(ty.ident.clone()),
                _ => {}
            }
        }
        Self {
            kind: Kind::Trait {
                ident: item.ident.clone(),
                vis: item.vis.clone(),
                generics: item.generics.clone(),
                assoc_types,
            },
            methods,
        }
    }

    fn from_impl(item: &mut ItemImpl, args: &ServiceArgs, cx: &mut Ctxt) -> Self {
        let mut methods = Vec::new();
        for impl_item in &mut item.items {
            if let ImplItem::Fn(f) = impl_item {
                methods.push(Method::read(&mut f.attrs, &mut f.sig, args, cx));
            }
        }
        Self {
            kind: Kind::Impl {
                self_ty: item.self_ty.clone(),
                generics: item.generics.clone(),
            },
            methods,
        }
    }
}

/// Strips helper attributes from a misplaced `impl Trait for Type`, so the
/// only error is the one about the attribute's place.
fn strip_impl(item: &mut ItemImpl) {
    for impl_item in &mut item.items {
        if let ImplItem::Fn(f) = impl_item {
            crate::attr::take_helpers(&mut f.attrs);
            for input in &mut f.sig.inputs {
                if let FnArg::Typed(arg) = input {
                    crate::attr::take_helpers(&mut arg.attrs);
                }
            }
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
        let docs = attrs
            .iter()
            .filter(|a| a.path().is_ident("doc") || a.path().is_ident("deprecated"))
            .cloned()
            .collect();
        let cfgs = attrs
            .iter()
            .filter(|a| a.path().is_ident("cfg"))
            .cloned()
            .collect();

        let mut receiver = None;
        let mut params = Vec::new();
        for input in &mut sig.inputs {
            match input {
                FnArg::Receiver(r) => receiver = Some(r.clone()),
                FnArg::Typed(arg) => {
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
                    params.push(Param {
                        attrs,
                        pat: arg.pat.clone(),
                        ty: arg.ty.clone(),
                        kind,
                        wire_name,
                    });
                }
            }
        }

        let (is_async, output_ty) = match (&sig.asyncness, &sig.output) {
            (_, ReturnType::Default) => (sig.asyncness.is_some(), None),
            (Some(_), ReturnType::Type(_, ty)) => (true, Some(ty.clone())),
            (None, ReturnType::Type(_, ty)) => match future_output(ty) {
                Some(inner) => (true, Some(Box::new(inner.clone()))),
                None => (false, Some(ty.clone())),
            },
        };
        let output = output_ty.as_deref().map_or(Output::Unit, Output::of);

        let name = match &method_attrs.name {
            Some(name) => name.value(),
            None => {
                let ident = sig.ident.unraw().to_string();
                match args.rename_all {
                    Some(rule) => rule.apply(&ident),
                    None => ident,
                }
            }
        };
        let wire_name = match &args.namespace {
            Some(namespace) => format!("{}{}{name}", namespace.value(), args.separator),
            None => name,
        };

        Self {
            sig: sig.clone(),
            docs,
            cfgs,
            attrs: method_attrs,
            receiver,
            params,
            is_async,
            output_ty,
            output,
            wire_name,
        }
    }

    pub(crate) fn is_notification(&self) -> bool {
        self.attrs.notification.is_some()
    }

    /// The span to blame for the wire name: the `name = "..."` literal when
    /// there is one, else the method's name.
    pub(crate) fn wire_name_span(&self) -> Span {
        match &self.attrs.name {
            Some(lit) => lit.span(),
            None => self.sig.ident.span(),
        }
    }

    /// The parameters read from `params`, in order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &Param> {
        self.params.iter().filter(|p| p.kind == ParamKind::Value)
    }
}

impl Param {
    /// The parameter's name, when its pattern is a plain name.
    pub(crate) fn ident(&self) -> Option<&Ident> {
        param_ident(&self.pat)
    }

    /// The span to blame for the wire name.
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

/// The name bound by a parameter pattern, if it is a plain (maybe `mut`)
/// name.
fn param_ident(pat: &Pat) -> Option<&Ident> {
    match pat {
        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => Some(&p.ident),
        _ => None,
    }
}

/// `&Context` (any path whose last segment is `Context`, shared borrow).
pub(crate) fn is_context_ref(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) if r.mutability.is_none() => is_context(&r.elem),
        Type::Paren(p) => is_context_ref(&p.elem),
        Type::Group(g) => is_context_ref(&g.elem),
        _ => false,
    }
}

/// A path whose last segment is a bare `Context`.
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
    imp.bounds.iter().find_map(|bound| {
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
