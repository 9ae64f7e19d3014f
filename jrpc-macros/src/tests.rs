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
