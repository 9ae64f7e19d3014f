//! Compile-time behaviour of `#[rpc_service]`: each misuse in `ui/fail` is one
//! pointed error (pinned in its `.stderr`), and each case in `ui/pass`
//! compiles without a warning.
//!
//! Files are grouped by the phase that catches the misuse: `ast-` (reading
//! an item with a syntax error, which rustc reports alone), `attr-` (reading
//! the attributes), `valid-` (the macro's rules) and `type-` (rustc's trait
//! checks, aimed at the user's types). Each `.stderr` is pinned whole: one
//! error per mistake.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("ui/pass/*.rs");
    cases.compile_fail("ui/fail/*.rs");
}
