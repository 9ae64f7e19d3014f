//! The client stub of a service trait: `{Trait}Client<C>`, or the name
//! given with `client = "..."`.
//!
//! The struct is defined in a module of its own and brought into the
//! service's module by a glob import, which a user's item of the same name
//! shadows instead of clashing with. Its impls name it through that module,
//! so they never attach to the user's type, and a check in the service's
//! module reports the shadowing once, naming the option that renames the
//! stub.

use proc_macro2::{Ident, Span, TokenStream, TokenTree};
use quote::{ToTokens, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned as _;
use syn::{Generics, Path, Visibility};

use super::{at, call_as_written, call_over, krate_at, local, wire_name};

mod subscription;

use crate::ast::{Method, Output, Param, Service, is_context};
use crate::attr::ServiceArgs;
use crate::ty::{Scan, range};
use crate::valid::CLIENT_METHODS;
use subscription::subscription_method;

/// Generates the stub struct, its constructors and one method per service
/// method.
pub(super) fn client(
    service: &Service,
    args: &ServiceArgs,
    client: &Ident,
    trait_ident: &Ident,
    vis: &Visibility,
) -> TokenStream {
    let caller = caller_param(service);
    let module = Service::stub_module(client);
    let stub = quote!(#module::#client::<#caller>);
    let (methods, batched): (Vec<_>, Vec<_>) = service
        .methods
        .iter()
        .filter(|method| method.subscription.is_none())
        .map(|method| stub_method(method, args, &stub))
        .unzip();
    // Subscriptions need a connection that stays open: their methods are in an impl of their
    // own, for callers that can subscribe.
    let subscriptions: Vec<_> = service
        .methods
        .iter()
        .filter(|method| method.subscription.is_some())
        .map(|method| subscription_method(method, args))
        .collect();
    let mut out = shell(service, args, client, trait_ident, vis, &caller);
    let krate = &args.krate;
    let batch = batch_ident(client);
    let batch_module = Service::stub_module(&batch);
    out.extend(quote! {
        #[allow(dead_code, clippy::too_many_arguments)]
        impl<#caller: #krate::Caller> #module::#client<#caller> {
            #(#methods)*
        }

        #[allow(dead_code, clippy::too_many_arguments)]
        impl<#caller: #krate::Caller> #batch_module::#batch<'_, #caller> {
            #(#batched)*
        }
    });
    if !subscriptions.is_empty() {
        out.extend(quote! {
            #[allow(dead_code, clippy::too_many_arguments)]
            impl<#caller: #krate::Subscriber> #module::#client<#caller> {
                #(#subscriptions)*
            }
        });
    }
    out
}

/// Returns the name of the stub's typed batch: `{Stub}Batch`, spanned in the
/// expansion (its module-qualified uses are then none of the user's lints).
fn batch_ident(client: &Ident) -> Ident {
    Ident::new(&format!("{}Batch", client.unraw()), Span::call_site())
}

/// Generates the stub's struct, its constructors, and the check that its name
/// is its own: everything that does not depend on the methods.
fn shell(
    service: &Service,
    args: &ServiceArgs,
    client: &Ident,
    trait_ident: &Ident,
    vis: &Visibility,
    caller: &Ident,
) -> TokenStream {
    let name_check = name_check(args, client, at(client.span()));
    let mut out = structs(service, args, client, trait_ident, vis, caller);
    out.extend(constructors(service, args, client, caller));
    out.extend(name_check);
    out
}

/// Generates the stub's struct and its batch's, each in a module of its own,
/// and the glob imports that bring them into the service's module.
fn structs(
    service: &Service,
    args: &ServiceArgs,
    client: &Ident,
    trait_ident: &Ident,
    vis: &Visibility,
    caller: &Ident,
) -> TokenStream {
    let inner = inner_path(&args.krate);
    let module = Service::stub_module(client);
    let lints = &service.lints;
    let trait_name = trait_ident.unraw();
    let doc = format!(
        "A typed client of [`{trait_name}`]: each method sends one JSON-RPC request \
         through a `Caller` and decodes the answer."
    );
    let batch = batch_ident(client);
    let batch_module = Service::stub_module(&batch);
    let batch_doc = format!(
        "A typed batch of [`{client}`] calls, made by `{client}::batch`: each method adds \
         a call (returning the `Slot` its answer is taken with) or a notification, and \
         `.await` sends them together and gives the `BatchAnswers`.",
        client = client.unraw()
    );
    quote! {
        #[allow(non_snake_case, dead_code, unused_imports, clippy::wildcard_imports)]
        mod #module {
            use super::*;

            #[doc = #doc]
            #[doc = ""]
            #[doc = "Params are sent by position unless set otherwise with `with_encoding`."]
            #[derive(::core::clone::Clone, ::core::fmt::Debug)]
            #(#lints)*
            pub struct #client<#caller> {
                pub(super) caller: #caller,
                pub(super) encoding: #inner::ParamEncoding,
            }

        }

        // A module (and glob import) of its own, so that a user's type named
        // as the stub shadows the stub alone.
        #[allow(non_snake_case, dead_code, unused_imports, clippy::wildcard_imports)]
        mod #batch_module {
            use super::*;

            #[doc = #batch_doc]
            #[derive(::core::fmt::Debug)]
            #(#lints)*
            pub struct #batch<'jrpc, #caller> {
                pub(super) caller: &'jrpc #caller,
                pub(super) encoding: #inner::ParamEncoding,
                pub(super) batch: #inner::Batch,
            }
        }

        #[allow(unused_imports, clippy::wildcard_imports)]
        #vis use #module::*;
        #[allow(unused_imports, clippy::wildcard_imports)]
        #vis use #batch_module::*;
    }
}

/// Generates the stub's own methods (`new`, `with_encoding`, `caller`,
/// `into_caller`, `batch`) and the batch's `IntoFuture`.
fn constructors(
    service: &Service,
    args: &ServiceArgs,
    client: &Ident,
    caller: &Ident,
) -> TokenStream {
    let krate = &args.krate;
    let module = Service::stub_module(client);
    let lints = &service.lints;
    let batch = batch_ident(client);
    let batch_module = Service::stub_module(&batch);
    quote! {
        #[allow(dead_code)]
        #(#lints)*
        impl<#caller> #module::#client<#caller> {
            /// Creates a client that sends requests through `caller`, with
            /// params by position.
            #[must_use]
            pub fn new(caller: #caller) -> Self {
                Self {
                    caller,
                    encoding: #krate::ParamEncoding::Positional,
                }
            }

            /// Sets how params are sent: by position (the default) or by name.
            #[must_use]
            pub fn with_encoding(mut self, encoding: #krate::ParamEncoding) -> Self {
                self.encoding = encoding;
                self
            }

            /// Returns the caller this client sends requests through.
            #[must_use]
            pub fn caller(&self) -> &#caller {
                &self.caller
            }

            /// Gives the caller back.
            #[must_use]
            pub fn into_caller(self) -> #caller {
                self.caller
            }

            /// Starts a typed batch: add calls with the service's method names, each
            /// returning the `Slot` of its answer, then `.await` the batch to send it.
            #[must_use]
            pub fn batch(&self) -> #batch_module::#batch<'_, #caller> {
                #batch_module::#batch {
                    caller: &self.caller,
                    encoding: self.encoding,
                    batch: #krate::Batch::new(),
                }
            }
        }

        #(#lints)*
        impl<'jrpc, #caller: #krate::Caller> ::core::future::IntoFuture
            for #batch_module::#batch<'jrpc, #caller>
        {
            type Output = ::core::result::Result<#krate::BatchAnswers, #krate::ClientError>;
            type IntoFuture = #krate::BoxFuture<'jrpc, Self::Output>;

            fn into_future(self) -> Self::IntoFuture {
                ::std::boxed::Box::pin(self.batch.send(self.caller))
            }
        }
    }
}

/// Returns the runtime path as seen from inside the stub's module, one level
/// down.
fn inner_path(krate: &Path) -> TokenStream {
    match krate.segments.first() {
        Some(first) if krate.leading_colon.is_none() && first.ident == "super" => {
            quote!(super::#krate)
        }
        Some(first) if krate.leading_colon.is_none() && first.ident == "self" => {
            let rest = krate.segments.iter().skip(1);
            quote!(super #(::#rest)*)
        }
        _ => krate.to_token_stream(),
    }
}

/// Fails, with one error naming the `client` option, when the stub's name
/// in the service's module is not the stub (a user's item of that name
/// shadows the glob import).
fn name_check(args: &ServiceArgs, client: &Ident, span: Span) -> TokenStream {
    let krate = krate_at(args, span);
    let module = Service::stub_module(client);
    let stub = local("__jrpc_stub");
    let mut pattern = client.clone();
    pattern.set_span(span);
    quote_spanned! {span=>
        #[doc(hidden)]
        impl #krate::__private::StubName for #module::#client<()> {}
        #[allow(unreachable_code, clippy::diverging_sub_expression)]
        const _: fn() = || {
            let #stub = ::core::unreachable!();
            let #pattern { .. } = #stub;
            #krate::__private::StubName::check(&#stub);
        };
    }
}

/// One `pub async fn` mirroring a service method, with the hidden function
/// that encodes its params; and the method of the same name on the stub's
/// batch, which encodes through that function.
/// `stub_ty` is the stub's type as the batch's impl names it.
fn stub_method(
    method: &Method,
    args: &ServiceArgs,
    stub_ty: &TokenStream,
) -> (TokenStream, TokenStream) {
    let krate = &args.krate;
    let ident = &method.sig.ident;
    let cfgs = &method.cfgs;
    let lints = &method.lints;
    let docs = docs(method);

    let Encoding {
        inputs,
        idents,
        encode,
        params,
        function,
    } = encoding(method, args);
    let Send { ok, send, batched } = send(method, args, &params);
    let (err, body) = error_wrap(
        args,
        &send,
        quote!(Self::#encode(self.encoding, #(#idents),*)?),
    );
    let slot = if method.is_notification() {
        quote!(())
    } else {
        quote!(#krate::Slot<#ok>)
    };
    let batch_doc = if method.is_notification() {
        format!(
            "Adds {} to the batch.",
            method.wire_name.in_docs("notification")
        )
    } else {
        format!(
            "Adds a call of {} to the batch; its answer is taken with the slot returned.",
            method.wire_name.in_docs("method")
        )
    };

    let stub = quote! {
        #(#cfgs)*
        #(#docs)*
        #(#lints)*
        pub async fn #ident(&self, #(#inputs),*) -> ::core::result::Result<#ok, #err> {
            #body
        }

        #function
    };
    let batch = quote! {
        #(#cfgs)*
        #[doc = #batch_doc]
        #(#lints)*
        pub fn #ident(&mut self, #(#inputs),*) -> #slot {
            let #params = #stub_ty::#encode(self.encoding, #(#idents),*);
            #batched
        }
    };
    (stub, batch)
}

/// Holds what a stub method shares with the hidden function that encodes its params: the
/// method's inputs and their names, the function's name, the local the params are built in, and
/// the function itself.
pub(super) struct Encoding {
    pub(super) inputs: Vec<TokenStream>,
    pub(super) idents: Vec<TokenStream>,
    pub(super) encode: Ident,
    pub(super) params: Ident,
    pub(super) function: TokenStream,
}

/// Returns the inputs of `method`'s stub method and the hidden function that encodes its params,
/// as a call's or a subscription's stub method sends them.
pub(super) fn encoding(method: &Method, args: &ServiceArgs) -> Encoding {
    let krate = &args.krate;
    let cfgs = &method.cfgs;
    let lints = &method.lints;
    let values: Vec<_> = method.values().collect();
    let inputs = stub_inputs(&values);
    let idents = stub_idents(&values);
    let encode = Ident::new(
        &format!("__jrpc_params_{}", method.sig.ident.unraw()),
        Span::mixed_site(),
    );
    let params = local("__jrpc_params");
    let encoding = local("__jrpc_encoding");
    let build = build_params(method, args, &values, &params, &encoding);
    let function = quote! {
        #(#cfgs)*
        #(#lints)*
        fn #encode(
            #encoding: #krate::ParamEncoding,
            #(#inputs),*
        ) -> #krate::__private::StubParams {
            #build
            ::core::result::Result::Ok(#params)
        }
    };
    Encoding {
        inputs,
        idents,
        encode,
        params,
        function,
    }
}

/// Returns a stub method's parameters, each with its `#[cfg]`s and lints.
fn stub_inputs(values: &[&Param]) -> Vec<TokenStream> {
    values
        .iter()
        .map(|param| {
            let ident = param.ident();
            let ty = &param.ty;
            let lints = &param.lints;
            let cfgs = &param.cfgs;
            quote!(#(#cfgs)* #(#lints)* #ident: #ty)
        })
        .collect()
}

/// Returns a stub method's arguments, each under its parameter's `#[cfg]`s.
fn stub_idents(values: &[&Param]) -> Vec<TokenStream> {
    values
        .iter()
        .filter_map(|param| {
            let ident = param.ident()?;
            let cfgs = &param.cfgs;
            Some(quote!(#(#cfgs)* #ident))
        })
        .collect()
}

/// Returns the statements of a stub's encoding function that set `params`:
/// none, the one value as a whole, or one entry per value. Each value is given
/// with its type, where "`Foo` is not `Serialize`" then lands.
fn build_params(
    method: &Method,
    args: &ServiceArgs,
    values: &[&Param],
    params: &Ident,
    encoding: &Ident,
) -> TokenStream {
    let krate = &args.krate;
    let builder = local("__jrpc_builder");
    if values.is_empty() {
        return quote!(let #params = ::core::option::Option::None;);
    }
    if let (Some(_), [param]) = (method.whole(), values) {
        let ident = param.ident();
        let whole = stub_param(args, &param.ty, "to_whole", quote!(&#ident));
        return quote! {
            let #params = #whole?;
        };
    }
    // The number of parameters of this build: an array of one `()` per
    // parameter, each under its parameter's `#[cfg]`s.
    let count = if values.iter().all(|param| param.cfgs.is_empty()) {
        values.len().to_token_stream()
    } else {
        let units = values.iter().map(|param| {
            let cfgs = &param.cfgs;
            quote!(#(#cfgs)* ())
        });
        quote!(<[()]>::len(&[#(#units),*]))
    };
    let pushes = values.iter().filter_map(|param| {
        let name = &param.wire_name;
        let ident = param.ident()?;
        let ty = &param.ty;
        let cfgs = &param.cfgs;
        // A type named `Context` may be the runtime's, taken by value by
        // mistake: the method table reports that, and the stub does not
        // add a second error about it.
        if is_context(ty) {
            let (start, end) = range(ty);
            let krate = krate_at(args, at(start));
            let mut arg = call_over(
                quote_spanned!(at(start)=> #krate::__private::ContextArg::new),
                quote!(&#ident),
                end,
            );
            arg.extend(quote_spanned!(at(end)=> .push));
            let push = call_over(arg, quote!(&mut #builder, #name), end);
            return Some(quote!(#(#cfgs)* #push?;));
        }
        let push = stub_param(args, ty, "push_to", quote!(&#ident, &mut #builder, #name));
        Some(quote!(#(#cfgs)* #push?;))
    });
    let counted = local("__jrpc_count");
    quote! {
        let #counted = #count;
        let mut #builder = #krate::__private::ParamsBuilder::new(#encoding, #counted);
        #(#pushes)*
        let #params = #builder.finish(#counted);
    }
}

/// `<T as StubParam>::method(args)`, spanned over the parameter's type as
/// written: an unmet `StubParam` is reported there, with no note into the
/// runtime (it is the trait's own method).
fn stub_param(
    args: &ServiceArgs,
    ty: &syn::Type,
    method: &str,
    call_args: TokenStream,
) -> TokenStream {
    let (first, last) = range(ty);
    let krate = krate_at(args, first);
    let method = Ident::new(method, first);
    let mut head = quote_spanned!(first=> <);
    head.extend(quote!(#ty));
    head.extend(quote_spanned!(first=> as #krate::__private::StubParam>::#method));
    call_as_written(head, call_args, last)
}

/// How a stub method sends its encoded `params`.
struct Send {
    /// The success type, as the stub returns it.
    ok: TokenStream,
    /// The stub method's sending and decoding, failing with `ClientError`.
    send: TokenStream,
    /// The batch method's body after encoding.
    batched: TokenStream,
}

fn send(method: &Method, args: &ServiceArgs, params: &Ident) -> Send {
    let krate = &args.krate;
    let wire = wire_name(&method.wire_name, args, "");
    if method.is_notification() {
        return Send {
            ok: quote!(()),
            send: quote!(#krate::Caller::notify_raw(&self.caller, #wire, #params).await),
            batched: quote!(#krate::__private::batch_notify(&mut self.batch, #wire, #params)),
        };
    }
    let ident = &method.sig.ident;
    let raw = local("__jrpc_raw");
    let ok = match method.output.ok_type() {
        Some(ty) => ty.to_token_stream(),
        None => quote!(()),
    };
    // The probe of the return type confirms the success type as
    // written, and is spanned at it: "`Foo` is not `Deserialize`" lands
    // there.
    let returned = match &method.output_ty {
        Some(ty) => ty.to_token_stream(),
        None => quote!(()),
    };
    let (start, end) = match method.output.ok_type() {
        Some(ty) => range(ty),
        None => (ident.span(), ident.span()),
    };
    let start = at(start);
    let krate_start = krate_at(args, start);
    let spanned = call_over(
        quote_spanned!(start=> #krate_start::__private::at),
        quote!(#krate::__private::Probe::<#returned>::NEW.kind()),
        end,
    );
    // The success value as the stub returns it: the trait's own method,
    // spanned at the success type as written, so that a type that says
    // otherwise than the probe is reported there with no note.
    let value = local("__jrpc_value");
    let mut ok_head = quote_spanned!(start=> <);
    ok_head.extend(ok.clone());
    ok_head.extend(quote_spanned!(start=> as #krate_start::__private::OkOf<_>>::from_kind));
    let from_kind = call_over(
        ok_head,
        quote!(#krate::__private::Probe::<#returned>::NEW.kind(), #value),
        end,
    );
    let decodes = decodes_check(args, &returned, start, end);
    Send {
        send: quote! {
            #decodes
            let #raw = #krate::Caller::call_raw(&self.caller, #wire, #params).await?;
            #krate::__private::decode_answer(#spanned, &#raw).map(|#value| #from_kind)
        },
        batched: quote!(#krate::__private::batch_call::<#ok>(&mut self.batch, #wire, #params)),
        ok,
    }
}

/// Returns the check a stub makes first at its success type as written, that it
/// decodes: `StubResult`'s own method, spanned as the argument of
/// `decode_answer` whose bound is the same, so that rustc reports it with no
/// note into the runtime and leaves the helper's bound out.
fn decodes_check(
    args: &ServiceArgs,
    returned: &TokenStream,
    start: Span,
    end: Span,
) -> TokenStream {
    let krate = &args.krate;
    let krate_start = krate_at(args, start);
    let ok_of = call_over(
        quote_spanned!(start=> #krate_start::__private::ok_of),
        quote!(#krate::__private::Probe::<#returned>::NEW.kind()),
        end,
    );
    let mut check = quote_spanned!(start=> #krate_start::__private::StubResult::);
    check.extend([TokenTree::Ident(Ident::new("check", at(end)))]);
    let check = call_over(check, ok_of, end);
    quote!(#check;)
}

/// Returns the stub method's error type and body: with `client_error = E`, the
/// body runs as written (failing with `ClientError`) and its failure is
/// converted once, at the end.
fn error_wrap(
    args: &ServiceArgs,
    send: &TokenStream,
    encode: TokenStream,
) -> (TokenStream, TokenStream) {
    let krate = &args.krate;
    let params = local("__jrpc_params");
    let Some(ty) = &args.client_error else {
        return (
            quote!(#krate::ClientError),
            quote! {
                let #params = #encode;
                #send
            },
        );
    };
    let span = at(ty.span());
    let krate_span = krate_at(args, span);
    let result = local("__jrpc_result");
    // Spanned at the type, so that a missing `From<ClientError>` is
    // reported there, once.
    // The type's tokens too: each method's error is then the same, which
    // rustc reports once.
    let ty_at = crate::attr::respan(ty.to_token_stream(), span);
    let from_client =
        quote_spanned!(span=> <#ty_at as #krate_span::__private::StubError>::from_client);
    let convert = quote_spanned! {span=>
        ::core::result::Result::map_err(
            #result,
            #from_client,
        )
    };
    (
        ty.to_token_stream(),
        quote! {
            let #result = async move {
                let #params = #encode;
                #send
            }
            .await;
            #convert
        },
    )
}

/// Returns the user's doc comment (or a line naming the method), and an
/// `# Errors` section.
fn docs(method: &Method) -> Vec<TokenStream> {
    let mut docs: Vec<TokenStream> = method.docs.iter().map(ToTokens::to_token_stream).collect();
    if docs.is_empty() {
        let line = if method.is_notification() {
            format!("Sends {}.", method.wire_name.in_docs("notification"))
        } else {
            format!("Calls {}.", method.wire_name.in_docs("method"))
        };
        docs.push(quote!(#[doc = #line]));
    }
    let errors = if method.is_notification() {
        "Fails with a `ClientError` when the notification cannot be sent."
    } else {
        "Fails with a `ClientError` when the call fails: the server answered an error \
         (`Failed`), the transport failed or closed, or the answer did not decode."
    };
    docs.push(quote! {
        #[doc = ""]
        #[doc = "# Errors"]
        #[doc = ""]
        #[doc = #errors]
    });
    docs
}

/// Generates the stand-in client of a service with errors: the struct and, when
/// the trait is not generic, a method per service method (bodies
/// `unimplemented!()`), so code using the client does not add errors. A
/// type the stand-in cannot repeat (`impl Trait`, a method's lifetime or
/// type parameter, `Self`) becomes `impl Sized` in a parameter and `()` in
/// the result.
pub(super) fn stand_in(
    service: &Service,
    args: &ServiceArgs,
    client: &Ident,
    trait_ident: &Ident,
    vis: &Visibility,
    generics: &Generics,
) -> TokenStream {
    let krate = &args.krate;
    let caller = caller_param(service);
    let module = Service::stub_module(client);
    let mut out = shell(service, args, client, trait_ident, vis, &caller);
    if !generics.params.is_empty() {
        return out;
    }
    let err = match &args.client_error {
        Some(ty) => ty.to_token_stream(),
        None => quote!(#krate::ClientError),
    };
    let mut seen: Vec<(Ident, String)> = Vec::new();
    let mut methods = Vec::new();
    let mut batched = Vec::new();
    let mut subscriptions = Vec::new();
    for method in &service.methods {
        let ident = &method.sig.ident;
        // `r#new` and `new` name one method.
        let name = ident.unraw();
        let cfg = crate::attr::cfg_predicate(&method.cfgs).to_string();
        let clashes = CLIENT_METHODS.iter().any(|reserved| name == reserved);
        if clashes || seen.iter().any(|(n, c)| *n == name && *c == cfg) {
            continue;
        }
        seen.push((name, cfg));
        let typed = method.sig.generics.type_params().next().is_none()
            && method.sig.generics.const_params().next().is_none();
        let plain = |ty: &syn::Type| typed && Scan::of(ty).is_plain();
        let inputs: Vec<_> = method
            .values()
            .map(|param| {
                let ty = &param.ty;
                let cfgs = &param.cfgs;
                if plain(ty) {
                    quote!(#(#cfgs)* _: #ty)
                } else {
                    quote!(#(#cfgs)* _: impl ::core::marker::Sized)
                }
            })
            .collect();
        let ok = match (&method.output, method.is_notification()) {
            (Output::Value(ty) | Output::Result { ok: ty, .. }, false) if plain(ty) => {
                ty.to_token_stream()
            }
            _ => quote!(()),
        };
        let cfgs = &method.cfgs;
        let lints = &method.lints;
        if let Some(sub) = &method.subscription {
            let item = match sub.item.as_deref() {
                Some(ty) if plain(ty) => ty.to_token_stream(),
                _ => quote!(()),
            };
            subscriptions.push(quote! {
                #(#cfgs)*
                #[doc(hidden)]
                #(#lints)*
                pub async fn #ident(
                    &self,
                    #(#inputs),*
                ) -> ::core::result::Result<#krate::Subscription<#item>, #err> {
                    ::core::unimplemented!()
                }
            });
            continue;
        }
        methods.push(quote! {
            #(#cfgs)*
            #[doc(hidden)]
            #(#lints)*
            pub async fn #ident(&self, #(#inputs),*) -> ::core::result::Result<#ok, #err> {
                ::core::unimplemented!()
            }
        });
        let slot = if method.is_notification() {
            quote!(())
        } else {
            quote!(#krate::Slot<#ok>)
        };
        batched.push(quote! {
            #(#cfgs)*
            #[doc(hidden)]
            #(#lints)*
            pub fn #ident(&mut self, #(#inputs),*) -> #slot {
                ::core::unimplemented!()
            }
        });
    }
    let batch = batch_ident(client);
    let batch_module = Service::stub_module(&batch);
    out.extend(quote! {
        #[allow(dead_code, clippy::too_many_arguments)]
        impl<#caller> #module::#client<#caller> {
            #(#methods)*
        }

        #[allow(dead_code, clippy::too_many_arguments)]
        impl<#caller> #batch_module::#batch<'_, #caller> {
            #(#batched)*
        }
    });
    if !subscriptions.is_empty() {
        out.extend(quote! {
            #[allow(dead_code, clippy::too_many_arguments)]
            impl<#caller> #module::#client<#caller> {
                #(#subscriptions)*
            }
        });
    }
    out
}

/// Returns the stub's type parameter: `C`, unless a method's signature names a
/// type `C` of the user's.
fn caller_param(service: &Service) -> Ident {
    let uses_c = service.methods.iter().any(|method| {
        method
            .params
            .iter()
            .any(|param| mentions(param.ty.to_token_stream(), "C"))
            || method
                .output_ty
                .as_ref()
                .is_some_and(|ty| mentions(ty.to_token_stream(), "C"))
    });
    let name = if uses_c { "JrpcCaller" } else { "C" };
    Ident::new(name, proc_macro2::Span::call_site())
}

fn mentions(tokens: TokenStream, name: &str) -> bool {
    tokens.into_iter().any(|tree| match tree {
        TokenTree::Ident(ident) => ident == name,
        TokenTree::Group(group) => mentions(group.stream(), name),
        _ => false,
    })
}
