//! Properties of `Methods::handle` over generated bodies: it never panics, every answer is a
//! well-formed response, and a valid notification is never answered.

use jrpc_runtime::{Methods, RpcError};
use proptest::prelude::*;
use serde_json::Value;

fn methods() -> Methods {
    let mut m = Methods::new();
    m.register("add", &["a", "b"], |(a, b): (i64, i64), _| async move {
        Ok::<_, RpcError>(a.wrapping_add(b))
    })
    .unwrap();
    m.register(
        "opt",
        &["a", "b"],
        |(a, b): (Option<String>, Option<u8>), _| async move { Ok::<_, RpcError>((a, b)) },
    )
    .unwrap();
    m.register_notification("note", &["x"], |(_x,): (Option<Value>,), _| async {})
        .unwrap();
    m
}

/// Any JSON value, small.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "[a-z\\\\\"\u{e9}]{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-z]{1,3}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Request-like objects: each member present or not, of the right kind or not.
fn request_like() -> impl Strategy<Value = Value> {
    let member =
        |good: BoxedStrategy<Value>| prop::option::of(prop_oneof![3 => good, 1 => any_json()]);
    (
        member(Just(Value::from("2.0")).boxed()),
        member(
            prop_oneof![Just("add"), Just("opt"), Just("note"), Just("nope")]
                .prop_map(Value::from)
                .boxed(),
        ),
        member(
            prop_oneof![
                prop::collection::vec(any_json(), 0..4).prop_map(Value::from),
                any_json(),
            ]
            .boxed(),
        ),
        member(
            prop_oneof![
                any::<i64>().prop_map(Value::from),
                "[a-z]{0,4}".prop_map(Value::from),
                Just(Value::Null)
            ]
            .boxed(),
        ),
    )
        .prop_map(|(jsonrpc, method, params, id)| {
            let mut object = serde_json::Map::new();
            for (key, value) in [
                ("jsonrpc", jsonrpc),
                ("method", method),
                ("params", params),
                ("id", id),
            ] {
                if let Some(value) = value {
                    object.insert(key.to_owned(), value);
                }
            }
            Value::Object(object)
        })
}

/// Valid requests, mostly: the methods of the table and others, params of the right shape or
/// not, calls and notifications.
fn valid_request() -> impl Strategy<Value = Value> {
    (
        prop_oneof![Just("add"), Just("opt"), Just("note"), Just("nope")],
        prop::option::of(prop_oneof![
            3 => (any::<i32>(), any::<i32>()).prop_map(|(a, b)| serde_json::json!([a, b])),
            1 => (any::<i32>(), any::<u8>()).prop_map(|(a, b)| serde_json::json!({"a": a, "b": b})),
            1 => prop::collection::vec(any_json(), 0..3).prop_map(Value::from),
            // Not params at all.
            1 => prop_oneof![Just(Value::Null), any::<i64>().prop_map(Value::from), "[a-z]{0,3}".prop_map(Value::from)],
        ]),
        prop::option::of(prop_oneof![
            any::<i64>().prop_map(Value::from),
            "[a-z]{0,4}".prop_map(Value::from),
            Just(Value::Null)
        ]),
    )
        .prop_map(|(method, params, id)| {
            let mut object = serde_json::Map::new();
            object.insert("jsonrpc".to_owned(), "2.0".into());
            object.insert("method".to_owned(), method.into());
            if let Some(params) = params {
                object.insert("params".to_owned(), params);
            }
            if let Some(id) = id {
                object.insert("id".to_owned(), id);
            }
            Value::Object(object)
        })
}

fn is_valid_notification(v: &Value) -> bool {
    let Some(o) = v.as_object() else { return false };
    o.get("id").is_none()
        && o.get("jsonrpc") == Some(&Value::from("2.0"))
        && o.get("method").is_some_and(Value::is_string)
        && o.get("params")
            .is_none_or(|p| p.is_array() || p.is_object())
}

fn check_response(r: &Value) {
    assert_eq!(r["jsonrpc"], "2.0", "{r}");
    assert!(r.get("result").is_some() != r.get("error").is_some(), "{r}");
    assert!(r.get("id").is_some(), "{r}");
    if let Some(error) = r.get("error") {
        assert!(
            error["code"].is_i64() && error["message"].is_string(),
            "{r}"
        );
    }
}

fn answer(body: &str) -> Option<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(methods().handle(body))
}

proptest! {
    #[test]
    fn single_requests(request in request_like()) {
        let body = request.to_string();
        match answer(&body) {
            None => prop_assert!(is_valid_notification(&request), "unanswered: {body}"),
            Some(text) => {
                let v: Value = serde_json::from_str(&text).unwrap();
                check_response(&v);
                // A valid id is echoed, whatever else is wrong with the object. (Float ids are
                // echoed as written too, but serde_json's float parsing does not round-trip, so
                // that is checked byte for byte in wire.rs instead.)
                if let Some(id) = request
                    .get("id")
                    .filter(|id| id.is_i64() || id.is_u64() || id.is_string() || id.is_null())
                {
                    prop_assert_eq!(&v["id"], id);
                }
                prop_assert!(!is_valid_notification(&request), "answered a notification: {body} -> {text}");
            }
        }
    }

    #[test]
    fn batches(requests in prop::collection::vec(request_like(), 1..6)) {
        let body = Value::from(requests.clone()).to_string();
        let expected = requests.iter().filter(|r| !is_valid_notification(r)).count();
        match answer(&body) {
            None => prop_assert_eq!(expected, 0),
            Some(text) => {
                let v: Value = serde_json::from_str(&text).unwrap();
                let answers = v.as_array().unwrap();
                prop_assert_eq!(answers.len(), expected);
                answers.iter().for_each(check_response);
            }
        }
    }

    /// A batch's answers are, in order, the answers its elements get alone.
    #[test]
    fn a_batch_answers_as_its_elements_alone(
        requests in prop::collection::vec(prop_oneof![3 => valid_request(), 1 => request_like()], 1..6)
    ) {
        let body = Value::from(requests.clone()).to_string();
        let alone: Vec<Value> = requests
            .iter()
            .filter_map(|request| answer(&request.to_string()))
            .map(|text| serde_json::from_str(&text).unwrap())
            .collect();
        match answer(&body) {
            None => prop_assert!(alone.is_empty(), "unanswered: {body}"),
            Some(text) => {
                let v: Value = serde_json::from_str(&text).unwrap();
                prop_assert_eq!(v, Value::from(alone), "{}", body);
            }
        }
    }

    #[test]
    fn arbitrary_text_never_panics(body in "\\PC{0,40}") {
        if let Some(text) = answer(&body) {
            let v: Value = serde_json::from_str(&text).unwrap();
            match &v {
                Value::Array(items) => items.iter().for_each(check_response),
                _ => check_response(&v),
            }
        }
    }
}
