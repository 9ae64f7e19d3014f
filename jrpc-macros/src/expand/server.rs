//! `into_methods`: the method table of a service.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::{at, krate_at, local, local_at};
use crate::ast::{Kind, Method, Output, ParamKind, Service};
use crate::attr::ServiceArgs;

/// The `into_methods` function: in the trait as a provided method, or in
/// an inherent `impl` of the type.
pub(super) fn into_methods(service: &Service, args: &ServiceArgs) -> TokenStream {
    let krate = &args.krate;
    let vis = match service.kind {
        Kind::Trait { .. } => quote!(),
        Kind::Impl { .. } => quote!(pub),
    };
    let names: Vec<String> = service
        .methods
        .iter()
        .map(|method| format!("`{}`", method.wire_name))
        .collect();
    let doc = if names.is_empty() {
        "Builds the method table of this service, which has no methods.".to_owned()
    } else {
        format!(
            "Builds the method table of this service: {}.",
            names.join(", ")
        )
    };

    let checks = service.methods.iter().map(|method| checks(method, args));
    let this = local("__jrpc_this");
    let table = local("__jrpc_methods");
    let registrations = service.methods.iter().map(|method| register(method, args));
    let mut shapes: Vec<Shape> = service.methods.iter().map(Shape::of).collect();
    shapes.sort_unstable();
    shapes.dedup();
    let helpers = shapes.iter().map(|shape| shape.helper(args));
    let body = if service.methods.is_empty() {
        quote!(#krate::Methods::new())
    } else {
        quote! {
            let #this = ::std::sync::Arc::new(self);
            #[allow(unused_mut)]
            let mut #table = #krate::Methods::new();
            #(#registrations)*
            #table
        }
    };
    quote! {
        #[doc = #doc]
        #[doc = ""]
        #[doc = "Serve it with any transport, or call it in-process with `Methods::handle`."]
        #[must_use]
        #[allow(dead_code, deprecated)]
        #vis fn into_methods(self) -> #krate::Methods
        where
            Self: ::core::marker::Sized
                + ::core::marker::Send
                + ::core::marker::Sync
                + 'static,
        {
            #(#helpers)*
            #(#checks)*
            #body
        }
    }
}

/// Bound checks spanned at the user's types, so "`Foo` is not
/// `Deserialize`" points at `Foo` rather than at the attribute.
fn checks(method: &Method, args: &ServiceArgs) -> TokenStream {
    let cfgs = &method.cfgs;
    let mut out = TokenStream::new();
    for param in method.values() {
        let ty = &param.ty;
        let span = at(ty.span());
        let krate = krate_at(args, span);
        out.extend(quote_spanned! {span=>
            #(#cfgs)*
            #krate::__private::assert_param::<#ty>();
        });
    }
    if method.is_notification() {
        return out;
    }
    let (ok, err) = match &method.output {
        Output::Unit => (None, None),
        Output::Value(ty) => (Some(ty), None),
        Output::Result { ok, err } => (Some(ok), err.as_ref()),
    };
    if let Some(ty) = ok {
        let span = at(ty.span());
        let krate = krate_at(args, span);
        out.extend(quote_spanned! {span=>
            #(#cfgs)*
            #krate::__private::assert_result::<#ty>();
        });
    }
    if let Some(ty) = err {
        let span = at(ty.span());
        let krate = krate_at(args, span);
        out.extend(quote_spanned! {span=>
            #(#cfgs)*
            #krate::__private::assert_error::<#ty>();
        });
    }
    out
}

/// What a registration helper is generic over: notification or call, and
/// the number of parameters (or one parameter taking the whole `params`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Shape {
    notification: bool,
    whole: bool,
    arity: usize,
}

impl Shape {
    fn of(method: &Method) -> Self {
        Self {
            notification: method.is_notification(),
            whole: method.attrs.whole.is_some(),
            arity: method.values().count(),
        }
    }

    fn name(self) -> proc_macro2::Ident {
        let kind = if self.notification { "notice" } else { "typed" };
        if self.whole {
            local(&format!("__jrpc_{kind}_whole"))
        } else {
            local(&format!("__jrpc_{kind}_{}", self.arity))
        }
    }

    /// A local generic function registering one method of this shape. Its
    /// bounds are the runtime's marker traits (`RpcParam`, `RpcResult`,
    /// `IntoRpcError`), and each call names the user's types as explicit
    /// arguments: every bound is then checked at the user's type, where the
    /// `assert_*` calls check the same thing, and rustc reports one error
    /// there rather than a second one about `FromParams` at the attribute.
    fn helper(self, args: &ServiceArgs) -> TokenStream {
        let krate = &args.krate;
        let name = self.name();
        let generics: Vec<_> = (0..self.arity).map(|i| format_ident!("P{i}")).collect();
        let params = if self.whole {
            quote!(#krate::Whole<#(#generics)*>)
        } else {
            quote!((#(#generics,)*))
        };
        let (register, output_generics, output_bounds) = if self.notification {
            (
                quote!(register_notification),
                quote!(),
                quote!(Fut: ::core::future::Future<Output = ()> + ::core::marker::Send + 'static,),
            )
        } else {
            (
                quote!(register),
                quote!(T, E,),
                quote! {
                    T: #krate::__private::RpcResult,
                    E: #krate::__private::IntoRpcError,
                    Fut: ::core::future::Future<Output = ::core::result::Result<T, E>>
                        + ::core::marker::Send
                        + 'static,
                },
            )
        };
        quote! {
            fn #name<#(#generics,)* #output_generics F, Fut>(
                table: &mut #krate::Methods,
                name: &'static str,
                names: &'static [&'static str],
                handler: F,
            ) where
                #(#generics: #krate::__private::RpcParam,)*
                #output_bounds
                F: ::core::ops::Fn(#params, #krate::Context) -> Fut
                    + ::core::marker::Send
                    + ::core::marker::Sync
                    + 'static,
            {
                #krate::__private::discard(#krate::Methods::#register(table, name, names, handler));
            }
        }
    }
}

/// One registration: a call of the method's shape helper with the user's
/// types and a handler closure calling the method.
fn register(method: &Method, args: &ServiceArgs) -> TokenStream {
    let ident = &method.sig.ident;
    // Everything but the user's own tokens points at the method's name: a
    // bound found unmet here (a future that is not `Send`) is blamed there.
    let span = at(ident.span());
    let krate = &krate_at(args, span);
    let this = local_at("__jrpc_this", span);
    let table = local_at("__jrpc_methods", span);
    let ctx = local_at("__jrpc_ctx", span);
    let helper = Shape::of(method).name();
    let helper = local_at(&helper.to_string(), span);
    let wire = &method.wire_name;
    let cfgs = &method.cfgs;

    // The decoded value: a tuple of the parameters read from `params`, or
    // the one parameter wrapped in `Whole`.
    let values: Vec<_> = method.values().collect();
    let idents: Vec<_> = values.iter().filter_map(|param| param.ident()).collect();
    let types: Vec<_> = values.iter().map(|param| &param.ty).collect();
    let names: Vec<&str> = values
        .iter()
        .map(|param| param.wire_name.as_str())
        .collect();
    let (pat, ty) = if method.attrs.whole.is_some() {
        (
            quote_spanned!(span=> #krate::Whole(#(#idents)*)),
            quote_spanned!(span=> #krate::Whole<#(#types)*>),
        )
    } else {
        (
            quote_spanned!(span=> (#(#idents,)*)),
            quote_spanned!(span=> (#(#types,)*)),
        )
    };

    // The call, arguments in the user's order, the context injected.
    let call_args = method.params.iter().map(|param| match param.kind {
        ParamKind::Context => quote_spanned!(span=> &#ctx),
        ParamKind::Value => {
            let ident = param.ident();
            quote_spanned!(span=> #ident)
        }
    });
    let mut call = quote_spanned!(span=> Self::#ident(&#this, #(#call_args),*));
    if method.is_async {
        call = quote_spanned!(span=> #call.await);
    }

    // `_` arguments are inferred; spanned at the method's name, so a bound
    // on them (a future that is not `Send`) points at the method.
    let infer = quote_spanned!(span=> _);
    let (body, output_args) = if method.is_notification() {
        (quote_spanned!(span=> #call;), quote_spanned!(span=> ))
    } else {
        match &method.output {
            Output::Unit => (
                quote_spanned! {span=>
                    #call;
                    ::core::result::Result::Ok::<(), #krate::RpcError>(())
                },
                quote_spanned!(span=> (), #krate::RpcError,),
            ),
            Output::Value(ty) => (
                quote_spanned!(span=> ::core::result::Result::Ok::<#ty, #krate::RpcError>(#call)),
                quote_spanned!(span=> #ty, #krate::RpcError,),
            ),
            Output::Result { ok, err } => {
                let err = match err {
                    Some(err) => quote_spanned!(span=> #err),
                    None => infer.clone(),
                };
                (call, quote_spanned!(span=> #ok, #err,))
            }
        }
    };

    quote_spanned! {span=>
        #(#cfgs)*
        #helper::<#(#types,)* #output_args #infer, #infer>(
            &mut #table,
            #wire,
            &[#(#names),*],
            {
                let #this = ::core::clone::Clone::clone(&#this);
                move |#pat: #ty, #ctx: #krate::Context| {
                    let #this = ::core::clone::Clone::clone(&#this);
                    async move { #body }
                }
            },
        );
    }
}
