//! `into_methods`: the method table of a service.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::{krate_at, local};
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
        #[allow(dead_code)]
        #vis fn into_methods(self) -> #krate::Methods
        where
            Self: ::core::marker::Sized
                + ::core::marker::Send
                + ::core::marker::Sync
                + 'static,
        {
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
        let krate = krate_at(args, ty.span());
        out.extend(quote_spanned! {ty.span()=>
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
        let krate = krate_at(args, ty.span());
        out.extend(quote_spanned! {ty.span()=>
            #(#cfgs)*
            #krate::__private::assert_result::<#ty>();
        });
    }
    if let Some(ty) = err {
        let krate = krate_at(args, ty.span());
        out.extend(quote_spanned! {ty.span()=>
            #(#cfgs)*
            #krate::__private::assert_error::<#ty>();
        });
    }
    out
}

/// One `Methods::typed` (or `Methods::notice`) registration.
///
/// The call goes through a local generic function whose bounds are the
/// runtime's marker traits (`RpcParam`, `RpcResult`, `IntoRpcError`), called
/// with the user's types as explicit arguments. Each bound is then checked
/// at the user's type, where the `assert_*` calls above check the same
/// thing, and rustc reports one error there instead of a second one about
/// `FromParams` at the attribute.
fn register(method: &Method, args: &ServiceArgs) -> TokenStream {
    let krate = &args.krate;
    let this = local("__jrpc_this");
    let table = local("__jrpc_methods");
    let ctx = local("__jrpc_ctx");
    let helper = local("__jrpc_register");
    let wire = &method.wire_name;
    let cfgs = &method.cfgs;
    let ident = &method.sig.ident;
    let span = ident.span();

    // The decoded value: a tuple of the parameters read from `params`, or
    // the one parameter wrapped in `Whole`.
    let values: Vec<_> = method.values().collect();
    let idents: Vec<_> = values.iter().filter_map(|param| param.ident()).collect();
    let types: Vec<_> = values.iter().map(|param| &param.ty).collect();
    let names: Vec<&str> = values
        .iter()
        .map(|param| param.wire_name.as_str())
        .collect();
    let generics: Vec<_> = (0..values.len()).map(|i| format_ident!("P{i}")).collect();
    let whole = method.attrs.whole.is_some();
    let (pat, ty, generic_ty) = if whole {
        (
            quote!(#krate::__private::Whole(#(#idents)*)),
            quote!(#krate::__private::Whole<#(#types)*>),
            quote!(#krate::__private::Whole<#(#generics)*>),
        )
    } else {
        (
            quote!((#(#idents,)*)),
            quote!((#(#types,)*)),
            quote!((#(#generics,)*)),
        )
    };

    // The call, arguments in the user's order, the context injected.
    let call_args = method.params.iter().map(|param| match param.kind {
        ParamKind::Context => quote!(&#ctx),
        ParamKind::Value => {
            let ident = param.ident();
            quote!(#ident)
        }
    });
    let mut call = quote!(Self::#ident(&#this, #(#call_args),*));
    if method.is_async {
        call = quote!(#call.await);
    }

    // `_` arguments are inferred; spanned at the method's name, so a bound
    // on them (a future that is not `Send`) points at the method.
    let infer = quote_spanned!(span=> _);
    let (register, body, output_bounds, output_args) = if method.is_notification() {
        (
            quote!(notice),
            quote!(#call;),
            quote! {
                Fut: ::core::future::Future<Output = ()> + ::core::marker::Send + 'static,
            },
            quote!(),
        )
    } else {
        let (body, ok, err) = match &method.output {
            Output::Unit => (
                quote! {
                    #call;
                    ::core::result::Result::Ok::<(), #krate::RpcError>(())
                },
                quote!(()),
                quote!(#krate::RpcError),
            ),
            Output::Value(ty) => (
                quote!(::core::result::Result::Ok::<#ty, #krate::RpcError>(#call)),
                quote!(#ty),
                quote!(#krate::RpcError),
            ),
            Output::Result { ok, err } => {
                let err = match err {
                    Some(err) => quote!(#err),
                    None => infer.clone(),
                };
                (call, quote!(#ok), err)
            }
        };
        (
            quote!(typed),
            body,
            quote! {
                T: #krate::__private::RpcResult,
                E: #krate::__private::IntoRpcError,
                Fut: ::core::future::Future<Output = ::core::result::Result<T, E>>
                    + ::core::marker::Send
                    + 'static,
            },
            quote!(#ok, #err,),
        )
    };
    let output_generics = if method.is_notification() {
        quote!()
    } else {
        quote!(T, E,)
    };

    quote_spanned! {span=>
        #(#cfgs)*
        {
            fn #helper<#(#generics,)* #output_generics F, Fut>(
                table: &mut #krate::Methods,
                name: &'static str,
                names: &'static [&'static str],
                handler: F,
            ) where
                #(#generics: #krate::__private::RpcParam,)*
                #output_bounds
                F: ::core::ops::Fn(#generic_ty, #krate::Context) -> Fut
                    + ::core::marker::Send
                    + ::core::marker::Sync
                    + 'static,
            {
                #krate::__private::discard(#krate::Methods::#register(table, name, names, handler));
            }
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
}
