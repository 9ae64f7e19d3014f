//! Params decoding into tuples, structs and `Option`s: no input panics, a failure is `-32602`
//! (or `-32600` for params that are neither an array nor an object) naming a parameter (or, for
//! params decoded whole, the path into them from `params`), and what decodes encodes back to
//! params that decode to the same values.
#![no_main]

use jrpc_runtime::{FromParams, RpcError, Whole};
use libfuzzer_sys::fuzz_target;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Point {
    x: i64,
    // Not a float: serde_json reads floats to the nearest value only with `float_roundtrip`.
    y: Option<i32>,
    #[serde(default)]
    tags: Vec<String>,
}

/// A failure is `-32602` (or `-32600`); for params that are an array or an object (all that
/// reaches a handler: the wire refuses the rest) it names the parameter at fault, or the path
/// from `params` to the part at fault.
fn failure_is_clear(err: &RpcError, container: bool) {
    let code = err.code().code();
    assert!(code == -32602 || code == -32600, "code {code}");
    if code == -32602 && container {
        let data = err.data().map(RawValue::get).unwrap_or_default();
        assert!(
            data.contains("parameter") || data.starts_with(r#""params"#),
            "{data}"
        );
    }
}

/// Decodes `params` as `P`; what decodes must come back the same through a positional array.
fn round_trip<P>(
    params: Option<&RawValue>,
    names: &'static [&'static str],
    encode: impl Fn(&P) -> String,
) where
    P: FromParams + PartialEq + std::fmt::Debug,
{
    match P::from_params(params, names) {
        Ok(value) => {
            let text = encode(&value);
            let again = RawValue::from_string(text.clone()).expect("JSON");
            let back = P::from_params(Some(&again), names)
                .unwrap_or_else(|err| panic!("{text} did not decode again: {err:?}"));
            assert_eq!(back, value, "{text}");
        }
        Err(err) => failure_is_clear(
            &err,
            params.is_some_and(|p| p.get().starts_with(['[', '{'])),
        ),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let raw = RawValue::from_string(text.to_owned()).ok();
    for params in [raw.as_deref(), None] {
        round_trip::<(i64, i64)>(params, &["a", "b"], |(a, b)| format!("[{a},{b}]"));
        round_trip::<(String, Option<u8>)>(params, &["name", "age"], |v| {
            serde_json::to_string(&(&v.0, &v.1)).expect("encodes")
        });
        round_trip::<(Option<bool>, Option<Vec<i64>>, Option<String>)>(
            params,
            &["flag", "list", "label"],
            |v| serde_json::to_string(&(&v.0, &v.1, &v.2)).expect("encodes"),
        );
        round_trip::<(Point,)>(params, &["point"], |(p,)| {
            serde_json::to_string(&[p]).expect("encodes")
        });
        round_trip::<Whole<Point>>(params, &["point"], |Whole(p)| {
            serde_json::to_string(p).expect("encodes")
        });
        round_trip::<Whole<Option<Vec<u32>>>>(params, &["numbers"], |Whole(v)| {
            // `null` would read as absent params' missing value; an absent value has no text.
            serde_json::to_string(v).expect("encodes")
        });
        if let Err(err) = <()>::from_params(params, &[]) {
            failure_is_clear(&err, true);
        }
    }
});
