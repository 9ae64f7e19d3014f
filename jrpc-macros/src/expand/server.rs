//! `into_methods`: the method table of a service.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
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
fn register(method: &Method, args: &ServiceArgs) -> TokenStream {
    let krate = &args.krate;
    let this = local("__jrpc_this");
    let table = local("__jrpc_methods");
    let ctx = local("__jrpc_ctx");
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
            quote!(#krate::__private::Whole(#(#idents)*)),
            quote!(#krate::__private::Whole<#(#types)*>),
        )
    } else {
        (quote!((#(#idents,)*)), quote!((#(#types,)*)))
    };

    // The call, arguments in the user's order, the context injected.
    let call_args = method.params.iter().map(|param| match param.kind {
        ParamKind::Context => quote!(&#ctx),
        ParamKind::Value => {
            let ident = param.ident();
            quote!(#ident)
        }
    });
    let ident = &method.sig.ident;
    let mut call = quote!(Self::#ident(&#this, #(#call_args),*));
    if method.is_async {
        call = quote!(#call.await);
    }

    let (register, body) = if method.is_notification() {
        (quote!(notice), quote!(#call;))
    } else {
        let body = match &method.output {
            Output::Unit => quote! {
                #call;
                ::core::result::Result::Ok::<(), #krate::RpcError>(())
            },
            Output::Value(ty) => quote! {
                ::core::result::Result::Ok::<#ty, #krate::RpcError>(#call)
            },
            Output::Result { .. } => call,
        };
        (quote!(typed), body)
    };

    quote! {
        #(#cfgs)*
        #krate::__private::discard(#krate::Methods::#register(
            &mut #table,
            #wire,
            &[#(#names),*],
            {
                let #this = ::std::sync::Arc::clone(&#this);
                move |#pat: #ty, #ctx: #krate::Context| {
                    let #this = ::std::sync::Arc::clone(&#this);
                    async move { #body }
                }
            },
        ));
    }
}
