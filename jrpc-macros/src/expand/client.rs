//! The client stub of a service trait: `{Trait}Client<C>`.

use proc_macro2::{Ident, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{FnArg, Generics, Visibility};

use super::{at, krate_at, local};
use crate::ast::{Method, Output, Service};
use crate::attr::ServiceArgs;
use crate::valid::CLIENT_METHODS;

/// The stub struct, its constructors and one method per service method.
pub(super) fn client(
    service: &Service,
    args: &ServiceArgs,
    trait_ident: &Ident,
    vis: &Visibility,
) -> TokenStream {
    let caller = caller_param(service);
    let methods = service
        .methods
        .iter()
        .map(|method| stub_method(method, args));
    let mut out = shell(args, trait_ident, vis, &caller);
    let name = format_ident!("{}Client", trait_ident, span = trait_ident.span());
    let krate = &args.krate;
    out.extend(quote! {
        #[allow(dead_code, clippy::too_many_arguments)]
        impl<#caller: #krate::Caller> #name<#caller> {
            #(#methods)*
        }
    });
    out
}

/// The stub's struct and constructors, which do not depend on the methods.
fn shell(args: &ServiceArgs, trait_ident: &Ident, vis: &Visibility, caller: &Ident) -> TokenStream {
    let krate = &args.krate;
    let name = format_ident!("{}Client", trait_ident, span = trait_ident.span());
    let trait_name = trait_ident.unraw();
    let doc = format!(
        "A typed client of [`{trait_name}`]: each method sends one JSON-RPC request \
         through a `Caller` and decodes the answer."
    );
    quote! {
        #[doc = #doc]
        #[doc = ""]
        #[doc = "Params are sent by position unless set otherwise with `with_encoding`."]
        #[derive(::core::clone::Clone, ::core::fmt::Debug)]
        #[allow(dead_code)]
        #vis struct #name<#caller> {
            caller: #caller,
            encoding: #krate::ParamEncoding,
        }

        #[allow(dead_code)]
        impl<#caller> #name<#caller> {
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

            /// The caller this client sends requests through.
            #[must_use]
            pub fn caller(&self) -> &#caller {
                &self.caller
            }

            /// Gives the caller back.
            #[must_use]
            pub fn into_caller(self) -> #caller {
                self.caller
            }
        }
    }
}

/// One `pub async fn` mirroring a service method.
fn stub_method(method: &Method, args: &ServiceArgs) -> TokenStream {
    let krate = &args.krate;
    let ident = &method.sig.ident;
    let wire = &method.wire_name;
    let cfgs = &method.cfgs;
    let docs = docs(method);

    let values: Vec<_> = method.values().collect();
    let inputs = values.iter().map(|param| {
        let ident = param.ident();
        let ty = &param.ty;
        quote!(#ident: #ty)
    });

    // The params: none, the one value as a whole, or one entry per value.
    let params = local("__jrpc_params");
    let builder = local("__jrpc_builder");
    let build = if values.is_empty() {
        quote!(let #params = ::core::option::Option::None;)
    } else if method.attrs.whole.is_some() {
        let ident = values.iter().filter_map(|param| param.ident());
        quote!(let #params = #krate::__private::ParamsBuilder::whole(&#(#ident)*)?;)
    } else {
        let count = values.len();
        let pushes = values.iter().filter_map(|param| {
            let name = &param.wire_name;
            // The value, spanned at its type: "`Foo` is not `Serialize`"
            // lands there.
            let mut ident = param.ident()?.clone();
            let span = at(param.ty.span());
            ident.set_span(span);
            Some(quote_spanned! {span=>
                #builder.push(#name, &#ident)?;
            })
        });
        quote! {
            let mut #builder = #krate::__private::ParamsBuilder::new(self.encoding, #count);
            #(#pushes)*
            let #params = #builder.finish(#count);
        }
    };

    let (ok, send) = if method.is_notification() {
        (
            quote!(()),
            quote!(#krate::Caller::notify_raw(&self.caller, #wire, #params).await),
        )
    } else {
        let raw = local("__jrpc_raw");
        let ok = match method.output.ok_type() {
            Some(ty) => ty.to_token_stream(),
            None => quote!(()),
        };
        let decode = match method.output.ok_type() {
            Some(ty) => {
                let span = at(ty.span());
                let krate = krate_at(args, span);
                quote_spanned!(span=> #krate::__private::decode_result::<#ty>(&#raw))
            }
            None => quote!(#krate::__private::decode_result::<()>(&#raw)),
        };
        (
            ok,
            quote! {
                let #raw = #krate::Caller::call_raw(&self.caller, #wire, #params).await?;
                #decode
            },
        )
    };

    quote! {
        #(#cfgs)*
        #(#docs)*
        pub async fn #ident(&self, #(#inputs),*) -> ::core::result::Result<#ok, #krate::ClientError> {
            #build
            #send
        }
    }
}

/// The user's doc comment (or a line naming the method), and an `# Errors`
/// section.
fn docs(method: &Method) -> Vec<TokenStream> {
    let mut docs: Vec<TokenStream> = method.docs.iter().map(ToTokens::to_token_stream).collect();
    let wire = &method.wire_name;
    if docs.is_empty() {
        let line = if method.is_notification() {
            format!("Sends the `{wire}` notification.")
        } else {
            format!("Calls the `{wire}` method.")
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

/// The stand-in client of a service with errors: the struct and, when the
/// trait is not generic, a method per service method (bodies
/// `unimplemented!()`), so code using the client does not add errors.
pub(super) fn stand_in(
    service: &Service,
    args: &ServiceArgs,
    trait_ident: &Ident,
    vis: &Visibility,
    generics: &Generics,
) -> TokenStream {
    let krate = &args.krate;
    let caller = caller_param(service);
    let name = format_ident!("{}Client", trait_ident, span = trait_ident.span());
    let mut out = shell(args, trait_ident, vis, &caller);
    if !generics.params.is_empty() {
        return out;
    }
    let mut seen: Vec<Ident> = Vec::new();
    let mut methods = Vec::new();
    for method in &service.methods {
        let ident = &method.sig.ident;
        // `r#new` and `new` name one method.
        let name = ident.unraw();
        let clashes = CLIENT_METHODS.iter().any(|reserved| name == reserved);
        if clashes || seen.contains(&name) || !method.sig.generics.params.is_empty() {
            continue;
        }
        seen.push(name);
        let inputs = method.sig.inputs.iter().filter_map(|input| match input {
            FnArg::Typed(arg) if !crate::ast::is_context_ref(&arg.ty) => {
                let ty = &arg.ty;
                Some(quote!(_: #ty))
            }
            _ => None,
        });
        let ok = match (&method.output, method.is_notification()) {
            (Output::Value(ty) | Output::Result { ok: ty, .. }, false) => ty.to_token_stream(),
            _ => quote!(()),
        };
        methods.push(quote! {
            #[doc(hidden)]
            pub async fn #ident(&self, #(#inputs),*) -> ::core::result::Result<#ok, #krate::ClientError> {
                ::core::unimplemented!()
            }
        });
    }
    out.extend(quote! {
        #[allow(dead_code)]
        impl<#caller> #name<#caller> {
            #(#methods)*
        }
    });
    out
}

/// The stub's type parameter: `C`, unless a method's signature names a
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
