//! The stub's method of each subscription: in an `impl` of its own, bounded `C: Subscriber`, it
//! encodes the params as a call's are and returns the typed `Subscription` of the items.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote, quote_spanned};

use super::super::{call_as_written, krate_at, wire_name};
use super::{Encoding, encoding, error_wrap};
use crate::ast::Method;
use crate::attr::ServiceArgs;
use crate::ty::range;

/// Generates the stub's method of a subscription: it encodes the params as a call's are,
/// subscribes, and returns the typed `Subscription` of the items, with the hidden function that
/// encodes its params.
pub(super) fn subscription_method(method: &Method, args: &ServiceArgs) -> TokenStream {
    let krate = &args.krate;
    let ident = &method.sig.ident;
    let cfgs = &method.cfgs;
    let lints = &method.lints;
    let Encoding {
        inputs,
        idents,
        encode,
        params,
        function,
    } = encoding(method, args);
    let Some(sub) = &method.subscription else {
        return TokenStream::new();
    };
    let item = match &sub.item {
        Some(ty) => ty.to_token_stream(),
        None => quote!(()),
    };
    let wire = wire_name(&method.wire_name, args, "");
    let notification = sub
        .notification
        .as_ref()
        .map(|name| wire_name(name, args, ""));
    let unsubscribe = sub
        .unsubscribe
        .as_ref()
        .map(|name| wire_name(name, args, ""));
    // `StubItem`'s own method, called at `T` as written: "`Foo` is not `Deserialize`" lands
    // there, with no note into the runtime.
    let names = quote!(#krate::__private::Names(#notification, #unsubscribe));
    let call_args = quote!(&self.caller, #wire, #params, #names);
    let subscribe = match sub.item.as_deref() {
        Some(ty) => {
            let (first, last) = range(ty);
            let krate_first = krate_at(args, first);
            let mut head = quote_spanned!(first=> <);
            head.extend(quote!(#ty));
            head.extend(quote_spanned!(first=> as #krate_first::__private::StubItem>::subscribe));
            call_as_written(head, call_args, last)
        }
        None => quote!(#krate::__private::StubItem::subscribe(#call_args)),
    };
    let send = quote!(#subscribe.await);
    let (err, body) = error_wrap(
        args,
        &send,
        quote!(Self::#encode(self.encoding, #(#idents),*)?),
    );
    let docs = subscription_docs(method);
    quote! {
        #(#cfgs)*
        #(#docs)*
        #(#lints)*
        pub async fn #ident(
            &self,
            #(#inputs),*
        ) -> ::core::result::Result<#krate::Subscription<#item>, #err> {
            #body
        }

        #function
    }
}

/// Returns a subscription's stub method's docs: the user's doc comment (or a line naming the
/// methods), what dropping the subscription does, and an `# Errors` section.
fn subscription_docs(method: &Method) -> Vec<TokenStream> {
    let mut docs: Vec<TokenStream> = method.docs.iter().map(ToTokens::to_token_stream).collect();
    let Some(sub) = &method.subscription else {
        return docs;
    };
    let notification = sub
        .notification
        .as_ref()
        .map_or_else(String::new, |name| name.in_docs("notification"));
    let unsubscribe = sub
        .unsubscribe
        .as_ref()
        .map_or_else(String::new, |name| name.in_docs("method"));
    if docs.is_empty() {
        let line = format!(
            "Subscribes with {}; the items come as {notification}.",
            method.wire_name.in_docs("method")
        );
        docs.push(quote!(#[doc = #line]));
    }
    let dropped = format!(
        "The `Subscription` is a stream of the items, from the answer on; dropping it \
         unsubscribes with {unsubscribe}."
    );
    let errors = "Fails with a `ClientError` when the subscribe call fails: the server refused \
                  it (`Failed`), the transport failed or closed, or the answer is no id.";
    docs.push(quote! {
        #[doc = ""]
        #[doc = #dropped]
        #[doc = ""]
        #[doc = "# Errors"]
        #[doc = ""]
        #[doc = #errors]
    });
    docs
}
