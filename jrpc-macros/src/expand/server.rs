//! `into_methods`: the method table of a service.
//!
//! Each method is one call of a registration helper of the runtime
//! (`__private::call_N`, `notify_N`, `call_whole`, `notify_whole`) with the
//! parameter types given explicitly (so an unmet bound points at the type)
//! and a closure calling the method.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::ext::IdentExt;

use super::{at, call_as_written, call_over, krate_at, local, local_at, wire_name};
use crate::ast::{
    Kind, Method, Output, Param, ParamKind, Service, WireName, is_context, tokens_text,
};
use crate::attr::{ServiceArgs, cfg_predicate};
use crate::ty::range;

/// Generates the `into_methods` function: in the trait as a provided method, or
/// in an inherent `impl` of the type.
pub(super) fn into_methods(service: &Service, args: &ServiceArgs) -> TokenStream {
    let krate = &args.krate;
    let names: Vec<String> = service
        .methods
        .iter()
        .map(|method| {
            let name = match method.wire_name.known() {
                Some(name) => format!("`{name}`"),
                None => method.wire_name.in_docs("method"),
            };
            let unsubscribe = method
                .subscription
                .as_ref()
                .and_then(|sub| sub.unsubscribe.as_ref());
            match unsubscribe {
                Some(WireName::Known(unsubscribe)) => {
                    format!("{name} (a subscription, which `{unsubscribe}` ends)")
                }
                Some(unsubscribe) => format!(
                    "{name} (a subscription, which {} ends)",
                    unsubscribe.in_docs("method")
                ),
                None => name,
            }
        })
        .collect();
    let mut doc = vec![if names.is_empty() {
        "Builds the method table of this service, which has no methods.".to_owned()
    } else {
        format!(
            "Builds the method table of this service: {}.",
            names.join(", ")
        )
    }];
    doc.push(String::new());
    doc.push("Serve it with any transport, or call it in-process with `Methods::handle`.".into());
    let by_expression = |name: Option<&WireName>| name.is_some_and(|name| name.known().is_none());
    if service.methods.iter().any(|method| {
        by_expression(Some(&method.wire_name))
            || by_expression(
                method
                    .subscription
                    .as_ref()
                    .and_then(|sub| sub.unsubscribe.as_ref()),
            )
    }) {
        doc.push(String::new());
        doc.push("# Panics".into());
        doc.push(String::new());
        doc.push(
            "When two methods have one wire name: a name given by a constant \
             (`#[rpc(name = EXPR)]`, or in `#[subscription(...)]`) is known only to the \
             compiler, so a clash with it is found here, in the service's definition, rather \
             than by the macro."
                .into(),
        );
    }
    if let Kind::Trait {
        supertraits: true, ..
    } = service.kind
    {
        doc.push(String::new());
        doc.push(
            "Methods of supertraits are not in the table: give a supertrait its own \
             `#[rpc_service]` and add its table with `Methods::merge`."
                .into(),
        );
    }
    // A trait's `Self` is generic, so the bounds are checked where
    // `into_methods` is called. On an inherent `impl` they would also be
    // checked where it is defined, a second error for one mistake, unless
    // written with a lifetime rustc leaves to the caller.
    let (vis, bounds) = match service.kind {
        Kind::Trait { .. } => (
            quote!(),
            quote! {
                Self: ::core::marker::Sized
                    + ::core::marker::Send
                    + ::core::marker::Sync
                    + 'static,
            },
        ),
        Kind::Impl { .. } => {
            doc.push(String::new());
            doc.push("The service must be `Send + Sync + 'static`.".into());
            (
                quote!(pub),
                quote!(for<'jrpc> Self: #krate::__private::Service<'jrpc>,),
            )
        }
    };

    let this = local("__jrpc_this");
    let table = local("__jrpc_methods");
    let service_name = match &service.kind {
        Kind::Trait { ident, .. } => ident.unraw().to_string(),
        Kind::Impl { self_ty, .. } => tokens_text(&self_ty.to_token_stream()),
    };
    let registrations = service
        .methods
        .iter()
        .flat_map(|method| registrations(method, args));
    // One check that the runtime can generate schemas, at `schema`, instead of one per type.
    let schema_check = args.schema.map(|span| {
        let krate = krate_at(args, at(span));
        quote_spanned!(at(span)=> #krate::__private::schema_feature::<()>();)
    });
    let body = if service.methods.is_empty() {
        quote!(#schema_check #krate::Methods::new())
    } else {
        quote! {
            #schema_check
            #[allow(unused_variables)]
            let #this = ::std::sync::Arc::new(self);
            #[allow(unused_mut)]
            let mut #table = #krate::__private::Table::new(#service_name);
            #(#registrations)*
            #table.finish()
        }
    };
    quote! {
        #(#[doc = #doc])*
        #[must_use]
        // `non_snake_case`: the closures bind the parameters by the user's
        // names, whose lints were reported at the method.
        #[allow(dead_code, deprecated, non_snake_case)]
        #vis fn into_methods(self) -> #krate::Methods
        where
            #bounds
        {
            #body
        }
    }
}

/// Returns the registrations of one method: one, or, when parameters carry
/// `#[cfg]`s, one per combination of their predicates, each under the
/// `#[cfg]` that selects it and with the parameters that combination keeps
/// (the macro cannot evaluate `cfg`; the compiler keeps exactly one).
fn registrations(method: &Method, args: &ServiceArgs) -> Vec<TokenStream> {
    let mut predicates: Vec<(String, TokenStream)> = Vec::new();
    for param in &method.params {
        if param.cfgs.is_empty() {
            continue;
        }
        let predicate = cfg_predicate(&param.cfgs);
        let key = predicate.to_string();
        if !predicates.iter().any(|(k, _)| *k == key) {
            predicates.push((key, predicate));
        }
    }
    if predicates.is_empty() {
        let params: Vec<&Param> = method.params.iter().collect();
        return vec![register(method, &params, None, args)];
    }
    (0..1u32 << predicates.len())
        .map(|mask| {
            let on = |i: usize| mask & (1 << i) != 0;
            let selected =
                predicates.iter().enumerate().map(
                    |(i, (_, p))| {
                        if on(i) { quote!(#p) } else { quote!(not(#p)) }
                    },
                );
            let selector = quote!(all(#(#selected),*));
            let params: Vec<&Param> = method
                .params
                .iter()
                .filter(|param| {
                    param.cfgs.is_empty() || {
                        let key = cfg_predicate(&param.cfgs).to_string();
                        predicates
                            .iter()
                            .position(|(k, _)| *k == key)
                            .is_some_and(on)
                    }
                })
                .collect();
            register(method, &params, Some(selector), args)
        })
        .collect()
}

/// Returns the runtime helper for a method's shape.
fn helper(method: &Method, values: usize, span: Span) -> proc_macro2::Ident {
    let kind = if method.subscription.is_some() {
        "subscribe"
    } else if method.is_notification() {
        "notify"
    } else {
        "call"
    };
    if method.whole().is_some() {
        format_ident!("{kind}_whole", span = span)
    } else {
        format_ident!("{kind}_{values}", span = span)
    }
}

/// One registration: a call of the method's shape helper with the user's
/// types and a handler closure calling the method. `params` are the
/// parameters of the build `selector` (a `cfg` predicate) selects.
fn register(
    method: &Method,
    params: &[&Param],
    selector: Option<TokenStream>,
    args: &ServiceArgs,
) -> TokenStream {
    let ident = &method.sig.ident;
    // Everything but the user's own tokens points at the method's name: a
    // bound found unmet here (a future that is not `Send`) is blamed there.
    let span = at(ident.span());
    let krate = &krate_at(args, span);
    let this = local_at("__jrpc_this", span);
    let table = local_at("__jrpc_methods", span);
    let ctx_used = params.iter().any(|p| p.kind == ParamKind::Context);
    let ctx = local_at("__jrpc_ctx", span);
    let ctx_pat = if ctx_used {
        quote!(#ctx)
    } else {
        quote_spanned!(span=> _)
    };
    let values: Vec<&Param> = params
        .iter()
        .copied()
        .filter(|param| param.kind == ParamKind::Value)
        .collect();
    let helper = helper(method, values.len(), span);
    let wire = wire_name(&method.wire_name, args, "name");
    let rust_name = ident.unraw().to_string();
    let mut cfgs = method
        .cfgs
        .iter()
        .map(ToTokens::to_token_stream)
        .collect::<Vec<_>>();
    cfgs.extend(selector.map(|selector| quote_spanned!(span=> #[cfg(#selector)])));
    let doc = &method.doc_text;
    let deprecated = method.deprecated;

    // The decoded value: a tuple of the parameters read from `params`, or
    // the one parameter wrapped in `Whole`.
    let idents: Vec<_> = values.iter().filter_map(|param| param.ident()).collect();
    let (checks, witnesses) = param_witnesses(&values, args);
    let names: Vec<&str> = values
        .iter()
        .map(|param| param.wire_name.as_str())
        .collect();
    let pat = if method.whole().is_some() {
        quote_spanned!(span=> #krate::Whole(#(#idents)*))
    } else {
        quote_spanned!(span=> (#(#idents,)*))
    };
    let call = method_call(method, params, args, span, &this, &ctx);

    if method.is_notification() {
        return quote_spanned! {span=>
            #(#cfgs)*
            {
                #(#checks)*
                #krate::__private::#helper(
                    &mut #table,
                    &#this,
                    #krate::__private::Meta(#wire, &[#(#names),*], #doc, #deprecated, #rust_name),
                    #(#witnesses,)*
                    move |#this, #pat, #ctx_pat| async move { #call; },
                );
            }
        };
    }

    // Whether the return type is a `Result` is decided by the type: the
    // probe gives `IsResult` or `IsValue`, passed twice, spanned once at the
    // success type and once at the error type, as written: the helper's
    // bounds on them are reported there.
    let kind = local_at("__jrpc_kind", span);
    let unit = quote_spanned!(span=> ());
    let returned = method.output_ty.as_deref().map_or(unit, |ty| quote!(#ty));
    let (ok, err, result_checks) = result_witnesses(method, args, span);

    // A subscription's items: the item type's witness, made at `T` of `Items<T>` as written,
    // and its other names.
    if let Some(sub) = &method.subscription {
        let (item_check, item) = item_witness(sub.item.as_deref(), args, span);
        let notification = sub
            .notification
            .as_ref()
            .map(|name| wire_name(name, args, "notification"));
        let unsubscribe = sub
            .unsubscribe
            .as_ref()
            .map(|name| wire_name(name, args, "unsubscribe"));
        return quote_spanned! {span=>
            #(#cfgs)*
            {
                let #kind = #krate::__private::Probe::<#returned>::NEW.kind();
                #(#checks)*
                #item_check
                #result_checks
                #krate::__private::#helper(
                    &mut #table,
                    &#this,
                    #krate::__private::Meta(#wire, &[#(#names),*], #doc, #deprecated, #rust_name),
                    #krate::__private::Names(#notification, #unsubscribe),
                    #(#witnesses,)*
                    #item,
                    #ok,
                    #err,
                    move |#this, #pat, #ctx_pat| async move { #kind.split(#call) },
                );
            }
        };
    }
    quote_spanned! {span=>
        #(#cfgs)*
        {
            let #kind = #krate::__private::Probe::<#returned>::NEW.kind();
            #(#checks)*
            #result_checks
            #krate::__private::#helper(
                &mut #table,
                &#this,
                #krate::__private::Meta(#wire, &[#(#names),*], #doc, #deprecated, #rust_name),
                #(#witnesses,)*
                #ok,
                #err,
                move |#this, #pat, #ctx_pat| async move { #kind.split(#call) },
            );
        }
    }
}

/// One witness per parameter type: the statements that make them, and the
/// arguments that pass them to the helper.
///
/// A witness is made first, through the parameter trait and at the type as
/// written (`<T as RpcParam>::witness()`, then `RpcSchema::describe` with
/// `schema`): rustc checks the trait there, early, and reports it with no
/// note. The helper's bound on the same type, at an argument spanned over
/// the same tokens, is then an error already reported at that place, which
/// rustc leaves out; reported on its own, it would carry a note pointing
/// into the runtime. Naming the type again is harmless: a type that does not
/// resolve gives the same error at the same place, which rustc reports once.
fn param_witnesses(values: &[&Param], args: &ServiceArgs) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let mut checks = Vec::new();
    let witnesses = values
        .iter()
        .enumerate()
        .map(|(i, param)| {
            let (start, end) = range(&param.ty);
            let start = at(start);
            let krate = krate_at(args, start);
            let ty = &param.ty;
            if is_context(ty) {
                // Maybe the runtime's context, taken by value: decided by
                // the type, which then gets its own message.
                let param_fn = if args.schema.is_some() {
                    "described"
                } else {
                    "param"
                };
                let param_fn = Ident::new(param_fn, start);
                let mut head = quote_spanned!(start=> #krate::__private::Probe::<);
                head.extend(quote!(#ty));
                head.extend(quote_spanned!(start=> >::NEW));
                head.extend(quote_spanned!(at(end)=> .#param_fn));
                return call_over(head, TokenStream::new(), end);
            }
            let witness = local_at(&format!("__jrpc_p{i}"), start);
            // Spanned over the user's own tokens, as written (not at the macro's call site):
            // rustc reports the witness's check at the type as written, and the helper's bound
            // is left out only where it has that very span.
            let (first, last) = range(ty);
            let krate = krate_at(args, first);
            let mut head = quote_spanned!(first=> <);
            head.extend(quote!(#ty));
            head.extend(quote_spanned!(first=> as #krate::__private::RpcParam>::witness));
            let made = call_as_written(head, TokenStream::new(), last);
            checks.push(quote_spanned!(start=> let #witness = #made;));
            if args.schema.is_some() {
                let described = call_over(
                    quote_spanned!(start=> #krate::__private::RpcSchema::describe),
                    quote!(#witness),
                    end,
                );
                checks.push(quote_spanned!(start=> let #witness = #described;));
            }
            call_as_written(
                quote_spanned!(first=> #krate::__private::Param::at),
                quote!(#witness),
                last,
            )
        })
        .collect();
    (checks, witnesses)
}

/// Returns the call of the method, arguments in the user's order, the context
/// injected (as the type the parameter names, which must be the runtime's
/// `Context`), awaited when the method gives a future.
fn method_call(
    method: &Method,
    params: &[&Param],
    args: &ServiceArgs,
    span: Span,
    this: &Ident,
    ctx: &Ident,
) -> TokenStream {
    let ident = &method.sig.ident;
    let call_args = params.iter().map(|param| match param.kind {
        ParamKind::Context => {
            // The trait's own method, spanned over the type: rustc reports
            // a type that is not the runtime's `Context` there, with no note.
            let (start, end) = range(&param.ty);
            let krate = krate_at(args, at(start));
            let mut head = quote_spanned!(at(start)=> #krate::__private::Injected::);
            head.extend([proc_macro2::TokenTree::Ident(Ident::new(
                "from_context",
                at(end),
            ))]);
            call_over(head, quote_spanned!(span=> &#ctx), end)
        }
        ParamKind::Value => {
            let ident = param.ident();
            quote_spanned!(span=> #ident)
        }
    });
    let call = quote_spanned!(span=> Self::#ident(&#this, #(#call_args),*));
    if method.is_async {
        quote_spanned!(span=> #call.await)
    } else {
        call
    }
}

/// Returns the probe's kind as the success and as the error witness, each
/// spanned at its type as written (the whole return type for an error type that
/// is not written out), and the checks made first at the same places (as a
/// parameter's, so that rustc reports each with no note into the runtime).
fn result_witnesses(
    method: &Method,
    args: &ServiceArgs,
    span: Span,
) -> (TokenStream, TokenStream, TokenStream) {
    let whole = method.output_ty.as_deref().map(range);
    let (ok_range, err_range) = match &method.output {
        Output::Unit => ((span, span), (span, span)),
        Output::Value(ty) => (range(ty), range(ty)),
        Output::Result { ok, err } => (
            range(ok),
            err.as_deref().map(range).or(whole).unwrap_or((span, span)),
        ),
    };
    // `krate::__private::at(kind)`, with more arguments after the kind.
    let witness = |(start, end): (Span, Span), helper: &str, more: TokenStream| {
        let start = at(start);
        let krate = krate_at(args, start);
        let kind = local_at("__jrpc_kind", start);
        let helper = Ident::new(helper, start);
        call_over(
            quote_spanned!(start=> #krate::__private::#helper),
            quote!(#kind #more),
            end,
        )
    };
    // `Bound::method(of(kind))`: the trait's own method, at the type.
    let trait_call = |(start, end): (Span, Span), bound: &str, method: &str, of: &str| {
        let start = at(start);
        let krate = krate_at(args, start);
        let kind = local_at("__jrpc_kind", start);
        let of = Ident::new(of, start);
        let bound = Ident::new(bound, start);
        let arg = call_over(
            quote_spanned!(start=> #krate::__private::#of),
            quote!(#kind),
            end,
        );
        let mut head = quote_spanned!(start=> #krate::__private::#bound::);
        head.extend([proc_macro2::TokenTree::Ident(Ident::new(method, at(end)))]);
        call_over(head, arg, end)
    };
    // A subscription's success type is `Items<T>`, whose `T` has a witness of its own (and the
    // item's schema goes with it).
    let subscription = method.subscription.is_some();
    let checks = match method.output {
        Output::Unit => TokenStream::new(),
        _ if subscription => {
            let err = trait_call(err_range, "IntoRpcError", "check", "err_of");
            quote!(#err;)
        }
        _ => {
            let ok = trait_call(ok_range, "RpcResult", "check", "ok_of");
            let err = trait_call(err_range, "IntoRpcError", "check", "err_of");
            quote!(#ok; #err;)
        }
    };
    let ok = if args.schema.is_some() && !subscription {
        let schema = trait_call(ok_range, "RpcSchema", "of", "ok_of");
        witness(ok_range, "at_described", quote!(, #schema))
    } else {
        witness(ok_range, "at", TokenStream::new())
    };
    (ok, witness(err_range, "at", TokenStream::new()), checks)
}

/// Returns a subscription's item witness, made at `T` of `Items<T>` as written
/// (`<T as RpcItem>::witness()`, then `RpcSchema::item` with `schema`), as a parameter's is: the
/// statements that make it, and the argument that passes it to the helper.
fn item_witness(
    item: Option<&syn::Type>,
    args: &ServiceArgs,
    span: Span,
) -> (TokenStream, TokenStream) {
    let Some(ty) = item else {
        // Validation reported a subscription without an item type: not expanded.
        return (TokenStream::new(), quote_spanned!(span=> ()));
    };
    let (first, last) = range(ty);
    let start = at(first);
    let krate = krate_at(args, first);
    let witness = local_at("__jrpc_item", start);
    let mut head = quote_spanned!(first=> <);
    head.extend(quote!(#ty));
    head.extend(quote_spanned!(first=> as #krate::__private::RpcItem>::witness));
    let made = call_as_written(head, TokenStream::new(), last);
    let mut checks = quote_spanned!(start=> let #witness = #made;);
    if args.schema.is_some() {
        let krate = krate_at(args, start);
        let described = call_over(
            quote_spanned!(start=> #krate::__private::RpcSchema::item),
            quote!(#witness),
            last,
        );
        checks.extend(quote_spanned!(start=> let #witness = #described;));
    }
    let passed = call_as_written(
        quote_spanned!(first=> #krate::__private::Item::at),
        quote!(#witness),
        last,
    );
    (checks, passed)
}
