//! Attribute parsing: the `#[rpc_service(...)]` options and the helper
//! attributes `#[rpc(...)]`, `#[notification]` and `#[subscription(...)]` on
//! methods and parameters.
//!
//! Parsing never stops at the first problem: a malformed or unknown key is
//! reported into the [`Ctxt`] and the rest of the attribute is still read.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned as _;
use syn::{Attribute, Expr, ExprLit, Ident, Lit, LitBool, LitStr, Meta, Path, Token};

use crate::case::{RULES, RenameRule};
use crate::ctxt::Ctxt;

/// Lists the keys `#[rpc_service(...)]` accepts.
const SERVICE_KEYS: &[&str] = &[
    "namespace",
    "separator",
    "rename_all",
    "client",
    "client_error",
    "schema",
    "crate",
];
/// Lists the keys `#[rpc(...)]` accepts on a method.
const METHOD_KEYS: &[&str] = &["name", "params"];
/// Lists the keys `#[rpc(...)]` accepts on a parameter.
const PARAM_KEYS: &[&str] = &["name"];
/// Lists the keys `#[subscription(...)]` accepts.
const SUBSCRIPTION_KEYS: &[&str] = &["name", "notification", "unsubscribe", "params"];

/// Holds the options of `#[rpc_service(...)]`.
pub(crate) struct ServiceArgs {
    /// The path of the runtime crate, spanned at the call site.
    pub(crate) krate: Path,
    /// `namespace = "calc"`: prefixed to every wire name.
    pub(crate) namespace: Option<LitStr>,
    /// `separator = "/"`: between the namespace and the method name.
    pub(crate) separator: String,
    /// `rename_all = "camelCase"`: applied to method names that are not
    /// given by `#[rpc(name = "...")]`.
    pub(crate) rename_all: Option<RenameRule>,
    /// `client = "Name"` or `client = false`.
    pub(crate) client: Client,
    /// `schema`: the description carries the JSON Schema of every type; kept for its span.
    pub(crate) schema: Option<Span>,
    /// `client_error = Type`: the error type of the stub's methods, made `From<ClientError>`.
    pub(crate) client_error: Option<syn::Type>,
}

/// Says what `client = ...` asks of the stub.
pub(crate) enum Client {
    /// No option: `{Trait}Client`.
    Default,
    /// `client = "Name"`, the literal kept for its span.
    Named(Ident, LitStr),
    /// `client = false`, kept for its span.
    Off(LitBool),
}

impl ServiceArgs {
    pub(crate) fn parse(args: TokenStream, cx: &mut Ctxt) -> Self {
        let mut out = Self {
            krate: syn::parse_quote!(::jrpc_runtime),
            namespace: None,
            separator: ".".to_owned(),
            rename_all: None,
            client: Client::Default,
            schema: None,
            client_error: None,
        };
        let mut seen = Seen::default();
        for meta in parse_metas(args, cx) {
            let Some(key) = key_of(&meta, SERVICE_KEYS, "#[rpc_service]", cx) else {
                continue;
            };
            if !seen.first(&meta, &key, cx) {
                continue;
            }
            match key.as_str() {
                "namespace" => out.namespace = string_value(&meta, &key, cx),
                "separator" => {
                    if let Some(lit) = string_value(&meta, &key, cx) {
                        out.separator = lit.value();
                    }
                }
                "rename_all" => {
                    if let Some(lit) = string_value(&meta, &key, cx) {
                        out.rename_all = rename_rule(&lit, cx);
                    }
                }
                "client" => out.client = client_value(&meta, cx),
                "schema" => out.schema = flag(&meta, &key, cx),
                "client_error" => out.client_error = type_value(&meta, &key, cx),
                "crate" => {
                    if let Some(path) = crate_path(&meta, cx) {
                        out.krate = path;
                    }
                }
                _ => {}
            }
        }
        out
    }
}

/// Holds what the helper attributes on one method say.
#[derive(Default)]
pub(crate) struct MethodAttrs {
    /// `#[rpc(name = ...)]`: the wire name, used as written.
    pub(crate) name: Option<MethodName>,
    /// `#[rpc(params = whole)]`, kept for its span.
    pub(crate) whole: Option<Meta>,
    /// `#[notification]`, kept for its span.
    pub(crate) notification: Option<Attribute>,
    /// `#[subscription(...)]`.
    pub(crate) subscription: Option<SubscriptionAttr>,
    /// The first `#[rpc(...)]`, kept for its span: it has no place on a subscription.
    pub(crate) rpc: Option<Attribute>,
}

/// Holds what `#[subscription(...)]` says.
pub(crate) struct SubscriptionAttr {
    /// The attribute's path, `subscription`, kept for its span.
    pub(crate) path: Path,
    /// `name = ...`: the subscribe method's wire name, used as written.
    pub(crate) name: Option<MethodName>,
    /// `notification = ...`: the method of the notifications that carry the items.
    pub(crate) notification: Option<MethodName>,
    /// `unsubscribe = ...`: the method that ends a subscription.
    pub(crate) unsubscribe: Option<MethodName>,
    /// `params = whole`, kept for its span.
    pub(crate) whole: Option<Meta>,
}

impl MethodAttrs {
    /// Takes the helper attributes out of `attrs` and parses them.
    pub(crate) fn take(attrs: &mut Vec<Attribute>, cx: &mut Ctxt) -> Self {
        let mut out = Self::default();
        let mut seen = Seen::default();
        for attr in take_helpers(attrs, cx) {
            if attr.path().is_ident("subscription") {
                let parsed = SubscriptionAttr::parse(&attr, cx);
                if out.subscription.is_some() {
                    cx.error_spanned(
                        &attr,
                        "duplicate `#[subscription]` attribute: remove this one",
                    );
                } else {
                    out.subscription = Some(parsed);
                }
                continue;
            }
            if attr.path().is_ident("notification") {
                if let Meta::Path(_) = attr.meta {
                    if out.notification.is_some() {
                        cx.error_spanned(
                            &attr,
                            "duplicate `#[notification]` attribute: remove this one",
                        );
                    } else {
                        out.notification = Some(attr);
                    }
                } else {
                    cx.error_spanned(
                        &attr.meta,
                        "`#[notification]` takes no arguments: write `#[notification]`",
                    );
                }
                continue;
            }
            if out.rpc.is_none() {
                out.rpc = Some(attr.clone());
            }
            for meta in rpc_metas(&attr, METHOD_KEYS, cx) {
                let Some(key) = key_of(&meta, METHOD_KEYS, "#[rpc]", cx) else {
                    continue;
                };
                if !seen.first(&meta, &key, cx) {
                    continue;
                }
                match key.as_str() {
                    "name" => out.name = method_name(&meta, &key, cx),
                    "params" if whole_value(&meta, cx) => out.whole = Some(meta),
                    _ => {}
                }
            }
        }
        out
    }
}

impl SubscriptionAttr {
    /// Reads `#[subscription(...)]`. A missing `notification` or `unsubscribe` is reported here,
    /// once for both, at the attribute's name; an attribute that is no list is one error, and
    /// still makes the method a subscription (with no names), so that the other rules judge it
    /// as one.
    fn parse(attr: &Attribute, cx: &mut Ctxt) -> Self {
        let mut out = Self {
            path: attr.path().clone(),
            name: None,
            notification: None,
            unsubscribe: None,
            whole: None,
        };
        let Meta::List(list) = &attr.meta else {
            cx.error_spanned(
                &attr.meta,
                "expected `#[subscription(notification = \"...\", unsubscribe = \"...\")]`",
            );
            return out;
        };
        let mut seen = Seen::default();
        let mut malformed = Vec::new();
        for meta in parse_metas(list.tokens.clone(), cx) {
            let Some(key) = key_of(&meta, SUBSCRIPTION_KEYS, "#[subscription]", cx) else {
                continue;
            };
            if !seen.first(&meta, &key, cx) {
                continue;
            }
            // A key given but malformed is reported at its value, and not again as missing.
            let slot = match key.as_str() {
                "name" => &mut out.name,
                "notification" => &mut out.notification,
                "unsubscribe" => &mut out.unsubscribe,
                _ => {
                    if whole_value(&meta, cx) {
                        out.whole = Some(meta);
                    }
                    continue;
                }
            };
            *slot = method_name(&meta, &key, cx);
            if slot.is_none() {
                malformed.push(key);
            }
        }
        let what = |key: &str| match key {
            "notification" => "the method of the notifications that carry its items",
            _ => "the method that ends a subscription",
        };
        let missing: Vec<&str> = ["notification", "unsubscribe"]
            .into_iter()
            .filter(|key| {
                let given = match *key {
                    "notification" => out.notification.is_some(),
                    _ => out.unsubscribe.is_some(),
                };
                !given && !malformed.iter().any(|m| m == key)
            })
            .collect();
        let message = match missing.as_slice() {
            [] => None,
            [one] => Some(format!(
                "`#[subscription]` needs `{one} = \"...\"`, {}",
                what(one)
            )),
            [a, b, ..] => Some(format!(
                "`#[subscription]` needs `{a} = \"...\"` ({}) and `{b} = \"...\"` ({})",
                what(a),
                what(b)
            )),
        };
        if let Some(message) = message {
            cx.error_spanned(&out.path, message);
        }
        out
    }
}

impl MethodAttrs {
    /// Returns the wire name given in an attribute: `#[subscription(name = ...)]` on a subscription
    /// (an `#[rpc]` there is an error and is not read), else `#[rpc(name = ...)]`.
    pub(crate) fn name_attr(&self) -> Option<&MethodName> {
        match &self.subscription {
            Some(sub) => sub.name.as_ref(),
            None => self.name.as_ref(),
        }
    }
}

/// Holds the value of a method's `#[rpc(name = ...)]`.
pub(crate) enum MethodName {
    /// `name = "get_data"`: known to the macro, which checks it.
    Literal(LitStr),
    /// `name = lsp::HoverRequest::METHOD`: a constant expression of type `&'static str`, which
    /// the expansion evaluates in a `const` (and checks there, at compile time, as far as a
    /// constant can be checked); only a clash with another method's name is left to the table.
    Expr(Box<Expr>),
}

impl MethodName {
    /// Returns the span to blame for the name: the literal, or the expression's first token.
    pub(crate) fn span(&self) -> Span {
        match self {
            Self::Literal(lit) => lit.span(),
            Self::Expr(expr) => expr.span(),
        }
    }
}

/// Holds what the helper attributes on one parameter say.
#[derive(Default)]
pub(crate) struct ParamAttrs {
    /// `#[rpc(name = "...")]`: the parameter's wire name.
    pub(crate) name: Option<LitStr>,
}

impl ParamAttrs {
    /// Takes the helper attributes out of `attrs` and parses them.
    pub(crate) fn take(attrs: &mut Vec<Attribute>, cx: &mut Ctxt) -> Self {
        let mut out = Self::default();
        let mut seen = Seen::default();
        for attr in take_helpers(attrs, cx) {
            if !attr.path().is_ident("rpc") {
                let name = path_to_string(attr.path());
                cx.error_spanned(
                    &attr,
                    format_args!("`#[{name}]` goes on a method, not on a parameter"),
                );
                continue;
            }
            for meta in rpc_metas(&attr, PARAM_KEYS, cx) {
                let Some(key) = key_of(&meta, PARAM_KEYS, "#[rpc]", cx) else {
                    continue;
                };
                if seen.first(&meta, &key, cx) && key == "name" {
                    out.name = string_value(&meta, &key, cx);
                }
            }
        }
        out
    }
}

/// Removes `#[rpc(...)]`, `#[notification]` and `#[subscription(...)]` from `attrs`, returning
/// them.
///
/// A helper inside `#[cfg_attr(predicate, ...)]` is an error, reported here and taken out (the
/// rest of the `cfg_attr` is kept): the macro runs before `cfg` is evaluated, so it cannot know
/// whether the helper applies.
pub(crate) fn take_helpers(attrs: &mut Vec<Attribute>, cx: &mut Ctxt) -> Vec<Attribute> {
    let (helpers, rest): (Vec<_>, Vec<_>) = std::mem::take(attrs).into_iter().partition(is_helper);
    *attrs = rest
        .into_iter()
        .filter_map(|attr| strip_cfg_attr(attr, cx))
        .collect();
    helpers
}

/// Removes helper attributes from `attrs` without reading them: for items where they do not
/// belong, after the error about the item has been reported.
pub(crate) fn drop_helpers(attrs: &mut Vec<Attribute>) {
    attrs.retain(|attr| !is_helper(attr));
}

/// Returns whether `attr` is `#[rpc]`, `#[notification]` or `#[subscription]`.
pub(crate) fn is_helper(attr: &Attribute) -> bool {
    is_helper_path(attr.path())
}

fn is_helper_path(path: &Path) -> bool {
    path.is_ident("rpc") || path.is_ident("notification") || path.is_ident("subscription")
}

/// `attr` with helpers inside `cfg_attr` reported and taken out; `None` when nothing is left.
fn strip_cfg_attr(attr: Attribute, cx: &mut Ctxt) -> Option<Attribute> {
    if !attr.path().is_ident("cfg_attr") {
        return Some(attr);
    }
    let Meta::List(list) = &attr.meta else {
        return Some(attr);
    };
    let Ok(metas) = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(list.tokens.clone())
    else {
        // Left for rustc to report.
        return Some(attr);
    };
    let mut metas = metas.into_iter();
    let predicate = metas.next()?;
    let mut kept = Vec::new();
    let mut changed = false;
    for meta in metas {
        match strip_cfg_meta(meta, cx) {
            Some(meta) => kept.push(meta),
            None => changed = true,
        }
    }
    if !changed {
        return Some(attr);
    }
    if kept.is_empty() {
        return None;
    }
    let pound = attr.pound_token;
    let style = attr.style;
    let bracket = attr.bracket_token;
    let meta: Meta = syn::parse_quote!(cfg_attr(#predicate, #(#kept),*));
    Some(Attribute {
        pound_token: pound,
        style,
        bracket_token: bracket,
        meta,
    })
}

/// One attribute inside `cfg_attr`: `None` when it is a helper (reported), nested `cfg_attr`s
/// stripped in turn.
fn strip_cfg_meta(meta: Meta, cx: &mut Ctxt) -> Option<Meta> {
    if is_helper_path(meta.path()) {
        let name = path_to_string(meta.path());
        cx.error_spanned(
            &meta,
            format_args!(
                "`#[{name}]` cannot be applied through `cfg_attr`: `#[rpc_service]` reads it \
                 before `cfg` is evaluated; write `#[{name}]` unconditionally, or write one method \
                 per `#[cfg]`"
            ),
        );
        return None;
    }
    if !meta.path().is_ident("cfg_attr") {
        return Some(meta);
    }
    let attr = Attribute {
        pound_token: Default::default(),
        style: syn::AttrStyle::Outer,
        bracket_token: Default::default(),
        meta,
    };
    strip_cfg_attr(attr, cx).map(|attr| attr.meta)
}

/// Lint attributes (`allow`, and `expect` as `allow`) to copy onto generated items that mirror
/// the user's: an `expect` there could go unfulfilled.
pub(crate) fn lint_attrs(attrs: &[Attribute]) -> Vec<Attribute> {
    attrs
        .iter()
        .filter_map(|attr| {
            let path = attr.path();
            if !(path.is_ident("allow") || path.is_ident("expect")) {
                return None;
            }
            let Meta::List(list) = &attr.meta else {
                return None;
            };
            let tokens = &list.tokens;
            let pound = attr.pound_token;
            Some(syn::parse_quote_spanned!(pound.span=> #[allow(#tokens)]))
        })
        .collect()
}

/// `#[cfg(...)]` predicates of `attrs`, as one predicate (`all()` when there are none).
pub(crate) fn cfg_predicate(cfgs: &[Attribute]) -> TokenStream {
    let predicates = cfgs.iter().filter_map(|attr| match &attr.meta {
        Meta::List(list) => Some(list.tokens.clone()),
        _ => None,
    });
    quote!(all(#(#predicates),*))
}

/// Returns the comma-separated keys of `#[rpc(...)]`.
fn rpc_metas(attr: &Attribute, keys: &[&str], cx: &mut Ctxt) -> Vec<Meta> {
    match &attr.meta {
        Meta::List(list) => parse_metas(list.tokens.clone(), cx),
        _ => {
            cx.error_spanned(
                &attr.meta,
                format_args!("expected `#[rpc(...)]` with {}", one_of(keys)),
            );
            Vec::new()
        }
    }
}

fn parse_metas(tokens: TokenStream, cx: &mut Ctxt) -> Vec<Meta> {
    match Punctuated::<Meta, Token![,]>::parse_terminated.parse2(tokens) {
        Ok(metas) => metas.into_iter().collect(),
        Err(error) => {
            cx.push(error);
            Vec::new()
        }
    }
}

/// Returns the key of one `key = value` entry, if it is one of `keys`.
fn key_of(meta: &Meta, keys: &[&str], attr: &str, cx: &mut Ctxt) -> Option<String> {
    let path = meta.path();
    let key = path
        .get_ident()
        .map(ToString::to_string)
        .filter(|key| keys.contains(&key.as_str()));
    if key.is_none() {
        cx.error_spanned(
            path,
            format_args!(
                "unknown `{attr}` key `{}`, expected {}",
                path_to_string(path),
                one_of(keys)
            ),
        );
    }
    key
}

/// Keys already given in one attribute (or one method's attributes).
#[derive(Default)]
struct Seen(Vec<String>);

impl Seen {
    /// Returns whether this is the first `key`; a repeat is an error at the repeat.
    fn first(&mut self, meta: &Meta, key: &str, cx: &mut Ctxt) -> bool {
        if self.0.iter().any(|k| k == key) {
            cx.error_spanned(
                meta.path(),
                format_args!("duplicate `{key}` key: give each key once"),
            );
            false
        } else {
            self.0.push(key.to_owned());
            true
        }
    }
}

/// Reads a key that takes no value: `key`.
fn flag(meta: &Meta, key: &str, cx: &mut Ctxt) -> Option<Span> {
    match meta {
        Meta::Path(path) => Some(path.span()),
        _ => {
            cx.error_spanned(meta, format_args!("`{key}` takes no value: write `{key}`"));
            None
        }
    }
}

/// Returns the value of `key = "..."`.
fn string_value(meta: &Meta, key: &str, cx: &mut Ctxt) -> Option<LitStr> {
    if let Meta::NameValue(nv) = meta {
        if let Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) = &nv.value
        {
            return Some(lit.clone());
        }
        cx.error_spanned(
            &nv.value,
            format_args!("expected a string literal: `{key} = \"...\"`"),
        );
    } else {
        cx.error_spanned(meta, format_args!("expected `{key} = \"...\"`"));
    }
    None
}

/// Returns the value of a method's `name = "..."` or `name = EXPR`. A string literal is kept as
/// one, also when a `macro_rules!` macro passed it through (in a group without delimiters); another
/// kind of literal is an error here, and anything else is an expression rustc checks.
fn method_name(meta: &Meta, key: &str, cx: &mut Ctxt) -> Option<MethodName> {
    let expected = format!(
        "expected a string literal or a constant: `{key} = \"...\"` or `{key} = path::TO_NAME`"
    );
    let Meta::NameValue(nv) = meta else {
        cx.error_spanned(meta, &expected);
        return None;
    };
    let mut value = &nv.value;
    while let Expr::Group(group) = value {
        value = &group.expr;
    }
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Some(MethodName::Literal(lit.clone())),
        Expr::Lit(other) => {
            cx.error_spanned(other, &expected);
            None
        }
        _ => Some(MethodName::Expr(Box::new(nv.value.clone()))),
    }
}

/// Returns the value of `key = Type` (a path), or of `key = "Type"`.
fn type_value(meta: &Meta, key: &str, cx: &mut Ctxt) -> Option<syn::Type> {
    let expected = format!("expected a type: `{key} = MyError`");
    let Meta::NameValue(nv) = meta else {
        cx.error_spanned(meta, &expected);
        return None;
    };
    match &nv.value {
        Expr::Path(path) if path.qself.is_none() && path.attrs.is_empty() => {
            Some(syn::Type::Path(syn::TypePath {
                qself: None,
                path: path.path.clone(),
            }))
        }
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => match lit.parse::<syn::Type>() {
            Ok(ty) => Some(ty),
            Err(_) => {
                cx.error_spanned(lit, &expected);
                None
            }
        },
        other => {
            cx.error_spanned(other, &expected);
            None
        }
    }
}

/// `params = whole`, the only value `params` takes.
fn whole_value(meta: &Meta, cx: &mut Ctxt) -> bool {
    if let Meta::NameValue(nv) = meta {
        if let Expr::Path(path) = &nv.value
            && path.path.is_ident("whole")
        {
            return true;
        }
        cx.error_spanned(
            &nv.value,
            format_args!(
                "unknown `params` value `{}`, expected `whole`",
                nv.value.to_token_stream()
            ),
        );
    } else {
        cx.error_spanned(meta, "expected `params = whole`");
    }
    false
}

fn rename_rule(lit: &LitStr, cx: &mut Ctxt) -> Option<RenameRule> {
    let value = lit.value();
    let rule = RenameRule::from_name(&value);
    if rule.is_none() {
        let names: Vec<&str> = RULES.iter().map(|(name, _)| *name).collect();
        let mut message = format!(
            "unknown `rename_all` value `{value}`, expected {}",
            one_of(&names)
        );
        if let Some(suggestion) = RenameRule::suggest(&value) {
            message = format!("{message}: did you mean `{suggestion}`?");
        }
        cx.error_spanned(lit, message);
    }
    rule
}

/// `client = "Name"`, `client = false` or `client = true` (the default).
fn client_value(meta: &Meta, cx: &mut Ctxt) -> Client {
    const EXPECTED: &str =
        "expected `client = \"Name\"` (the stub's name) or `client = false` (no stub)";
    let Meta::NameValue(nv) = meta else {
        cx.error_spanned(meta, EXPECTED);
        return Client::Default;
    };
    match &nv.value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => match lit.parse::<Ident>() {
            Ok(ident) if !ident.to_string().starts_with("r#") => {
                let mut ident = ident;
                ident.set_span(lit.span());
                Client::Named(ident, lit.clone())
            }
            _ => {
                cx.error_spanned(
                    lit,
                    format_args!(
                        "`client` must be a type name such as `CalcClient`, found `{}`",
                        lit.value()
                    ),
                );
                Client::Default
            }
        },
        Expr::Lit(ExprLit {
            lit: Lit::Bool(lit),
            ..
        }) => {
            if lit.value {
                Client::Default
            } else {
                Client::Off(lit.clone())
            }
        }
        other => {
            cx.error_spanned(other, EXPECTED);
            Client::Default
        }
    }
}

/// `crate = "path"` (as serde takes it), or `crate = path`.
fn crate_path(meta: &Meta, cx: &mut Ctxt) -> Option<Path> {
    let Meta::NameValue(nv) = meta else {
        cx.error_spanned(meta, "expected `crate = \"path\"`");
        return None;
    };
    let path = match &nv.value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => match lit.parse_with(Path::parse_mod_style) {
            Ok(path) => path,
            Err(_) => {
                cx.error_spanned(
                    lit,
                    format_args!(
                        "`crate` must be a path such as `::jrpc_runtime`, found `{}`",
                        lit.value()
                    ),
                );
                return None;
            }
        },
        Expr::Path(path) if path.qself.is_none() => path.path.clone(),
        other => {
            cx.error_spanned(other, "expected `crate = \"path\"`");
            return None;
        }
    };
    // The path is pasted into generated code: give it the call site's
    // hygiene, not the span of a string literal inside the attribute.
    syn::parse2(respan(path.to_token_stream(), Span::call_site())).ok()
}

/// `tokens` with every span (recursively) set to `span`.
pub(crate) fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    use proc_macro2::{Group, TokenTree};
    tokens
        .into_iter()
        .map(|mut tree| {
            if let TokenTree::Group(group) = &tree {
                let mut inner = Group::new(group.delimiter(), respan(group.stream(), span));
                inner.set_span(span);
                tree = TokenTree::Group(inner);
            } else {
                tree.set_span(span);
            }
            tree
        })
        .collect()
}

fn path_to_string(path: &Path) -> String {
    let mut out = String::new();
    if path.leading_colon.is_some() {
        out.push_str("::");
    }
    for (i, segment) in path.segments.iter().enumerate() {
        if i > 0 {
            out.push_str("::");
        }
        out.push_str(&segment.ident.to_string());
    }
    out
}

/// "`a`", "`a` or `b`", "one of `a`, `b`, `c`".
pub(crate) fn one_of(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => format!("`{one}`"),
        [a, b] => format!("`{a}` or `{b}`"),
        many => {
            let quoted: Vec<String> = many.iter().map(|item| format!("`{item}`")).collect();
            format!("one of {}", quoted.join(", "))
        }
    }
}
