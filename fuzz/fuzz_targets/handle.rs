//! `Methods::handle` on arbitrary text: every answer is well-formed JSON-RPC, a valid call's id
//! is echoed, a notification is never answered, and nothing panics.
#![no_main]

use std::sync::OnceLock;

use jrpc_fuzz::{block_on, check_handled, methods};
use jrpc_runtime::Methods;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    static METHODS: OnceLock<Methods> = OnceLock::new();
    let methods = METHODS.get_or_init(methods);
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let answer = block_on(methods.handle(text));
    check_handled(text, answer.as_deref());
});
