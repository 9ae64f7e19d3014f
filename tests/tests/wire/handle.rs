//! Every row of the wire-semantics table, through `Methods::handle` with hand-registered methods.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use jrpc_runtime::{Batches, Context, ErrorCode, Methods, Params, RpcError};
use serde_json::{Value, json};

fn methods() -> Methods {
    let mut m = Methods::new();
    m.register(
        "subtract",
        &["minuend", "subtrahend"],
        |(a, b): (i64, i64), _| async move { Ok::<_, RpcError>(a - b) },
    )
    .unwrap();
    m.register("fail", &["code"], |(code,): (i32,), _| async move {
        Err::<(), _>(RpcError::new(code, "custom"))
    })
    .unwrap();
    m.register("panic", &[], |(): (), _| async move {
        if true {
            panic!("boom");
        }
        Ok::<(), RpcError>(())
    })
    .unwrap();
    jrpc_tests::fixtures::sleep(&mut m);
    m.register("unencodable", &[], |(): (), _| async move {
        let mut map = std::collections::HashMap::new();
        map.insert(vec![1u8], 1);
        Ok::<_, RpcError>(map)
    })
    .unwrap();
    m.register_raw("echo", |params: Params, _| async move {
        Ok::<_, RpcError>(params.into_raw())
    })
    .unwrap();
    m.register_notification("note", &[], |_: Params, _| async {})
        .unwrap();
    m
}

async fn answer(m: &Methods, body: &str) -> Option<Value> {
    m.handle(body)
        .await
        .map(|text| serde_json::from_str(&text).unwrap())
}

async fn error_of(m: &Methods, body: &str) -> (i64, Value) {
    let v = answer(m, body).await.expect("an answer");
    assert_eq!(v["jsonrpc"], "2.0");
    assert!(v.get("result").is_none(), "{v}");
    (v["error"]["code"].as_i64().unwrap(), v["id"].clone())
}

#[tokio::test]
async fn not_json_is_a_parse_error_with_null_id() {
    let m = methods();
    for body in [
        "",
        "   ",
        "{",
        "\u{feff}{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[1,1],\"id\":1}",
        "[1,",
        "{} x",
        "nul",
    ] {
        assert_eq!(error_of(&m, body).await, (-32700, Value::Null), "{body:?}");
    }
    let v = answer(&m, "{").await.unwrap();
    assert_eq!(v["error"]["message"], "Parse error");
}

#[tokio::test]
async fn json_that_is_not_a_request_is_invalid() {
    let m = methods();
    let cases = [
        ("1", Value::Null),
        ("\"x\"", Value::Null),
        ("null", Value::Null),
        ("true", Value::Null),
        (r#"{"method":"subtract","params":[1,1],"id":1}"#, json!(1)),
        (r#"{"jsonrpc":"1.0","method":"subtract","id":2}"#, json!(2)),
        (r#"{"jsonrpc":2.0,"method":"subtract","id":3}"#, json!(3)),
        (r#"{"jsonrpc":"2.0","method":7,"id":"a"}"#, json!("a")),
        (r#"{"jsonrpc":"2.0","params":[],"id":4}"#, json!(4)),
        (
            r#"{"jsonrpc":"2.0","method":"subtract","params":"x","id":5}"#,
            json!(5),
        ),
        (
            r#"{"jsonrpc":"2.0","method":"subtract","params":null,"id":6}"#,
            json!(6),
        ),
        (
            r#"{"jsonrpc":"2.0","method":"subtract","params":3,"id":7}"#,
            json!(7),
        ),
        (r#"{"jsonrpc":"2.0","result":1,"id":8}"#, json!(8)),
        (
            r#"{"jsonrpc":"2.0","method":"subtract","params":"x"}"#,
            Value::Null,
        ),
    ];
    for (body, id) in cases {
        assert_eq!(error_of(&m, body).await, (-32600, id), "{body}");
    }
    let v = answer(&m, "1").await.unwrap();
    assert_eq!(v["error"]["message"], "Invalid Request");
}

#[tokio::test]
async fn ids_of_the_wrong_kind_are_invalid_with_null_id() {
    let m = methods();
    for id in ["{}", "[1]", "true", "false"] {
        let body = format!(r#"{{"jsonrpc":"2.0","method":"subtract","params":[2,1],"id":{id}}}"#);
        assert_eq!(error_of(&m, &body).await, (-32600, Value::Null), "{body}");
    }
}

#[tokio::test]
async fn a_member_written_twice_is_invalid_with_the_id_when_it_is_read_once() {
    let m = methods();
    for repeated in [
        r#""method":"subtract","method":"subtract","params":[2,1],"id":7"#,
        r#""method":"subtract","params":[2,1],"params":[3,1],"id":7"#,
        r#""method":"subtract","params":[2,1],"id":7,"result":1,"result":2"#,
        r#""jsonrpc":"2.0","method":"subtract","params":[2,1],"id":7"#,
    ] {
        let body = format!(r#"{{"jsonrpc":"2.0",{repeated}}}"#);
        assert_eq!(error_of(&m, &body).await, (-32600, json!(7)), "{body}");
    }
    let body = r#"{"jsonrpc":"2.0","method":"subtract","params":[2,1],"id":7,"id":8}"#;
    assert_eq!(error_of(&m, body).await, (-32600, Value::Null));
    // Members that are not read may repeat.
    let body = r#"{"jsonrpc":"2.0","method":"subtract","params":[2,1],"x":1,"x":2,"id":7}"#;
    assert_eq!(
        answer(&m, body).await,
        Some(json!({"jsonrpc":"2.0","result":1,"id":7}))
    );
}

#[tokio::test]
async fn params_that_cannot_be_encoded_are_refused_before_anything_is_sent() {
    use jrpc_runtime::{Caller as _, ClientError};
    let m = methods();
    let mut bad = std::collections::HashMap::new();
    bad.insert(vec![1u8], 1);
    let err = m.call::<Value>("echo", &bad).await.unwrap_err();
    assert!(matches!(err, ClientError::Encode(_)), "{err:?}");
    assert!(m.notify("note", &bad).await.is_err());
}

#[tokio::test]
async fn null_id_is_a_call() {
    let m = methods();
    let text = m
        .handle(r#"{"jsonrpc":"2.0","method":"subtract","params":[2,1],"id":null}"#)
        .await;
    assert_eq!(
        text.as_deref(),
        Some(r#"{"jsonrpc":"2.0","result":1,"id":null}"#)
    );
}

#[tokio::test]
async fn notifications_are_never_answered() {
    let m = methods();
    for body in [
        r#"{"jsonrpc":"2.0","method":"subtract","params":[2,1]}"#,
        r#"{"jsonrpc":"2.0","method":"nope"}"#,
        r#"{"jsonrpc":"2.0","method":"subtract","params":["x"]}"#,
        r#"{"jsonrpc":"2.0","method":"fail","params":[5]}"#,
        r#"{"jsonrpc":"2.0","method":"panic"}"#,
        r#"{"jsonrpc":"2.0","method":"note","params":[1]}"#,
        // A number past `f64`'s range is still JSON: params of the right kind.
        r#"{"jsonrpc":"2.0","method":"nope","params":[0,4E999]}"#,
    ] {
        assert_eq!(m.handle(body).await, None, "{body}");
    }
}

#[tokio::test]
async fn notification_handlers_run() {
    let seen = Arc::new(AtomicUsize::new(0));
    let mut m = Methods::new();
    let counter = Arc::clone(&seen);
    m.register_notification("tick", &["n"], move |(n,): (usize,), _| {
        let counter = Arc::clone(&counter);
        async move {
            counter.fetch_add(n, Ordering::SeqCst);
        }
    })
    .unwrap();
    assert_eq!(
        m.handle(r#"{"jsonrpc":"2.0","method":"tick","params":[2]}"#)
            .await,
        None
    );
    assert_eq!(seen.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn number_ids_are_echoed_byte_for_byte() {
    let m = methods();
    for id in [
        "1",
        "1.0",
        "1e3",
        "-0",
        "12345678901234567890123",
        "0.000001",
        "-7",
        r#""x\u0041""#,
        r#""""#,
    ] {
        let body = format!(r#"{{"jsonrpc":"2.0","method":"subtract","params":[2,1],"id":{id}}}"#);
        let text = m.handle(&body).await.unwrap();
        assert_eq!(text, format!(r#"{{"jsonrpc":"2.0","result":1,"id":{id}}}"#));
    }
}

#[tokio::test]
async fn unknown_method_is_not_found() {
    let m = methods();
    assert_eq!(
        error_of(&m, r#"{"jsonrpc":"2.0","method":"nope","id":1}"#).await,
        (-32601, json!(1))
    );
}

#[tokio::test]
async fn a_call_to_a_notification_method_is_answered_null() {
    let m = methods();
    let text = m
        .handle(r#"{"jsonrpc":"2.0","method":"note","id":9}"#)
        .await;
    assert_eq!(
        text.as_deref(),
        Some(r#"{"jsonrpc":"2.0","result":null,"id":9}"#)
    );
}

#[tokio::test]
async fn bad_params_are_invalid_params_naming_the_parameter() {
    let m = methods();
    let v = answer(
        &m,
        r#"{"jsonrpc":"2.0","method":"subtract","params":[1,"x"],"id":1}"#,
    )
    .await
    .unwrap();
    assert_eq!(v["error"]["code"], -32602);
    assert_eq!(v["error"]["message"], "Invalid params");
    assert_eq!(
        v["error"]["data"],
        r#"parameter "subtrahend": invalid type: string "x", expected i64"#
    );
    let v = answer(
        &m,
        r#"{"jsonrpc":"2.0","method":"subtract","params":[1,2,3],"id":1}"#,
    )
    .await
    .unwrap();
    assert_eq!(v["error"]["code"], -32602);
    let v = answer(
        &m,
        r#"{"jsonrpc":"2.0","method":"subtract","params":{"minuend":1},"id":1}"#,
    )
    .await
    .unwrap();
    assert_eq!(v["error"]["data"], r#"parameter "subtrahend" is missing"#);
    let v = answer(&m, r#"{"jsonrpc":"2.0","method":"subtract","id":1}"#)
        .await
        .unwrap();
    assert_eq!(v["error"]["data"], r#"parameter "minuend" is missing"#);
}

#[tokio::test]
async fn empty_batch_is_one_invalid_request() {
    let m = methods();
    let v = answer(&m, " [ ] ").await.unwrap();
    assert!(v.is_object(), "{v}");
    assert_eq!(v["error"]["code"], -32600);
    assert_eq!(v["id"], Value::Null);
}

#[tokio::test(start_paused = true)]
async fn batch_answers_in_request_order() {
    let m = methods();
    let body = r#"[
        {"jsonrpc":"2.0","method":"sleep","params":[30],"id":"slow"},
        {"jsonrpc":"2.0","method":"subtract","params":[5,1],"id":"fast"},
        {"jsonrpc":"2.0","method":"note"},
        1,
        {"jsonrpc":"2.0","method":"nope","id":3}
    ]"#;
    let v = answer(&m, body).await.unwrap();
    let ids: Vec<Value> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].clone())
        .collect();
    assert_eq!(
        ids,
        vec![json!("slow"), json!("fast"), Value::Null, json!(3)]
    );
    assert_eq!(v[0]["result"], 30);
    assert_eq!(v[2]["error"]["code"], -32600);
    assert_eq!(v[3]["error"]["code"], -32601);
}

#[tokio::test(start_paused = true)]
async fn batch_elements_run_concurrently() {
    let m = methods();
    let body = r#"[
        {"jsonrpc":"2.0","method":"sleep","params":[1000],"id":1},
        {"jsonrpc":"2.0","method":"sleep","params":[1000],"id":2},
        {"jsonrpc":"2.0","method":"sleep","params":[1000],"id":3}
    ]"#;
    let start = tokio::time::Instant::now();
    let v = answer(&m, body).await.unwrap();
    assert_eq!(v.as_array().unwrap().len(), 3);
    // With the clock paused, virtual time advances only as far as the sleeps need: concurrent
    // elements take one second, sequential ones would take three.
    assert!(
        start.elapsed() < Duration::from_millis(1500),
        "{:?}",
        start.elapsed()
    );
}

fn sleeps(count: u64, ms: u64) -> String {
    let calls: Vec<String> = (1..=count)
        .map(|id| format!(r#"{{"jsonrpc":"2.0","method":"sleep","params":[{ms}],"id":{id}}}"#))
        .collect();
    format!("[{}]", calls.join(","))
}

#[tokio::test(start_paused = true)]
async fn batch_concurrency_caps_the_elements_running_at_once() {
    // By default a batch of 100 runs all at once: one sleep's time (virtual, the clock paused).
    let m = methods();
    let start = tokio::time::Instant::now();
    let v = answer(&m, &sleeps(100, 100)).await.unwrap();
    assert_eq!(v.as_array().unwrap().len(), 100);
    assert_eq!(start.elapsed(), Duration::from_millis(100));

    // Capped at 2, five elements run in three turns, and are still answered in order.
    let mut m = methods();
    m.batch_concurrency(std::num::NonZeroUsize::new(2).unwrap());
    let start = tokio::time::Instant::now();
    let v = answer(&m, &sleeps(5, 1000)).await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_millis(3000));
    let ids: Vec<i64> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [1, 2, 3, 4, 5]);
}

#[tokio::test]
async fn all_notification_batch_answers_nothing() {
    let m = methods();
    let body = r#"[{"jsonrpc":"2.0","method":"note"},{"jsonrpc":"2.0","method":"subtract","params":[1,1]}]"#;
    assert_eq!(m.handle(body).await, None);
}

#[tokio::test]
async fn refused_and_oversize_batches_are_one_invalid_request() {
    let mut m = methods();
    m.batches(Batches::Refused);
    let v = answer(
        &m,
        r#"[{"jsonrpc":"2.0","method":"subtract","params":[1,1],"id":1}]"#,
    )
    .await
    .unwrap();
    assert_eq!(
        (v["error"]["code"].as_i64(), v["id"].clone()),
        (Some(-32600), Value::Null)
    );

    m.batches(Batches::UpTo(2));
    let call = r#"{"jsonrpc":"2.0","method":"subtract","params":[1,1],"id":1}"#;
    let v = answer(&m, &format!("[{call},{call},{call}]"))
        .await
        .unwrap();
    assert_eq!(v["error"]["code"], -32600);
    let v = answer(&m, &format!("[{call},{call}]")).await.unwrap();
    assert_eq!(v.as_array().map(Vec::len), Some(2));
}

#[tokio::test]
async fn reserved_codes_from_handlers_are_replaced() {
    let m = methods();
    for (code, expected) in [
        (-32700, -32603),
        (-32600, -32603),
        (-32601, -32603),
        (-32768, -32603),
        (-32100, -32603),
        (-32602, -32602),
        (-32603, -32603),
        (-32000, -32000),
        (-32099, -32099),
        (-32769, -32769),
        (1, 1),
    ] {
        let body = format!(r#"{{"jsonrpc":"2.0","method":"fail","params":[{code}],"id":1}}"#);
        assert_eq!(
            error_of(&m, &body).await,
            (expected, json!(1)),
            "code {code}"
        );
    }
}

#[tokio::test]
async fn panics_timeouts_and_unencodable_results_are_internal_errors_reported_to_the_hook() {
    let reasons = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut m = methods();
    m.handler_timeout(Some(Duration::from_millis(50)));
    let sink = Arc::clone(&reasons);
    m.on_error(move |report| {
        sink.lock()
            .unwrap()
            .push((report.method.to_owned(), report.reason.to_owned()))
    });
    for method in ["panic", "unencodable"] {
        let body = format!(r#"{{"jsonrpc":"2.0","method":"{method}","id":1}}"#);
        let v = answer(&m, &body).await.unwrap();
        assert_eq!(
            v["error"],
            json!({"code": -32603, "message": "Internal error"}),
            "{method}"
        );
    }
    let v = answer(
        &m,
        r#"{"jsonrpc":"2.0","method":"sleep","params":[5000],"id":1}"#,
    )
    .await
    .unwrap();
    assert_eq!(v["error"]["code"], -32603);
    let v = answer(
        &m,
        r#"{"jsonrpc":"2.0","method":"fail","params":[-32601],"id":1}"#,
    )
    .await
    .unwrap();
    assert_eq!(v["error"]["code"], -32603);
    let reasons = reasons.lock().unwrap();
    let methods: Vec<&str> = reasons.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(methods, ["panic", "unencodable", "sleep", "fail"]);
    assert!(reasons[0].1.contains("boom"), "{:?}", reasons[0]);
    assert!(reasons[2].1.contains("timed out"), "{:?}", reasons[2]);
}

#[tokio::test]
async fn the_server_keeps_serving_after_a_panic() {
    let m = methods();
    let _ = m
        .handle(r#"{"jsonrpc":"2.0","method":"panic","id":1}"#)
        .await;
    let text = m
        .handle(r#"{"jsonrpc":"2.0","method":"subtract","params":[3,1],"id":2}"#)
        .await;
    assert_eq!(
        text.as_deref(),
        Some(r#"{"jsonrpc":"2.0","result":2,"id":2}"#)
    );
}

#[tokio::test]
async fn echo_keeps_numbers_as_sent() {
    let m = methods();
    let text = m.handle(r#"{"jsonrpc":"2.0","method":"echo","params":[1.50,1e400,12345678901234567890123],"id":1}"#).await;
    assert_eq!(
        text.as_deref(),
        Some(r#"{"jsonrpc":"2.0","result":[1.50,1e400,12345678901234567890123],"id":1}"#)
    );
}

#[tokio::test]
async fn merge_refuses_duplicates_and_fallback_answers_unknown_methods() {
    let mut a = methods();
    let mut b = Methods::new();
    b.register("subtract", &[], |(): (), _| async { Ok::<_, RpcError>(0) })
        .unwrap();
    assert!(a.merge(b).is_err());
    assert!(
        a.register("rpc.x", &[], |(): (), _| async { Ok::<_, RpcError>(0) })
            .is_err()
    );
    assert!(
        a.register("subtract", &[], |(): (), _| async { Ok::<_, RpcError>(0) })
            .is_err()
    );

    let mut c = Methods::new();
    c.register("other", &[], |(): (), _| async {
        Ok::<_, RpcError>("other")
    })
    .unwrap();
    a.merge(c).unwrap();
    a.fallback(|method: String, _params: Params, ctx: Context| async move {
        Ok::<_, RpcError>(format!("{method} via {}", ctx.transport()))
    });
    let text = a
        .handle(r#"{"jsonrpc":"2.0","method":"other","id":1}"#)
        .await;
    assert_eq!(
        text.as_deref(),
        Some(r#"{"jsonrpc":"2.0","result":"other","id":1}"#)
    );
    let text = a.handle(r#"{"jsonrpc":"2.0","method":"zzz","id":1}"#).await;
    assert_eq!(
        text.as_deref(),
        Some(r#"{"jsonrpc":"2.0","result":"zzz via in-process","id":1}"#)
    );
}

#[test]
fn error_codes() {
    assert!(ErrorCode::new(-32601).is_reserved());
    assert!(!ErrorCode::new(-32000).is_reserved());
    assert!(!ErrorCode::INVALID_PARAMS.is_reserved());
}

#[tokio::test]
async fn the_observer_sees_every_request_with_its_outcome() {
    use jrpc_runtime::{Outcome, Transport};
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut m = methods();
    let sink = Arc::clone(&seen);
    m.observe(move |o| {
        assert_eq!(o.transport, Transport::InProcess);
        sink.lock().unwrap().push((
            o.method.to_owned(),
            o.id.map(ToString::to_string),
            o.outcome,
        ));
    });
    for body in [
        r#"{"jsonrpc":"2.0","method":"subtract","params":[2,1],"id":1}"#,
        r#"{"jsonrpc":"2.0","method":"subtract","params":["x"],"id":2}"#,
        r#"{"jsonrpc":"2.0","method":"panic","id":3}"#,
        r#"{"jsonrpc":"2.0","method":"fail","params":[7],"id":"s"}"#,
        r#"{"jsonrpc":"2.0","method":"note"}"#,
        r#"{"jsonrpc":"2.0","method":"nope","id":4}"#,
    ] {
        m.handle(body).await;
    }
    let code = |c| Outcome::Error(ErrorCode::new(c));
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (
                "subtract".to_owned(),
                Some("1".to_owned()),
                Outcome::Success
            ),
            ("subtract".to_owned(), Some("2".to_owned()), code(-32602)),
            ("panic".to_owned(), Some("3".to_owned()), code(-32603)),
            ("fail".to_owned(), Some("\"s\"".to_owned()), code(7)),
            ("note".to_owned(), None, Outcome::Success),
            ("nope".to_owned(), Some("4".to_owned()), code(-32601)),
        ]
    );
}
