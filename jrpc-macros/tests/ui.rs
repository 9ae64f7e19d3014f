//! Compile-time behaviour of `#[rpc_service]`: each misuse in `ui/fail` is one
//! pointed error (pinned in its `.stderr`), and each case in `ui/pass`
//! compiles without a warning.
//!
//! Files are grouped by the phase that catches the misuse: `ast-` (reading
//! an item with a syntax error, which rustc reports alone), `attr-` (reading
//! the attributes), `valid-` (the macro's rules) and `type-` (rustc's trait
//! checks, aimed at the user's types). Each `.stderr` is pinned whole: one
//! error per mistake.
//!
//! trybuild builds the cases in a project of its own with this crate's
//! dependencies and dev-dependencies: they are kept to what the cases use.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
}
