//! Code generation. Every rule was checked in [`crate::valid`], so nothing
//! here can fail: each function renders tokens from the model.

mod client;
mod server;

use proc_macro2::{Delimiter, Group, Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::token::Brace;
use syn::{Block, Expr, Ident, Item, ItemTrait, ReturnType, Stmt, TraitItem, Type};

use crate::ast::{Kind, Service, WireName};
use crate::attr::{ServiceArgs, respan};
use crate::valid::INTO_METHODS;

/// Returns the generated items for a valid service. `item` is the user's item
/// with the helper attributes taken out.
pub(crate) fn expand(item: Item, service: &Service, args: &ServiceArgs) -> TokenStream {
    match (item, &service.kind) {
        (Item::Trait(mut item), Kind::Trait { ident, vis, .. }) => {
            make_futures_send(&mut item);
            let into_methods = server::into_methods(service, args);
            item.items.push(TraitItem::Verbatim(into_methods));
            let client = match &service.client {
                Some(client) => client::client(service, args, client, ident, vis),
                None => TokenStream::new(),
            };
            quote!(#item #client)
        }
        (Item::Impl(mut item), Kind::Impl { self_ty, .. }) => {
            // `&self` is required of every method, used or not.
            for impl_item in &mut item.items {
                if let syn::ImplItem::Fn(f) = impl_item {
                    f.attrs
                        .push(syn::parse_quote!(#[allow(clippy::unused_self)]));
                }
            }
            let into_methods = server::into_methods(service, args);
            quote! {
                #item
                impl #self_ty {
                    #into_methods
                }
            }
        }
        // The model is read from the item, so the kinds always agree.
        (item, _) => item.into_token_stream(),
    }
}

/// Returns the output when there are errors: the user's item (helper attributes
/// taken out, futures made `Send` as in a good build) and stand-ins for the
/// generated items, so code using them does not add errors of its own.
pub(crate) fn fallback(item: Item, service: Option<&Service>, args: &ServiceArgs) -> TokenStream {
    let krate = &args.krate;
    let has_into_methods = service.is_some_and(|service| {
        service
            .methods
            .iter()
            .any(|method| method.sig.ident.unraw() == INTO_METHODS)
    });
    match (item, service.map(|service| (service, &service.kind))) {
        (
            Item::Trait(mut item),
            Some((
                service,
                Kind::Trait {
                    ident,
                    vis,
                    generics,
                    ..
                },
            )),
        ) => {
            match &service.stray.async_trait {
                // The impls were written for `#[async_trait]`: the trait
                // keeps it, so that they still match and the one error is
                // the one at the attribute.
                Some(attr) => item.attrs.push(attr.clone()),
                None => make_futures_send(&mut item),
            }
            if !has_into_methods {
                item.items.push(TraitItem::Verbatim(quote! {
                    #[doc(hidden)]
                    fn into_methods(self) -> #krate::Methods
                    where
                        Self: ::core::marker::Sized,
                    {
                        ::core::unimplemented!()
                    }
                }));
            }
            let client = match &service.client {
                Some(client) => client::stand_in(service, args, client, ident, vis, generics),
                None => TokenStream::new(),
            };
            quote!(#item #client)
        }
        (Item::Impl(item), Some((_, Kind::Impl { self_ty, generics }))) => {
            if has_into_methods || !generics.params.is_empty() {
                return item.into_token_stream();
            }
            quote! {
                #item
                impl #self_ty {
                    #[doc(hidden)]
                    #[allow(dead_code)]
                    pub fn into_methods(self) -> #krate::Methods {
                        ::core::unimplemented!()
                    }
                }
            }
        }
        (item, _) => item.into_token_stream(),
    }
}

/// Rewrites each `async fn` of the trait to a `fn` returning
/// `impl Future<Output = T> + Send`, so handlers can run on a
/// multi-threaded runtime. Sync methods stay as written.
fn make_futures_send(item: &mut ItemTrait) {
    for trait_item in &mut item.items {
        let TraitItem::Fn(f) = trait_item else {
            continue;
        };
        let Some(asyncness) = f.sig.asyncness.take() else {
            continue;
        };
        // Spanned at `async`, so "future cannot be sent" notes point there.
        let span = at(asyncness.span);
        let output = match &f.sig.output {
            ReturnType::Default => quote_spanned!(span=> ()),
            ReturnType::Type(_, ty) => ty.to_token_stream(),
        };
        let future = quote_spanned! {span=>
            impl ::core::future::Future<Output = #output> + ::core::marker::Send
        };
        f.sig.output = ReturnType::Type(syn::Token![->](span), Box::new(Type::Verbatim(future)));
        if let Some(block) = &mut f.default {
            let body = block.to_token_stream();
            *block = Block {
                brace_token: Brace(block.brace_token.span),
                stmts: vec![Stmt::Expr(
                    Expr::Verbatim(quote_spanned!(span=> async move #body)),
                    None,
                )],
            };
        }
    }
}

/// Returns the wire name as an expression of type `&'static str`: the string
/// literal, or a block that evaluates `name = EXPR` in constants (the
/// namespace joined in front, at compile time). With `key` (the attribute's
/// key that gave the name: `name`, `notification`, `unsubscribe`), the block
/// makes the checks a literal gets from the macro, in constants, so that a
/// constant that is empty or starts with `rpc.` is a compile error at `EXPR`;
/// the table makes them once, and the stub evaluates the same name without
/// them (`""`).
fn wire_name(name: &WireName, args: &ServiceArgs, key: &str) -> TokenStream {
    let checked = !key.is_empty();
    let (prefix, expr) = match name {
        WireName::Known(name) => return quote!(#name),
        WireName::Expr { prefix, expr } => (prefix, expr),
    };
    let span = at(syn::spanned::Spanned::span(expr));
    let krate = krate_at(args, span);
    let given = Ident::new("__JRPC_NAME_GIVEN", Span::mixed_site());
    let wire = Ident::new("__JRPC_NAME", Span::mixed_site());
    let str_ = quote_spanned!(span=> ::core::primitive::str);
    let empty = checked.then(|| {
        let message = if key == "name" {
            "a jrpc method name cannot be empty: this constant is `\"\"`; give a name, or remove \
             `name = ...` to use the method's own name"
                .to_owned()
        } else {
            format!(
                "a jrpc method name cannot be empty: this constant is `\"\"`; give a name in \
                 `{key} = ...`"
            )
        };
        quote_spanned! {span=>
            const _: () = if #given.is_empty() {
                ::core::panic!(#message)
            };
        }
    });
    let reserved = checked.then(|| {
        quote_spanned! {span=>
            const _: () = if #krate::__private::is_reserved(#wire) {
                ::core::panic!(
                    "method names starting with `rpc.` are reserved by JSON-RPC 2.0 for the \
                     protocol: choose another name"
                )
            };
        }
    });
    let joined = if prefix.is_empty() {
        quote_spanned!(span=> const #wire: &'static #str_ = #given;)
    } else {
        let len = Ident::new("__JRPC_NAME_LEN", Span::mixed_site());
        let bytes = Ident::new("__JRPC_NAME_BYTES", Span::mixed_site());
        quote_spanned! {span=>
            const #len: ::core::primitive::usize = #prefix.len() + #given.len();
            const #bytes: [::core::primitive::u8; #len] =
                #krate::__private::join_name::<#len>(#prefix, #given);
            const #wire: &'static #str_ = #krate::__private::joined_name(&#bytes);
        }
    };
    quote_spanned! {span=>
        {
            const #given: &'static #str_ = #expr;
            #empty
            #joined
            #reserved
            #wire
        }
    }
}

/// Returns the runtime path with every token at `span`, for code spanned at a
/// user's type.
fn krate_at(args: &ServiceArgs, span: Span) -> TokenStream {
    respan(args.krate.to_token_stream(), span)
}

/// Returns a span with the call site's hygiene at the location of `span` (a
/// user's token): rustc reports errors there, while lints still see generated
/// code.
fn at(span: Span) -> Span {
    Span::call_site().located_at(span)
}

/// Returns a local variable of the generated code: def-site hygiene for locals,
/// so it can neither shadow nor be shadowed by the user's names.
fn local(name: &str) -> Ident {
    Ident::new(name, Span::mixed_site())
}

/// Returns a local variable (as [`local`]) whose errors point at `span`.
fn local_at(name: &str, span: Span) -> Ident {
    Ident::new(name, Span::mixed_site().located_at(span))
}

/// `head(args)` with the parenthesised `args` at `end`: when `head` starts
/// with a token at `start`, the call covers `start..end`. rustc reports an
/// unmet bound of a call's argument where the call is, so a call spanned
/// over a user's type reports as if at the type itself.
fn call_over(mut head: TokenStream, args: TokenStream, end: Span) -> TokenStream {
    let mut group = Group::new(Delimiter::Parenthesis, args);
    group.set_span(at(end));
    head.extend([proc_macro2::TokenTree::Group(group)]);
    head
}

/// [`call_over`] with the parenthesis at `end` itself: with `head` starting at
/// a user's token as written, the call covers that type's tokens exactly.
fn call_as_written(mut head: TokenStream, args: TokenStream, end: Span) -> TokenStream {
    let mut group = Group::new(Delimiter::Parenthesis, args);
    group.set_span(end);
    head.extend([proc_macro2::TokenTree::Group(group)]);
    head
}
