//! Expansion-level tests: the macro never panics, collects every error, and
//! names methods as documented. Compile-time behaviour in a user crate is
//! pinned by the trybuild cases in `tests/ui`.

use proc_macro2::TokenStream;

use crate::rpc_service_impl;

fn expand(args: &str, item: &str) -> String {
    let args: TokenStream = args.parse().expect("args lex");
    let item: TokenStream = item.parse().expect("item lexes");
    rpc_service_impl(args, item).to_string()
}

fn errors(output: &str) -> usize {
    output.matches("compile_error").count()
}

#[test]
fn never_panics() {
    let items = [
        "trait T {}",
        "trait T { async fn f(&self); }",
        "trait T { fn f(); }",
        "trait T { fn f(self: Box<Self>); }",
        "trait T { fn f(&self, _: u8); }",
        "trait T { fn f(&self, (a, b): (u8, u8)); }",
        "trait T { fn f(&self, a @ 1..=2: u8); }",
        "trait T { fn f(&self, ref a: u8); }",
        "trait T { fn f(&self, a: impl Sized); }",
        "trait T { fn f(&self) -> impl Sized; }",
        "trait T { fn f(&self) -> impl Future<Output = u8>; }",
        "trait T { fn f(&self) -> Result; }",
        "trait T { fn f(&self) -> Result<>; }",
        "trait T { fn f(&self) -> Result<'static>; }",
        "trait T { fn f(&self) -> io::Result<u8>; }",
        "trait T { fn f(&self) -> <u8 as X>::Result; }",
        "trait T { #[rpc] fn f(&self); }",
        "trait T { #[rpc = 1] fn f(&self); }",
        "trait T { #[rpc()] fn f(&self); }",
        "trait T { #[rpc(name)] fn f(&self); }",
        "trait T { #[rpc(name = 1)] fn f(&self); }",
        "trait T { #[rpc(name = X)] fn f(&self); }",
        "trait T { #[rpc(name = a::B.c)] fn f(&self); #[rpc(name = a::B.c)] fn g(&self); }",
        "trait T { #[rpc(name = <A as B>::C)] fn f(&self); }",
        "trait T { #[rpc(name = {})] fn f(&self); }",
        "trait T { #[rpc(name = X)] fn into_methods(&self); }",
        "trait T { fn f(&self, #[rpc(name = X)] a: u8); }",
        "impl S { #[rpc(name = X)] fn f(&self) {} }",
        "trait T { #[rpc(name = \"\")] fn f(&self); }",
        "trait T { #[rpc(params)] fn f(&self, a: u8); }",
        "trait T { #[rpc(params = whole, params = whole)] fn f(&self, a: u8); }",
        "trait T { #[rpc(::name = \"x\")] fn f(&self); }",
        "trait T { #[rpc(a::b = \"x\")] fn f(&self); }",
        "trait T { #[rpc(name = \"x\",,)] fn f(&self); }",
        "trait T { #[notification(x)] fn f(&self); }",
        "trait T { #[notification] #[notification] fn f(&self); }",
        "trait T { fn f(&self, #[notification] a: u8); }",
        "trait T { fn f(&self, #[rpc(name = \"\")] a: u8); }",
        "trait T { fn f(&self, #[rpc(name = \"a\")] a: u8, #[rpc(name = \"a\")] b: u8); }",
        "trait T { fn f(&self, ctx: &mut Context); }",
        "trait T { #[subscription] fn f(&self); }",
        "trait T { #[subscription = 1] fn f(&self); }",
        "trait T { #[subscription()] async fn f(&self) -> Items<u8>; }",
        "trait T { #[subscription(name = 1, notification = X, unsubscribe = \"\")] async fn f(&self) -> Items<u8>; }",
        "trait T { #[subscription(notification, unsubscribe = u::U)] async fn f(&self) -> Items<u8>; }",
        "trait T { #[subscription(notification = \"n\", unsubscribe = \"u\")] #[subscription(notification = \"n\", unsubscribe = \"u\")] async fn f(&self) -> Items<u8>; }",
        "trait T { #[subscription(notification = \"n\", unsubscribe = \"u\", params = whole)] async fn f(&self) -> Result<Items<>, E>; }",
        "trait T { #[subscription(notification = \"n\", unsubscribe = \"u\", params = part)] async fn f(&self) -> Items; }",
        "trait T { #[subscription(notification = \"n\", unsubscribe = \"u\")] fn f(self) -> Items<impl Sized>; }",
        "trait T { #[subscription(notification = \"rpc.n\", unsubscribe = \"f\")] async fn f(&self); }",
        "trait T { #[notification] #[rpc(name = \"x\")] #[subscription(notification = \"n\", unsubscribe = \"u\")] async fn f(&self) -> u8; }",
        "trait T { fn f(&self, #[subscription] a: u8); }",
        "trait T { #[subscription(notification = \"n\", unsubscribe = \"u\")] type X; }",
        "impl S { #[subscription(notification = \"n\", unsubscribe = \"u\")] async fn f(&self) -> Items<u8> { todo!() } }",
        "trait T { fn r#type(&self, r#in: u8); }",
        "trait T { fn é(&self); }",
        "trait T { type X; const Y: u8; fn f(&self); }",
        "trait T<'a> { fn f(&self); }",
        "trait T { unsafe fn f(&self); extern \"C\" fn g(&self); }",
        "trait T { fn into_methods(&self); fn new(&self); }",
        "trait T { fn f(&self); fn f(&self); }",
        "impl S { fn f(&self) {} }",
        "impl<T> S<T> { fn f(&self) {} }",
        "impl T for S { #[rpc(name = \"x\")] fn f(&self, #[rpc(name = \"y\")] a: u8) {} }",
        "struct S;",
        "enum E {}",
        "fn f() {}",
        "mod m {}",
        "const C: u8 = 1;",
        "static S: u8 = 1;",
        "type A = u8;",
        "use a::b;",
        "extern crate a;",
        "extern \"C\" {}",
        "m!();",
        "union U { a: u8 }",
        "trait A = B;",
        "1 + 1",
        "",
    ];
    let args = [
        "",
        "namespace = \"rpc\"",
        "namespace = \"\"",
        "namespace",
        "namespace(x)",
        "namespace = 1",
        "rename_all = \"x\"",
        "crate = \"not a path\"",
        "crate = \"\"",
        "crate = ::a::b",
        "crate = 1",
        "separator = \"\"",
        "a = b, c(d), e",
        "= =",
        "namespace = \"a\", namespace = \"b\"",
        "client_error = E",
        "client_error = \"a::E<u8>\"",
        "client_error = \"not a type!\"",
        "client_error",
        "client_error = 1",
    ];
    for args in args {
        for item in items {
            let _ = expand(args, item);
        }
    }
}

#[test]
fn collects_every_error() {
    let output = expand(
        "rename_all = \"nope\", colour = \"red\"",
        "trait T {
            fn a(self);
            fn b<X>(&self);
            fn c(&self, s: &str);
            #[notification] fn d(&self) -> u8;
            #[rpc(bogus)] fn e(&self);
        }",
    );
    assert_eq!(errors(&output), 7, "{output}");
    // The item is still emitted, with stand-ins for the generated items.
    assert!(output.contains("trait T"), "{output}");
    assert!(output.contains("fn into_methods"), "{output}");
    assert!(output.contains("struct TClient"), "{output}");
    // Helper attributes are taken out.
    assert!(!output.contains("notification ]"), "{output}");
}

#[test]
fn misplaced_attribute_keeps_the_item() {
    let output = expand("", "impl T for S { #[rpc(name = \"x\")] fn f(&self) {} }");
    assert_eq!(errors(&output), 1, "{output}");
    assert!(
        output.contains("put `#[rpc_service]` on the trait `T`"),
        "{output}"
    );
    assert!(!output.contains("# [rpc"), "{output}");
}

#[test]
fn wire_names() {
    let output = expand(
        "namespace = \"calc\", separator = \"/\", rename_all = \"camelCase\"",
        "trait T {
            fn add_all(&self, #[rpc(name = \"xs\")] numbers: Vec<i64>);
            #[rpc(name = \"get_data\")] fn data(&self);
            fn r#type(&self, r#in: u8);
        }",
    );
    assert_eq!(errors(&output), 0, "{output}");
    for name in [
        "\"calc/addAll\"",
        "\"xs\"",
        "\"calc/get_data\"",
        "\"calc/type\"",
        "\"in\"",
    ] {
        assert!(output.contains(name), "{name} in {output}");
    }
}

#[test]
fn a_name_given_by_an_expression_is_evaluated_by_the_compiler() {
    let output = expand(
        "namespace = \"acp\", separator = \"/\", rename_all = \"camelCase\"",
        "trait T {
            #[rpc(name = names::NEW_SESSION)] fn new_session(&self);
            #[rpc(name = names::NEW_SESSION)] fn again(&self);
            fn load_session(&self);
        }",
    );
    // The macro cannot compare the values: the table finds a clash.
    assert_eq!(errors(&output), 0, "{output}");
    assert!(output.contains("Table :: new (\"T\")"), "{output}");
    // Used as written (no `rename_all`), after the namespace.
    assert!(output.contains("join_name"), "{output}");
    assert!(output.contains("\"acp/\""), "{output}");
    assert!(!output.contains("newSession"), "{output}");
    assert!(output.contains("\"acp/loadSession\""), "{output}");
    assert!(
        output.contains("the method named `acp/` and the name in `names::NEW_SESSION`"),
        "{output}"
    );
    assert!(output.contains("# Panics"), "{output}");

    // Without a namespace, the value itself; checked in constants, in `into_methods` only.
    let output = expand("", "trait T { #[rpc(name = N)] fn f(&self); }");
    assert_eq!(errors(&output), 0, "{output}");
    assert!(!output.contains("join_name"), "{output}");
    assert_eq!(output.matches("is_reserved").count(), 1, "{output}");

    // A literal of another kind, and an expression on a parameter, are errors.
    let output = expand("", "trait T { #[rpc(name = 1)] fn f(&self); }");
    assert_eq!(errors(&output), 1, "{output}");
    assert!(
        output.contains("expected a string literal or a constant"),
        "{output}"
    );
    let output = expand("", "trait T { fn f(&self, #[rpc(name = X)] a: u8); }");
    assert_eq!(errors(&output), 1, "{output}");
    // A literal passed through `macro_rules!` (in an invisible group) is still a literal.
    let item: TokenStream =
        "trait T { #[rpc(name = \"a\")] fn f(&self); #[rpc(name = X)] fn g(&self); }"
            .parse()
            .unwrap();
    let item = wrap_literal_in_group(item);
    let output = rpc_service_impl(TokenStream::new(), item).to_string();
    assert_eq!(errors(&output), 0, "{output}");
    assert!(output.contains("Meta (\"a\""), "{output}");
}

/// `item` with each string literal in a group without delimiters, as `macro_rules!` passes a
/// `$name:expr`.
fn wrap_literal_in_group(item: TokenStream) -> TokenStream {
    use proc_macro2::{Delimiter, Group, TokenTree};
    item.into_iter()
        .map(|tree| match tree {
            TokenTree::Group(group) => {
                let mut inner =
                    Group::new(group.delimiter(), wrap_literal_in_group(group.stream()));
                inner.set_span(group.span());
                TokenTree::Group(inner)
            }
            TokenTree::Literal(lit) if lit.to_string().starts_with('"') => {
                TokenTree::Group(Group::new(Delimiter::None, TokenTree::Literal(lit).into()))
            }
            other => other,
        })
        .collect()
}

#[test]
fn reserved_namespace_is_reported_once() {
    let output = expand(
        "namespace = \"rpc\"",
        "trait T { fn a(&self); fn b(&self); }",
    );
    assert_eq!(errors(&output), 1, "{output}");
}

#[test]
fn stub_type_parameter_avoids_user_types() {
    let output = expand("", "trait T { fn a(&self, c: C) -> C; }");
    assert!(output.contains("struct TClient < JrpcCaller >"), "{output}");
    let output = expand("", "trait T { fn a(&self, c: u8); }");
    assert!(output.contains("struct TClient < C >"), "{output}");
}

#[test]
fn raw_identifiers_name_the_same_method() {
    // `r#new` is `new`: it clashes with the stub's constructor.
    let output = expand("", "trait T { fn r#new(&self); }");
    assert_eq!(errors(&output), 1, "{output}");
    assert!(output.contains("`new` is taken"), "{output}");
    let output = expand("", "impl S { fn r#into_methods(&self) {} }");
    assert_eq!(errors(&output), 1, "{output}");
    // No stand-in `into_methods` next to the user's.
    assert_eq!(output.matches("fn into_methods").count(), 0, "{output}");
    assert_eq!(output.matches("fn r#into_methods").count(), 1, "{output}");
    // The stand-in stub defines each method once.
    let output = expand("", "trait T { fn r#f(&self); fn f(&self); fn g(self); }");
    assert_eq!(output.matches("async fn r#f").count(), 1, "{output}");
    assert_eq!(output.matches("async fn f").count(), 0, "{output}");
}

#[test]
fn an_item_syn_cannot_read_keeps_the_option_errors() {
    // rustc reported the syntax error before the attribute ran: only the
    // option's error is added.
    let output = expand("colour = \"red\"", "1 + 1");
    assert_eq!(errors(&output), 1, "{output}");
    assert!(output.contains("colour"), "{output}");
}

#[test]
fn async_trait_output_is_one_error() {
    // What `#[async_trait]` makes of `async fn add(&self, a: i64) -> i64;`
    // when it runs first.
    let output = expand(
        "",
        "trait T {
            #[must_use]
            fn add<'life0, 'async_trait>(&'life0 self, a: i64)
                -> ::core::pin::Pin<Box<dyn ::core::future::Future<Output = i64>
                    + ::core::marker::Send + 'async_trait>>
            where 'life0: 'async_trait, Self: 'async_trait;
            fn sub<'life0, 'async_trait>(&'life0 self)
                -> ::core::pin::Pin<Box<dyn ::core::future::Future<Output = i64>
                    + ::core::marker::Send + 'async_trait>>
            where 'life0: 'async_trait, Self: 'async_trait;
        }",
    );
    assert_eq!(errors(&output), 1, "{output}");
    assert!(output.contains("rewrote this trait"), "{output}");
    // The stand-in stub repeats no `'async_trait`.
    let stub = &output[output.find("impl < C >").unwrap_or(0)..];
    assert!(!stub.contains("async_trait"), "{output}");
}

#[test]
fn duplicate_names_under_different_cfgs_are_left_to_the_compiler() {
    let output = expand(
        "",
        "trait T {
            #[cfg(unix)] #[rpc(name = \"os\")] fn a(&self);
            #[cfg(windows)] #[rpc(name = \"os\")] fn b(&self);
        }",
    );
    // No error now: one under `#[cfg(all(all(unix), all(windows)))]`.
    assert_eq!(errors(&output), 1, "{output}");
    assert!(
        output.contains("# [cfg (all (all (unix) , all (windows)))]"),
        "{output}"
    );
    assert!(output.contains("fn into_methods"), "{output}");
    // The same `#[cfg]`s: an error now.
    let output = expand(
        "",
        "trait T {
            #[cfg(unix)] #[rpc(name = \"os\")] fn a(&self);
            #[cfg(unix)] #[rpc(name = \"os\")] fn b(&self);
        }",
    );
    assert_eq!(errors(&output), 1, "{output}");
    assert!(!output.contains("# [cfg (all (all"), "{output}");
}

#[test]
fn stand_ins_repeat_no_type_they_cannot() {
    let output = expand(
        "",
        "trait T {
            fn a(&self) -> impl Sized;
            fn b<'x>(&'x self, v: std::borrow::Cow<'x, str>) -> Self;
            fn c<X>(&self, x: X) -> X;
        }",
    );
    // `b` has two mistakes.
    assert_eq!(errors(&output), 4, "{output}");
    // The stub's methods, then its batch's.
    let stub = &output[output.rfind("TClient < C > {").unwrap_or(0)..];
    assert!(stub.contains("TClientBatch < '_ , C >"), "{stub}");
    assert!(!stub.contains("'x"), "{stub}");
    assert!(!stub.contains("Self"), "{stub}");
    assert!(!stub.contains("impl Sized >"), "{stub}");
    assert!(stub.contains("async fn c"), "{stub}");
}

#[test]
fn a_body_syn_cannot_read_is_put_back_as_written() {
    let output = expand(
        "",
        "trait T { #[rpc(name = \"x\")] fn f(&self) -> u8 { let = ; 5 } }",
    );
    // rustc reported the syntax error; nothing is added.
    assert_eq!(errors(&output), 0, "{output}");
    assert!(output.contains("let = ;"), "{output}");
    assert!(output.contains("fn into_methods"), "{output}");
    assert!(output.contains("\"x\""), "{output}");
    assert!(!output.contains("__jrpc_body"), "{output}");
    assert!(!output.contains("# [rpc"), "{output}");
}

#[test]
fn a_signature_syn_cannot_read_loses_only_the_helpers() {
    let output = expand(
        "",
        "trait T { #[rpc(name = \"x\")] fn f(&self, #[rpc(name = \"y\")] a: ) -> u8; }",
    );
    assert_eq!(errors(&output), 0, "{output}");
    assert!(!output.contains("rpc"), "{output}");
    assert!(output.contains("a :)"), "{output}");
}

#[test]
fn client_option() {
    let output = expand("client = \"Remote\"", "trait T { fn a(&self); }");
    assert_eq!(errors(&output), 0, "{output}");
    assert!(output.contains("struct Remote < C >"), "{output}");
    assert!(!output.contains("TClient"), "{output}");
    let output = expand("client = false", "trait T { fn new(&self); }");
    assert_eq!(errors(&output), 0, "{output}");
    assert!(!output.contains("struct"), "{output}");
    for bad in [
        "client = \"a b\"",
        "client = 1",
        "client",
        "client = \"r#x\"",
    ] {
        let output = expand(bad, "trait T { fn a(&self); }");
        assert_eq!(errors(&output), 1, "{bad}: {output}");
    }
}

#[test]
fn client_error_takes_a_type() {
    assert_eq!(
        errors(&expand("client_error = E", "trait T { fn f(&self); }")),
        0
    );
    assert_eq!(
        errors(&expand(
            "client_error = \"a::E<u8>\"",
            "trait T { fn f(&self); }"
        )),
        0
    );
    for bad in [
        "client_error",
        "client_error = 1",
        "client_error = \"not a type!\"",
    ] {
        assert_eq!(errors(&expand(bad, "trait T { fn f(&self); }")), 1, "{bad}");
    }
}

#[test]
fn batch_is_the_stubs_method() {
    let output = expand("", "trait T { fn batch(&self); }");
    assert!(
        output.contains("taken by the generated `TClient::batch`"),
        "{output}"
    );
    assert_eq!(
        errors(&expand("client = false", "trait T { fn batch(&self); }")),
        0
    );
}

#[test]
fn cfg_on_params_registers_once_per_combination() {
    // Two distinct predicates (the third parameter repeats the first's):
    // four registrations, each under the `cfg` that selects it.
    let out = expand(
        "",
        "trait T { fn f(&self, #[cfg(a)] x: u8, #[cfg(b)] y: u8, #[cfg(a)] z: u8) -> u8; }",
    );
    assert_eq!(errors(&out), 0, "{out}");
    for helper in ["call_0 (", "call_1 (", "call_2 (", "call_3 ("] {
        assert_eq!(out.matches(helper).count(), 1, "{helper}: {out}");
    }
    assert_eq!(out.matches("# [cfg (all (").count(), 4, "{out}");
}

#[test]
fn cfg_on_a_whole_param_is_one_error() {
    let out = expand(
        "",
        "trait T { #[rpc(params = whole)] fn f(&self, #[cfg(a)] x: u8); }",
    );
    assert_eq!(errors(&out), 1, "{out}");
}

#[test]
fn boxed_futures_are_awaited_and_must_be_send() {
    let ok = expand(
        "",
        "trait T { fn f(&self) -> Pin<Box<dyn Future<Output = u8> + Send>>; }",
    );
    assert_eq!(errors(&ok), 0, "{ok}");
    assert!(ok.contains(". await"), "{ok}");
    let not_send = expand(
        "",
        "trait T { fn f(&self) -> Pin<Box<dyn Future<Output = u8>>>; }",
    );
    assert_eq!(errors(&not_send), 1, "{not_send}");
}

#[test]
fn subscription_names_follow_the_namespace_and_rename_all_applies_to_the_derived_one() {
    let output = expand(
        "namespace = \"eth\", separator = \"_\", rename_all = \"camelCase\"",
        "trait T {
            #[subscription(name = \"subscribe\", notification = \"subscription\", unsubscribe = \"unsubscribe\")]
            async fn subscribe(&self, kind: String) -> Result<Items<Event>, RpcError>;
            #[subscription(notification = \"subscription\", unsubscribe = \"unsubscribe\")]
            async fn new_heads(&self) -> Items<Header>;
        }",
    );
    // Two subscriptions share one notification and one unsubscribe method.
    assert_eq!(errors(&output), 0, "{output}");
    assert_eq!(output.matches("subscribe_1 (").count(), 1, "{output}");
    assert_eq!(output.matches("subscribe_0 (").count(), 1, "{output}");
    assert!(output.contains("Meta (\"eth_subscribe\""), "{output}");
    assert!(output.contains("Meta (\"eth_newHeads\""), "{output}");
    assert_eq!(
        output
            .matches("Names (\"eth_subscription\" , \"eth_unsubscribe\")")
            .count(),
        4,
        "the table's and the stub's, per subscription: {output}"
    );
    // The item types, for the server and the stub.
    assert!(output.contains("< Event as :: jrpc_runtime :: __private :: RpcItem > :: witness"));
    assert!(output.contains("< Header as :: jrpc_runtime :: __private :: StubItem > :: subscribe"));
    // The stub's subscriptions are for callers that can subscribe, and not in its batch.
    assert!(
        output
            .contains("impl < C : :: jrpc_runtime :: Subscriber > __jrpc_TClient :: TClient < C >"),
        "{output}"
    );
    assert!(
        output.contains(
            "Result < :: jrpc_runtime :: Subscription < Header > , :: jrpc_runtime :: ClientError >"
        ),
        "{output}"
    );
    let batch = output
        .split("impl <")
        .find(|block| block.starts_with(" C : :: jrpc_runtime :: Caller > __jrpc_TClientBatch"))
        .expect("the batch's methods");
    // Every method of `T` is a subscription: the batch has none.
    assert!(!batch.contains("pub fn"), "{batch}");
}

#[test]
fn each_subscription_mistake_is_one_error() {
    let cases = [
        // Both names missing: one error naming both.
        (
            "#[subscription(name = \"s\")] async fn f(&self) -> Items<u8>;",
            1,
            "needs `notification",
        ),
        // A malformed key is not reported again as missing.
        (
            "#[subscription(notification = 1, unsubscribe = \"u\")] async fn f(&self) -> Items<u8>;",
            1,
            "expected a string literal or a constant: `notification",
        ),
        (
            "#[subscription(notification = \"n\", unsubscribe = \"u\")] fn f(&self) -> Vec<u8>;",
            2,
            "must be `async`",
        ),
        (
            "#[subscription(notification = \"n\", unsubscribe = \"u\")] async fn f(&self);",
            1,
            "returns its items",
        ),
        (
            "#[subscription(notification = \"\", unsubscribe = \"u\")] async fn f(&self) -> Items<u8>;",
            1,
            "write one in `notification",
        ),
        (
            "#[subscription(notification = \"n\", unsubscribe = \"rpc.u\")] async fn f(&self) -> Items<u8>;",
            1,
            "reserved",
        ),
        (
            "#[subscription(notification = \"n\", unsubscribe = \"u\", params = whole)] async fn f(&self) -> Items<u8>;",
            1,
            "`params = whole` needs exactly one",
        ),
        (
            "#[notification] #[subscription(notification = \"n\", unsubscribe = \"u\")] async fn f(&self) -> Items<u8>;",
            1,
            "both `#[notification]`",
        ),
        (
            "#[rpc(params = whole)] #[subscription(notification = \"n\", unsubscribe = \"u\")] async fn f(&self, a: u8) -> Items<u8>;",
            1,
            "does not go on a `#[subscription]`",
        ),
        (
            "#[subscription(notification = \"n\", unsubscribe = \"u\")] #[subscription(notification = \"n\", unsubscribe = \"u\")] async fn f(&self) -> Items<u8>;",
            1,
            "duplicate `#[subscription]`",
        ),
        (
            "#[subscription(notification = \"n\", unsubscribe = \"u\")] async fn f(&self) -> Items<&str>;",
            1,
            "cannot be borrowed",
        ),
        (
            "#[subscription(notification = \"n\", unsubscribe = \"u\")] async fn new(&self) -> Items<u8>;",
            1,
            "taken by the generated",
        ),
    ];
    for (method, count, message) in cases {
        let output = expand("", &format!("trait T {{ {method} }}"));
        assert_eq!(errors(&output), count, "{method}: {output}");
        assert!(output.contains(message), "{method}: {message} in {output}");
        // The item is still emitted, helpers taken out, with stand-ins.
        assert!(!output.contains("# [subscription"), "{output}");
        assert!(output.contains("fn into_methods"), "{output}");
    }
}

#[test]
fn names_a_subscription_shares_are_no_clash_and_others_are() {
    let shared = expand(
        "",
        "trait T {
            #[subscription(notification = \"n\", unsubscribe = \"u\")] async fn a(&self) -> Items<u8>;
            #[subscription(notification = \"n\", unsubscribe = \"u\")] async fn b(&self) -> Items<u8>;
        }",
    );
    assert_eq!(errors(&shared), 0, "{shared}");
    let clash = expand(
        "",
        "trait T {
            #[subscription(notification = \"n\", unsubscribe = \"b\")] async fn a(&self) -> Items<u8>;
            #[subscription(notification = \"n\", unsubscribe = \"a\")] async fn b(&self) -> Items<u8>;
        }",
    );
    // `b` is `a`'s unsubscribe method, and `b`'s unsubscribe method is `a`.
    assert_eq!(errors(&clash), 2, "{clash}");
    assert!(
        clash.contains("also the name of the unsubscribe method of subscription `a`"),
        "{clash}"
    );
    assert!(clash.contains("also the name of method `a`"), "{clash}");
}

#[test]
fn a_stand_in_stub_keeps_a_subscriptions_method() {
    let output = expand(
        "",
        "trait T {
            #[subscription(notification = \"n\", unsubscribe = \"u\")]
            async fn heads(&self, from: u64) -> Items<Header>;
            fn broken(self);
        }",
    );
    assert_eq!(errors(&output), 1, "{output}");
    assert!(
        output.contains("pub async fn heads (& self , _ : u64) -> :: core :: result :: Result < :: jrpc_runtime :: Subscription < Header > , :: jrpc_runtime :: ClientError >"),
        "{output}"
    );
}
