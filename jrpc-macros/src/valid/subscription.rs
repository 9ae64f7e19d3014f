//! The rules of a `#[subscription]` method: what makes it one, and its names.

use crate::ast::Method;
use crate::attr::MethodName;
use crate::ctxt::Ctxt;

/// Checks what makes a method a subscription: `#[subscription]` alone among the helpers, a future,
/// and an item type the signature names.
pub(super) fn check_subscription(method: &Method, cx: &mut Ctxt) {
    let Some(sub) = &method.subscription else {
        return;
    };
    // A notification answers nothing; a subscription answers an id.
    if let Some(notification) = &method.attrs.notification {
        cx.error_spanned(
            notification,
            "a method cannot be both `#[notification]` and `#[subscription]`: a subscription is \
             answered its id, then sends notifications; remove `#[notification]`",
        );
    }
    // One attribute says everything about a subscription.
    if let Some(rpc) = &method.attrs.rpc {
        cx.error_spanned(
            rpc,
            "`#[rpc]` does not go on a `#[subscription]` method: give `name` and `params` to \
             `#[subscription(...)]`",
        );
    }
    // The subscription opens once the method's future gives its items, after the runtime has
    // checked that the call's connection can carry notifications.
    if !method.is_async {
        cx.error_spanned(
            method.sig.fn_token,
            "a `#[subscription]` method must be `async`: the subscription opens when its future \
             gives the items; write `async fn`",
        );
    }
    if sub.item.is_none() {
        let message = "a `#[subscription]` method returns its items: `Items<T>` or \
                       `Result<Items<T>, E>`, where `T` is the item type (`jrpc_runtime::Items`)";
        match &method.output_ty {
            Some(ty) => cx.error_spanned(ty, message),
            None => cx.error_spanned(&method.sig.ident, message),
        }
    }
}

/// Checks the notification's and the unsubscribe method's names, where the macro knows them: not
/// empty, not `rpc.`, and the subscribe and unsubscribe methods not one.
pub(super) fn check_subscription_names(method: &Method, namespace_reserved: bool, cx: &mut Ctxt) {
    let (Some(attr), Some(sub)) = (&method.attrs.subscription, &method.subscription) else {
        return;
    };
    for (key, given, name) in [
        ("notification", &attr.notification, &sub.notification),
        ("unsubscribe", &attr.unsubscribe, &sub.unsubscribe),
    ] {
        let (Some(given), Some(name)) = (given, name) else {
            continue;
        };
        if let MethodName::Literal(lit) = given
            && lit.value().is_empty()
        {
            cx.error_spanned(
                lit,
                format_args!("a jrpc method name cannot be empty: write one in `{key} = \"...\"`"),
            );
        } else if !namespace_reserved && name.known().is_some_and(|n| n.starts_with("rpc.")) {
            cx.error_at(
                given.span(),
                "method names starting with `rpc.` are reserved by JSON-RPC 2.0 for the \
                 protocol: choose another name",
            );
        }
    }
    if let (Some(unsubscribe), Some(name)) = (&attr.unsubscribe, &sub.unsubscribe)
        && name
            .known()
            .is_some_and(|name| method.wire_name.known() == Some(name))
    {
        cx.error_at(
            unsubscribe.span(),
            "a subscription's subscribe and unsubscribe methods need two names: give \
             `unsubscribe` another one",
        );
    }
}
