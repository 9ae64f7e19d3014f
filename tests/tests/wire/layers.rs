//! Call layers in process: each call and each batch element through them, refusals, extensions
//! for the handler, wrapped futures (tower's timeout, concurrency limit and load shedding), the
//! outcome seen on the way out, the order of composition, how a layer's errors are answered, and
//! the provided rate and in-flight limits on Tokio's paused clock.

use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::poll;
use jrpc_runtime::layers::{Authorize, InFlightLimit, RateLimit};
use jrpc_runtime::{
    Answer, BoxError, Call, CallService, Context, ErrorCode, Methods, Outcome, RpcError,
};
use jrpc_tests::fixtures::{GUARDED_ANSWER, GUARDED_BATCH, guarded, guarded_batch_seen};
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tower::{Layer, Service, ServiceBuilder, ServiceExt as _};

/// `add`, `fail` (error 7), `panic`, `sleep` (sleeps its `ms`), `hold` (waits for a permit of the
/// semaphore), and `user` (the `User` a layer put in the context).
fn table(held: &Arc<Semaphore>) -> Methods {
    let mut methods = Methods::new();
    jrpc_tests::fixtures::add(&mut methods);
    methods
        .register("fail", &[], |(): (), _| async {
            Err::<(), _>(RpcError::new(7, "seven"))
        })
        .unwrap();
    methods
        .register("panic", &[], |(): (), _| async {
            if true {
                panic!("boom");
            }
            Ok::<(), RpcError>(())
        })
        .unwrap();
    jrpc_tests::fixtures::sleep(&mut methods);
    let held = Arc::clone(held);
    methods
        .register("hold", &[], move |(): (), _| {
            let held = Arc::clone(&held);
            async move {
                held.acquire().await.unwrap().forget();
                Ok::<_, RpcError>("released")
            }
        })
        .unwrap();
    methods
        .register("user", &[], |(): (), ctx: Context| async move {
            Ok::<_, RpcError>(ctx.extension::<User>().map(|user| user.0))
        })
        .unwrap();
    methods
}

#[derive(Clone)]
struct User(&'static str);

fn call(method: &str, params: Value, id: u64) -> String {
    json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id}).to_string()
}

async fn answer(methods: &Methods, body: &str) -> Value {
    let text = methods.handle(body).await.expect("an answer");
    serde_json::from_str(&text).unwrap()
}

/// The error code of an answer.
fn code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {answer}"))
}

/// A layer made of a function of the call and the service inside.
fn around<F, Fut>(
    f: F,
) -> impl Layer<
    CallService,
    Service: Service<Call, Response = Answer, Error = BoxError, Future: Send>
                 + Clone
                 + Send
                 + Sync
                 + 'static,
>
where
    F: Fn(Call, CallService) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Answer, BoxError>> + Send + 'static,
{
    tower::layer::layer_fn(move |inner: CallService| {
        let f = f.clone();
        tower::service_fn(move |call: Call| f(call, inner.clone()))
    })
}

#[tokio::test]
async fn a_layer_sees_each_element_of_a_batch_and_refuses_each_on_its_own() {
    let mut methods = Methods::new();
    let seen = guarded(&mut methods);
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&outcomes);
    methods.observe(move |o| sink.lock().unwrap().push((o.method.to_owned(), o.outcome)));
    assert_eq!(
        methods.handle(GUARDED_BATCH).await.as_deref(),
        Some(GUARDED_ANSWER)
    );
    assert_eq!(*seen.lock().unwrap(), guarded_batch_seen());
    let forbidden = ("secret".to_owned(), Outcome::Error(ErrorCode::FORBIDDEN));
    assert!(outcomes.lock().unwrap().contains(&forbidden));

    // One request, and a notification: seen alike, the notification never answered.
    seen.lock().unwrap().clear();
    let refused = answer(&methods, &call("secret", json!([]), 9)).await;
    assert_eq!(refused["error"]["data"], json!({"method": "secret"}));
    let note = r#"{"jsonrpc":"2.0","method":"secret"}"#;
    assert_eq!(methods.handle(note).await, None);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            ("secret".to_owned(), Some("9".to_owned())),
            ("secret".to_owned(), None)
        ]
    );
}

#[tokio::test]
async fn a_layer_adds_an_extension_the_handler_reads() {
    let mut methods = table(&Arc::new(Semaphore::new(0)));
    methods.layer(around(|mut call: Call, inner: CallService| {
        call.insert_extension(User("ada"));
        inner.oneshot(call)
    }));
    let answered = answer(&methods, &call("user", json!([]), 1)).await;
    assert_eq!(answered["result"], "ada");
}

#[tokio::test]
async fn a_layer_sees_what_each_call_ended_with() {
    let mut methods = table(&Arc::new(Semaphore::new(0)));
    let ended = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&ended);
    methods.layer(around(move |call: Call, inner: CallService| {
        let sink = Arc::clone(&sink);
        async move {
            let method = call.method().to_owned();
            let answer = inner.oneshot(call).await?;
            let seen = match answer.as_error() {
                Some(err) => format!("{method}: error {}", err.code().code()),
                None => format!("{method}: {}", answer.result_json().unwrap()),
            };
            sink.lock().unwrap().push(seen);
            Ok(answer)
        }
    }));
    let batch = format!(
        "[{},{},{},{},{}]",
        call("add", json!([2, 3]), 1),
        call("fail", json!([]), 2),
        call("panic", json!([]), 3),
        call("nope", json!([]), 4),
        call("add", json!(["x"]), 5),
    );
    let answers = answer(&methods, &batch).await;
    assert_eq!(answers[0]["result"], 5);
    assert_eq!(
        (1..5).map(|at| code(&answers[at])).collect::<Vec<_>>(),
        [7, -32603, -32601, -32602]
    );
    assert_eq!(
        *ended.lock().unwrap(),
        [
            "add: 5",
            "fail: error 7",
            "panic: error -32603",
            "nope: error -32601",
            "add: error -32602"
        ]
    );
}

/// A layer that notes its name in the log on the way in and on the way out.
#[derive(Clone)]
struct Noting {
    name: &'static str,
    log: Arc<Mutex<Vec<String>>>,
}

fn noting(name: &'static str, log: &Arc<Mutex<Vec<String>>>) -> Noting {
    Noting {
        name,
        log: Arc::clone(log),
    }
}

impl<S> Layer<S> for Noting {
    type Service = Noted<S>;

    fn layer(&self, inner: S) -> Noted<S> {
        Noted {
            inner,
            noting: self.clone(),
        }
    }
}

#[derive(Clone)]
struct Noted<S> {
    inner: S,
    noting: Noting,
}

impl<S> Service<Call> for Noted<S>
where
    S: Service<Call, Response = Answer, Error = BoxError>,
    S::Future: Send + 'static,
{
    type Response = Answer;
    type Error = BoxError;
    type Future = jrpc_runtime::BoxFuture<'static, Result<Answer, BoxError>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: Call) -> Self::Future {
        let Noting { name, log } = self.noting.clone();
        log.lock().unwrap().push(format!("{name} in"));
        let answering = self.inner.call(call);
        Box::pin(async move {
            let answer = answering.await;
            log.lock().unwrap().push(format!("{name} out"));
            answer
        })
    }
}

#[tokio::test]
async fn the_layer_added_last_runs_first_and_a_builder_stack_runs_in_its_order() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut methods = table(&Arc::new(Semaphore::new(0)));
    methods
        .layer(noting("first added", &log))
        .layer(
            ServiceBuilder::new()
                .layer(noting("stack top", &log))
                .layer(noting("stack bottom", &log)),
        )
        .layer(noting("last added", &log));
    assert_eq!(
        answer(&methods, &call("add", json!([1, 1]), 1)).await["result"],
        2
    );
    assert_eq!(
        *log.lock().unwrap(),
        [
            "last added in",
            "stack top in",
            "stack bottom in",
            "first added in",
            "first added out",
            "stack bottom out",
            "stack top out",
            "last added out",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_timeout_layer_answers_as_the_handler_timeout_does() {
    let mut methods = table(&Arc::new(Semaphore::new(0)));
    let reasons = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&reasons);
    methods.on_error(move |report| sink.lock().unwrap().push(report.reason.to_owned()));
    methods.layer(tower::timeout::TimeoutLayer::new(Duration::from_secs(1)));
    let batch = format!(
        "[{},{}]",
        call("sleep", json!([500]), 1),
        call("sleep", json!([5000]), 2)
    );
    let answers = answer(&methods, &batch).await;
    assert_eq!(answers[0]["result"], 500);
    assert_eq!(code(&answers[1]), -32603);
    assert_eq!(*reasons.lock().unwrap(), ["a layer's timeout elapsed"]);
}

#[tokio::test]
async fn a_concurrency_limit_layer_holds_a_call_until_another_ends() {
    let held = Arc::new(Semaphore::new(0));
    let mut methods = table(&held);
    methods.layer(tower::limit::ConcurrencyLimitLayer::new(1));
    let hold = call("hold", json!([]), 1);
    let add = call("add", json!([1, 2]), 2);
    let mut holding = pin!(methods.handle(&hold));
    let mut adding = pin!(methods.handle(&add));
    assert!(poll!(holding.as_mut()).is_pending());
    // The one permit is the held call's: `add` waits for it, its handler not yet run.
    assert!(poll!(adding.as_mut()).is_pending());
    held.add_permits(1);
    assert!(holding.await.unwrap().contains("released"));
    assert_eq!(
        adding.await.as_deref(),
        Some(r#"{"jsonrpc":"2.0","result":3,"id":2}"#)
    );
}

#[tokio::test]
async fn load_shedding_is_answered_busy() {
    let held = Arc::new(Semaphore::new(0));
    let mut methods = table(&held);
    methods.layer(ServiceBuilder::new().load_shed().concurrency_limit(1));
    let hold = call("hold", json!([]), 1);
    let mut holding = pin!(methods.handle(&hold));
    assert!(poll!(holding.as_mut()).is_pending());
    let busy = answer(&methods, &call("add", json!([1, 2]), 2)).await;
    assert_eq!(code(&busy), -32000);
    assert_eq!(busy["error"]["message"], "Server busy");
    held.add_permits(1);
    assert!(holding.await.unwrap().contains("released"));
}

#[tokio::test]
async fn a_layers_errors_are_answered_by_their_type() {
    let mut methods = table(&Arc::new(Semaphore::new(0)));
    let reasons = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&reasons);
    methods.on_error(move |report| sink.lock().unwrap().push(report.reason.to_owned()));
    methods.layer(around(|call: Call, inner: CallService| async move {
        match call.method() {
            "rpc_error" => Err(RpcError::new(5, "five").into()),
            "io_error" => Err(std::io::Error::other("disk on fire").into()),
            // A layer may answer any code, protocol codes included (a handler may not).
            "hidden" => Ok(Answer::error(RpcError::method_not_found())),
            "cached" => Ok(Answer::result(&json!({"from": "cache"}))?),
            _ => inner.oneshot(call).await,
        }
    }));
    let body = |method| call(method, json!([]), 1);
    assert_eq!(code(&answer(&methods, &body("rpc_error")).await), 5);
    assert_eq!(code(&answer(&methods, &body("io_error")).await), -32603);
    assert_eq!(
        *reasons.lock().unwrap(),
        ["a layer failed the call: disk on fire"]
    );
    assert_eq!(code(&answer(&methods, &body("hidden")).await), -32601);
    assert_eq!(
        answer(&methods, &body("cached")).await["result"],
        json!({"from": "cache"})
    );
}

#[tokio::test(start_paused = true)]
async fn the_handler_timeout_bounds_a_call_waiting_in_a_layer() {
    let mut methods = table(&Arc::new(Semaphore::new(0)));
    methods.handler_timeout(Some(Duration::from_secs(1)));
    // The limit's one permit is the test's: every call waits for it.
    let permits = Arc::new(Semaphore::new(1));
    let _taken = Arc::clone(&permits).acquire_owned().await.unwrap();
    methods.layer(tower::limit::GlobalConcurrencyLimitLayer::with_semaphore(
        permits,
    ));
    let start = tokio::time::Instant::now();
    let answered = answer(&methods, &call("add", json!([1, 2]), 1)).await;
    assert_eq!(code(&answered), -32603);
    assert_eq!(start.elapsed(), Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn a_rate_limit_refuses_past_its_rate_and_takes_calls_again_as_it_refills() {
    let mut methods = table(&Arc::new(Semaphore::new(0)));
    methods.layer(RateLimit::new(2, Duration::from_secs(1)).per_method());
    let batch = format!(
        "[{},{},{},{}]",
        call("add", json!([1, 1]), 1),
        call("add", json!([1, 2]), 2),
        call("add", json!([1, 3]), 3),
        call("user", json!([]), 4),
    );
    let answers = answer(&methods, &batch).await;
    assert_eq!(
        (&answers[0]["result"], &answers[1]["result"]),
        (&json!(2), &json!(3))
    );
    assert_eq!(answers[2]["error"]["message"], "Rate limited");
    assert_eq!(
        answers[2]["error"]["data"],
        json!({"limit": "rate", "per": "method", "retry_after_ms": 500})
    );
    assert!(answers[3]["error"].is_null(), "another key: {}", answers[3]);

    tokio::time::advance(Duration::from_millis(499)).await;
    assert_eq!(
        code(&answer(&methods, &call("add", json!([0, 0]), 5)).await),
        -32000
    );
    tokio::time::advance(Duration::from_millis(1)).await;
    assert_eq!(
        answer(&methods, &call("add", json!([0, 0]), 6)).await["result"],
        0
    );
}

#[tokio::test(start_paused = true)]
async fn a_rate_limit_keeps_at_most_its_keys() {
    let mut methods = table(&Arc::new(Semaphore::new(0)));
    methods.layer(
        RateLimit::new(1, Duration::from_secs(60))
            .per_method()
            .max_keys(1),
    );
    let add = || call("add", json!([1, 1]), 1);
    assert_eq!(answer(&methods, &add()).await["result"], 2);
    assert_eq!(code(&answer(&methods, &add()).await), -32000);
    // A second key takes the one place: `add`'s bucket is forgotten, and full again.
    assert_eq!(
        answer(&methods, &call("user", json!([]), 2)).await["result"],
        Value::Null
    );
    assert_eq!(answer(&methods, &add()).await["result"], 2);
}

#[tokio::test]
async fn an_in_flight_limit_refuses_past_its_count_until_a_call_ends_or_is_dropped() {
    let held = Arc::new(Semaphore::new(0));
    let mut methods = table(&held);
    methods.layer(InFlightLimit::new(1).per_method());
    let hold = call("hold", json!([]), 1);
    let mut holding = pin!(methods.handle(&hold));
    assert!(poll!(holding.as_mut()).is_pending());
    let busy = answer(&methods, &call("hold", json!([]), 2)).await;
    assert_eq!(
        busy["error"],
        json!({"code": -32000, "message": "Server busy", "data": {"limit": "in_flight", "per": "method", "max": 1}})
    );
    assert_eq!(
        answer(&methods, &call("add", json!([1, 2]), 3)).await["result"],
        3
    );
    held.add_permits(1);
    assert!(holding.await.unwrap().contains("released"));

    // A call given up (its future dropped) counts out too.
    let given_up = call("hold", json!([]), 4);
    {
        let mut dropped = pin!(methods.handle(&given_up));
        assert!(poll!(dropped.as_mut()).is_pending());
    }
    let mut again = pin!(methods.handle(&given_up));
    assert!(poll!(again.as_mut()).is_pending(), "admitted, and holding");
    held.add_permits(1);
    assert!(again.await.unwrap().contains("released"));
}

#[tokio::test]
async fn authorize_reads_the_identity_in_the_context() {
    #[derive(Clone)]
    enum Access {
        Full,
        Read,
    }
    let mut methods = table(&Arc::new(Semaphore::new(0)));
    methods.layer(Authorize::new(|method, ctx: &Context| {
        match ctx.extension::<Access>() {
            Some(Access::Full) => true,
            Some(Access::Read) => method != "fail",
            None => false,
        }
    }));
    let body = format!(
        "[{},{}]",
        call("add", json!([1, 2]), 1),
        call("fail", json!([]), 2)
    );
    let as_ = |access: Option<Access>| {
        let ctx = Context::new(jrpc_runtime::Transport::Http);
        match access {
            Some(access) => ctx.with_extension(access),
            None => ctx,
        }
    };
    let codes = async |ctx: Context| {
        let text = methods.handle_in(&body, &ctx).await.unwrap();
        let answers: Value = serde_json::from_str(&text).unwrap();
        [0, 1].map(|at| answers[at]["error"]["code"].as_i64())
    };
    assert_eq!(codes(as_(Some(Access::Full))).await, [None, Some(7)]);
    assert_eq!(codes(as_(Some(Access::Read))).await, [None, Some(-32003)]);
    assert_eq!(codes(as_(None)).await, [Some(-32003), Some(-32003)]);
}
