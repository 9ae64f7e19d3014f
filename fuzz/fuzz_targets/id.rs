//! `Id` parse and echo: what `Id::from_json` takes writes back as the same id, agrees with
//! `serde_json` on what is a valid id, and a call with it is answered with it, numbers byte for
//! byte as written.
#![no_main]

use std::sync::OnceLock;

use jrpc_fuzz::{IdKind, block_on, check_answer, check_answer_object, id_kind, methods, same_id};
use jrpc_runtime::{Id, Methods};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    static METHODS: OnceLock<Methods> = OnceLock::new();
    let methods = METHODS.get_or_init(methods);
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = Id::from_json(text);
    // An id no Rust string holds is echoed as written, but is not an `Id`.
    let valid = id_kind(text).is_some_and(|kind| !matches!(kind, IdKind::Unpaired(_)));
    assert_eq!(parsed.is_some(), valid, "{text:?}: Id says {parsed:?}");
    if let Some(id) = &parsed {
        let written = id.to_string();
        assert_eq!(
            Id::from_json(&written).as_ref(),
            Some(id),
            "{text:?} written as {written}"
        );
        let json = serde_json::to_string(id).expect("an id encodes");
        assert_eq!(
            Id::from_json(&json).as_ref(),
            Some(id),
            "{text:?} encoded as {json}"
        );
    }
    let call = format!(r#"{{"jsonrpc":"2.0","method":"add","params":[1,2],"id":{text}}}"#);
    let answer = block_on(methods.handle(&call)).expect("a call or an error is always answered");
    check_answer(&answer);
    if parsed.is_some() && valid {
        let echoed = check_answer_object(&answer);
        assert!(same_id(text, &echoed), "{text:?} echoed as {echoed}");
    }
});
