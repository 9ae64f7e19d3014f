use super::*;
use crate::dispatch::methods::Element;
use crate::wire::Rejection;

fn table() -> Methods {
    let mut methods = Methods::new();
    methods
        .register(
            "add",
            &["a", "b"],
            |(a, b): (i64, Option<i64>), _| async move { Ok::<_, RpcError>(a + b.unwrap_or(0)) },
        )
        .unwrap();
    methods
        .register("sub", &["a", "b"], |(a, b): (i64, i64), _| async move {
            Ok::<_, RpcError>(a - b)
        })
        .unwrap();
    methods
        .register("boom", &["a"], |(_a,): (i64,), _| async move {
            if true {
                panic!("boom");
            }
            Ok::<_, RpcError>(0)
        })
        .unwrap();
    methods
}

/// Checks that a batch's elements that finish in their first poll, panics included, are answered
/// where they stand, in order with those that wait.
#[tokio::test]
async fn a_batch_answers_what_finishes_at_once_in_order_with_what_waits() {
    let mut methods = table();
    methods
        .register("later", &["a"], |(a,): (i64,), _| async move {
            tokio::task::yield_now().await;
            Ok::<_, RpcError>(a)
        })
        .unwrap();
    let cases = [
        (
            r#"[
                {"jsonrpc":"2.0","method":"later","params":[7],"id":1},
                {"jsonrpc":"2.0","method":"boom","params":[1],"id":2},
                {"jsonrpc":"2.0","method":"add","params":[2,3],"id":3},
                {"jsonrpc":"2.0","method":"add","params":[1]},
                {"jsonrpc":"2.0","method":"later","params":[8],"id":4}
            ]"#,
            concat!(
                r#"[{"jsonrpc":"2.0","result":7,"id":1},"#,
                r#"{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error"},"id":2},"#,
                r#"{"jsonrpc":"2.0","result":5,"id":3},"#,
                r#"{"jsonrpc":"2.0","result":8,"id":4}]"#,
            ),
        ),
        // Answered at once before one that waits, and after it.
        (
            r#"[
                {"jsonrpc":"2.0","method":"add","params":[1,1],"id":0},
                {"jsonrpc":"2.0","method":"later","params":[7],"id":1},
                {"jsonrpc":"2.0","method":"add","params":[2,3],"id":2}
            ]"#,
            concat!(
                r#"[{"jsonrpc":"2.0","result":2,"id":0},"#,
                r#"{"jsonrpc":"2.0","result":7,"id":1},"#,
                r#"{"jsonrpc":"2.0","result":5,"id":2}]"#,
            ),
        ),
    ];
    for (body, expected) in cases {
        assert_eq!(methods.handle(body).await.unwrap(), expected, "{body}");
    }
}

/// Checks that a result half written when it fails (it cannot be encoded, or its `Serialize`
/// panics) is taken back whole: in a batch, whose answers are written into one buffer, the elements
/// around it are answered as they would be alone.
#[tokio::test]
async fn a_result_that_fails_half_written_leaves_nothing_of_itself() {
    /// Writes a member, then panics.
    struct Panics;
    impl Serialize for Panics {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap as _;
            let mut map = serializer.serialize_map(None)?;
            map.serialize_entry("half", &1)?;
            panic!("half way");
        }
    }
    use serde::Serialize;
    let mut methods = table();
    methods
        .register("unencodable", &[], |(): (), _| async move {
            // A map with keys that are not strings has no JSON form.
            Ok::<_, RpcError>(std::collections::BTreeMap::from([((1, 2), 3)]))
        })
        .unwrap()
        .register("panics", &[], |(): (), _| async move {
            Ok::<_, RpcError>(Panics)
        })
        .unwrap();
    let internal = r#"{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error"},"id":"#;
    for method in ["unencodable", "panics"] {
        let call = format!(r#"{{"jsonrpc":"2.0","method":"{method}","id":2}}"#);
        assert_eq!(
            methods.handle(&call).await,
            Some(format!("{internal}2}}")),
            "{method}"
        );
        let notification = format!(r#"{{"jsonrpc":"2.0","method":"{method}"}}"#);
        assert_eq!(methods.handle(&notification).await, None, "{method}");
        let batch = format!(
            r#"[{{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}},{call},{notification},
            {{"jsonrpc":"2.0","method":"add","params":[3,4],"id":3}}]"#
        );
        assert_eq!(
            methods.handle(&batch).await.unwrap(),
            format!(
                r#"[{{"jsonrpc":"2.0","result":3,"id":1}},{internal}2}},{{"jsonrpc":"2.0","result":7,"id":3}}]"#
            ),
            "{method}"
        );
    }
}

/// Checks that a handler's future that panics as it is dropped, once finished, is answered as one
/// that panics in its poll: `-32603`, alone and in a batch, and the table keeps serving.
#[tokio::test]
async fn a_future_that_panics_in_its_drop_is_answered_internal_error() {
    /// Finishes at once, and panics when it is dropped.
    struct Bomb;
    impl Future for Bomb {
        type Output = Result<i64, RpcError>;
        fn poll(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Self::Output> {
            std::task::Poll::Ready(Ok(1))
        }
    }
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("dropped");
        }
    }
    let mut methods = table();
    methods.register("bomb", &[], |(): (), _| Bomb).unwrap();
    let internal = r#"{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error"},"id":2}"#;
    let call = r#"{"jsonrpc":"2.0","method":"bomb","id":2}"#;
    assert_eq!(methods.handle(call).await.as_deref(), Some(internal));
    let batch = format!(
        r#"[{{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}},{call},{{"jsonrpc":"2.0","method":"bomb"}}]"#
    );
    assert_eq!(
        methods.handle(&batch).await.unwrap(),
        format!(r#"[{{"jsonrpc":"2.0","result":3,"id":1}},{internal}]"#)
    );
    let ctx = &methods.inner.in_process;
    let Ok(req) = incoming::parse_request(call) else {
        panic!("a valid request");
    };
    let started = methods.start(req, ctx);
    match methods.run_once(started, ctx) {
        FirstPoll::Answered(answer) => assert_eq!(answer.as_deref(), Some(internal.as_bytes())),
        FirstPoll::Waiting(..) => panic!("it finished in its first poll"),
    }
}

/// Returns the answer as a request read the usual way gets it, never in one pass.
async fn read_as_usual(methods: &Methods, body: &str) -> Option<String> {
    let ctx = &methods.inner.in_process;
    let answer = match incoming::parse_request(body) {
        Ok(req) => methods.dispatch(req, ctx, None).await,
        Err(rejection) => Some(rejection.answer()),
    };
    answer.map(write::text)
}

/// Reading a request with its params in one pass answers every body as reading it the usual
/// way does: the one pass only ever declines.
#[tokio::test]
async fn one_pass_answers_as_the_usual_read() {
    let methods = table();
    let bodies = [
        r#"{"jsonrpc":"2.0","method":"add","params":[2,3],"id":1}"#,
        r#"{"jsonrpc":"2.0","method":"add","params":{"b":3,"a":2,"c":[{}]},"id":"x"}"#,
        r#" { "jsonrpc" : "2.0" , "method" : "add" , "params" : [2] , "id" : 1.0 } "#,
        r#"{"id":12345678901234567890,"jsonrpc":"2.0","method":"add","params":[2,3]}"#,
        r#"{"params":[2,3],"jsonrpc":"2.0","method":"add","id":1}"#,
        r#"{"params":3,"jsonrpc":"2.0","method":"add","id":1}"#,
        r#"{"jsonrpc":"2.0","method":"sub","params":"x","id":1}"#,
        r#"{"jsonrpc":"2.0","method":"sub","params":[3,1],"id":[]}"#,
        r#"{"jsonrpc":"2.0","method":"add","params":[2,3]}"#,
        r#"{"jsonrpc":"2.0","method":"add","id":null}"#,
        r#"{"jsonrpc":"2.0","method":"sub","id":1}"#,
        r#"{"jsonrpc":"2.0","method":"add","params":[1,"x"],"params":[1,2],"id":1}"#,
        r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"params":[1,"x"],"id":1}"#,
        r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1,"id":2}"#,
        r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1,"method":"sub"}"#,
        r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1,"jsonrpc":"2.0"}"#,
        r#"{"jsonrpc":"1.0","method":"add","params":[1,2],"id":1}"#,
        r#"{"jsonrpc":"2\u002e0","method":"add","params":[1,2],"id":1}"#,
        r#"{"jsonrpc":"2.0","method":"a\u0064d","params":[1,2],"id":1}"#,
        r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1,"result":3}"#,
        r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":{}}"#,
        r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":true}"#,
        r#"{"jsonrpc":"2.0","method":"add","params":null,"id":1}"#,
        r#"{"jsonrpc":"2.0","method":"add","params":3,"id":1}"#,
        r#"{"jsonrpc":"2.0","method":"add","params":[1,2,3],"id":1}"#,
        r#"{"jsonrpc":"2.0","method":"add","params":["x"],"id":1}"#,
        r#"{"jsonrpc":"2.0","method":"add","params":{"b":1},"id":1}"#,
        r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1} x"#,
        r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1"#,
        r#"{"x":"\"method\":\"sub\"","jsonrpc":"2.0","method":"add","params":[5,1],"id":1}"#,
        r#"{"jsonrpc":"2.0","x":{"method":"sub"},"method":"add","params":[5,1],"id":1}"#,
        r#"{"jsonrpc":"2.0","method":"nope","params":[1,2],"id":1}"#,
        r#"{"jsonrpc":"2.0","method":"boom","params":[1],"id":1}"#,
        r#"{"jsonrpc":"2.0","method":"boom","params":["x"],"id":1}"#,
        r#"{"jsonrpc":"2.0","method":"add""#,
        r#"{"jsonrpc":"2.0","method":"add"}"#,
        "",
        "1",
    ];
    for body in bodies {
        let usual = read_as_usual(&methods, body).await;
        assert_eq!(methods.handle(body).await, usual, "{body}");
    }
    // And the one pass is what answers a plain call.
    let body = r#"{"jsonrpc":"2.0","method":"add","params":[2,3],"id":1}"#;
    assert!(
        methods
            .start_body(body, &methods.inner.in_process, None)
            .is_some()
    );
    // In a batch too, before or after any other element, alone or not.
    let plain = body;
    for body in bodies {
        for batch in [
            format!("[{plain},{body}]"),
            format!("[{body},{plain}]"),
            format!("[{body}]"),
            format!(" [ {plain} , {body} , {plain} ] "),
        ] {
            let usual = batch_as_usual(&methods, &batch).await;
            assert_eq!(methods.handle(&batch).await, usual, "{batch}");
        }
    }
    let ctx = &methods.inner.in_process;
    let batch = format!("[{plain},{plain}]");
    assert!(methods.batch_in_one_pass(&batch, ctx).await.is_some());
}

/// Requests put together from the parts the compact reader matches, and from parts that
/// break its form, are answered as when they are read the usual way; alone and in batches.
mod compact_or_not {
    use super::*;
    use proptest::prelude::*;

    fn pick(parts: &'static [&'static str]) -> impl Strategy<Value = &'static str> {
        proptest::sample::select(parts)
    }

    /// Mostly what the compact reader takes, now and then what it must leave alone.
    fn mostly(
        good: &'static [&'static str],
        bad: &'static [&'static str],
    ) -> impl Strategy<Value = String> {
        prop_oneof![4 => pick(good), 1 => pick(bad)].prop_map(str::to_owned)
    }

    fn id() -> impl Strategy<Value = String> {
        mostly(
            &[
                "1",
                "0",
                "-7",
                r#""x""#,
                r#""a\"b""#,
                r#""é""#,
                r#""\u00e9""#,
                "1.0",
                "-0",
                "1e3",
                "12345678901234567890",
                "null",
            ],
            &["01", "true", "[]", "{}", r#""x"#, "1 ", "+1", r#""\x""#],
        )
    }

    fn params() -> impl Strategy<Value = String> {
        // Nested as deep as serde_json takes params, and deeper.
        let deep = |n: usize| format!("[{}{}]", "[".repeat(n), "]".repeat(n));
        prop_oneof![
            8 => mostly(
                &[
                    "[2,3]", "[2]", r#"{"a":1,"b":2}"#, r#"{"b":2,"a":1,"c":"}]\"["}"#,
                    "[-0,1e2]", r#"[1,{"x":[]}]"#,
                ],
                &[
                    "[]", r#"[1,"x"]"#, "3", "null", "[1,2,3]", "[2,3]]", r#"["\"]"#,
                    "[2,3", "[2,]", r#"{"a":1,"a":2}"#, "[ 2 , 3 ]", "[2,3}",
                ],
            ),
            1 => (124..130usize).prop_map(deep),
        ]
    }

    fn member() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => params().prop_map(|p| format!(r#","params":{p}"#)),
            4 => id().prop_map(|id| format!(r#","id":{id}"#)),
            1 => pick(&[
                r#","jsonrpc":"2.0""#, r#","x":1"#, r#", "id":1"#, r#","method":"add""#,
                r#","result":1"#, ",", r#","params" :[1]"#,
            ])
            .prop_map(str::to_owned),
        ]
    }

    fn body() -> impl Strategy<Value = String> {
        let start = prop_oneof![
            3 => Just(r#"{"jsonrpc":"2.0","#.to_owned()),
            3 => id().prop_map(|id| format!(r#"{{"jsonrpc":"2.0","id":{id},"#)),
            1 => pick(&[r#" {"jsonrpc":"2.0","#, r#"{"jsonrpc":"1.0","#, r#"{"jsonrpc":"2.0" ,"#])
                .prop_map(str::to_owned),
        ];
        let method = mostly(
            &[
                r#""method":"add""#,
                r#""method":"add""#,
                r#""method":"echo""#,
            ],
            &[
                r#""method":"a\u0064d""#,
                r#""method":"nope""#,
                r#""method":1"#,
            ],
        );
        let end = mostly(&["}", "}", "} "], &["}x", "", "}}", "]"]);
        (
            start,
            method,
            proptest::collection::vec(member(), 0..3),
            end,
        )
            .prop_map(|(start, method, members, end)| {
                format!("{start}{method}{}{end}", members.concat())
            })
    }

    fn table() -> Methods {
        let mut methods = super::table();
        methods
            .register("echo", &["v"], |(v,): (serde_json::Value,), _| async move {
                Ok::<_, RpcError>(v)
            })
            .unwrap();
        methods
    }

    proptest! {
        #[test]
        fn answers_as_the_usual_read(bodies in proptest::collection::vec(body(), 1..4)) {
            let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let methods = table();
            for body in &bodies {
                let usual = rt.block_on(read_as_usual(&methods, body));
                prop_assert_eq!(rt.block_on(methods.handle(body)), usual, "{}", body);
            }
            for batch in [format!("[{}]", bodies.join(",")), format!(" [{}] ", bodies.join(","))] {
                let usual = rt.block_on(batch_as_usual(&methods, &batch));
                prop_assert_eq!(rt.block_on(methods.handle(&batch)), usual, "{}", batch);
            }
        }
    }
}

/// Returns the answer as a batch read the usual way gets it, never in one pass.
async fn batch_as_usual(methods: &Methods, body: &str) -> Option<String> {
    let Some(elements) = incoming::parse_batch(body) else {
        return Some(write::text(Rejection::Unparsable.answer()));
    };
    if elements.is_empty() {
        let err = RpcError::invalid_request();
        return Some(write::text(write::error_bytes(&err, &None::<&Id>)));
    }
    let elements = elements.into_iter().map(Element::from).collect();
    let answer = methods.run_batch(elements, &methods.inner.in_process, None);
    answer.await.map(write::text)
}
