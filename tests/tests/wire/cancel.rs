//! Cancellation in process: a caller that drops its call (alone or in a batch) drops the handler,
//! resolves its context's `cancelled()` and is observed `cancelled`; so does a handler timeout
//! (observed as the `-32603` it is answered). Through call layers too: a layer's future is dropped
//! with the handler's, and the context a layer gets shares the request's cancellation and trace.

use std::time::Duration;

use jrpc_runtime::{
    Call, CallService, Caller as _, Context, ErrorCode, Methods, Outcome, TraceContext, Transport,
};
use jrpc_tests::cancel::{Dropped, hang};
use tokio::sync::mpsc;
use tower::{Service, ServiceExt as _};

/// What a [`watching`] layer saw of a call.
struct Seen {
    /// The call's trace, as the layer's context had it.
    trace: Option<TraceContext>,
}

/// A layer that reports each call it sees, hands its context's `cancelled()` to a task that
/// reports when it resolves, and holds a guard reporting its own future's drop.
#[allow(clippy::type_complexity)]
fn watching(
    methods: &mut Methods,
) -> (
    mpsc::UnboundedReceiver<Seen>,
    mpsc::UnboundedReceiver<()>,
    mpsc::UnboundedReceiver<()>,
) {
    let (seen_tx, seen) = mpsc::unbounded_channel();
    let (dropped_tx, dropped) = mpsc::unbounded_channel();
    let (cancelled_tx, cancelled) = mpsc::unbounded_channel();
    methods.layer(tower::layer::layer_fn(move |inner: CallService| {
        let (seen_tx, dropped_tx, cancelled_tx) =
            (seen_tx.clone(), dropped_tx.clone(), cancelled_tx.clone());
        tower::service_fn(move |call: Call| {
            let (mut inner, seen_tx) = (inner.clone(), seen_tx.clone());
            let (dropped_tx, cancelled_tx) = (dropped_tx.clone(), cancelled_tx.clone());
            async move {
                let stop = call.context().cancelled();
                tokio::spawn(async move {
                    stop.await;
                    let _ = cancelled_tx.send(());
                });
                let _ = seen_tx.send(Seen {
                    trace: call.context().trace().cloned(),
                });
                let _guard = Dropped(dropped_tx);
                inner.ready().await?;
                inner.call(call).await
            }
        })
    }));
    (seen, dropped, cancelled)
}

#[tokio::test]
async fn a_dropped_call_drops_its_handler() {
    let mut methods = Methods::new();
    let mut hang = hang(&mut methods);
    let mut call = Box::pin(methods.call::<()>("hang", ()));
    hang.started_while(&mut call).await;
    drop(call);
    hang.cancelled().await;
}

#[tokio::test]
async fn a_dropped_batch_drops_each_handler_that_waits() {
    let mut methods = Methods::new();
    let mut hang = hang(&mut methods);
    jrpc_tests::fixtures::add(&mut methods);
    let body = r#"[{"jsonrpc":"2.0","method":"hang","id":1},{"jsonrpc":"2.0","method":"add","params":[1,2],"id":2},{"jsonrpc":"2.0","method":"hang","id":3}]"#;
    let mut answer = Box::pin(methods.handle(body));
    for _ in 0..2 {
        hang.started_while(&mut answer).await;
    }
    drop(answer);
    hang.cancelled().await;
    hang.cancelled().await;
    assert_eq!(hang.cancelled_count(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_handler_timeout_drops_the_handler_as_cancelled() {
    let mut methods = Methods::new();
    let mut hang = hang(&mut methods);
    methods.handler_timeout(Some(Duration::from_secs(1)));
    let answer = methods
        .handle(r#"{"jsonrpc":"2.0","method":"hang","id":1}"#)
        .await
        .unwrap();
    assert!(answer.contains("-32603"), "{answer}");
    hang.started().await;
    hang.dropped().await;
    assert_eq!(
        hang.cancelled_count(),
        0,
        "a timeout is observed as its error"
    );
}

#[tokio::test]
async fn a_dropped_call_drops_the_layers_around_its_handler() {
    let mut methods = Methods::new();
    let mut hang = hang(&mut methods);
    let (mut seen, mut dropped, mut cancelled) = watching(&mut methods);
    let mut call = Box::pin(methods.call::<()>("hang", ()));
    hang.started_while(&mut call).await;
    assert!(seen.try_recv().is_ok(), "the layer saw the call");
    drop(call);
    hang.cancelled().await;
    jrpc_tests::bounded(dropped.recv()).await.unwrap();
    // The layer's own context (a clone of the handler's) resolved its `cancelled()` too.
    jrpc_tests::bounded(cancelled.recv()).await.unwrap();
}

#[tokio::test]
async fn a_dropped_batch_drops_the_layers_of_each_element_that_waits() {
    let mut methods = Methods::new();
    let mut hang = hang(&mut methods);
    jrpc_tests::fixtures::add(&mut methods);
    let (_seen, mut dropped, mut cancelled) = watching(&mut methods);
    let body = r#"[{"jsonrpc":"2.0","method":"hang","id":1},{"jsonrpc":"2.0","method":"add","params":[1,2],"id":2},{"jsonrpc":"2.0","method":"hang","id":3}]"#;
    let mut answer = Box::pin(methods.handle(body));
    for _ in 0..2 {
        hang.started_while(&mut answer).await;
    }
    // `add` finished: its layer's future is gone, not cancelled.
    jrpc_tests::bounded(dropped.recv()).await.unwrap();
    assert!(cancelled.try_recv().is_err());
    drop(answer);
    hang.cancelled().await;
    hang.cancelled().await;
    for _ in 0..2 {
        jrpc_tests::bounded(dropped.recv()).await.unwrap();
        jrpc_tests::bounded(cancelled.recv()).await.unwrap();
    }
    assert_eq!(hang.cancelled_count(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_handler_timeout_under_layers_cancels_the_handler() {
    let mut methods = Methods::new();
    let mut hang = hang(&mut methods);
    let (_seen, _dropped, _cancelled) = watching(&mut methods);
    methods.handler_timeout(Some(Duration::from_secs(1)));
    let answer = methods
        .handle(r#"{"jsonrpc":"2.0","method":"hang","id":1}"#)
        .await
        .unwrap();
    assert!(answer.contains("-32603"), "{answer}");
    hang.started().await;
    hang.dropped().await;
}

#[tokio::test]
async fn a_cancelled_call_gives_back_its_in_flight_permit() {
    let mut methods = Methods::new();
    let mut hang = hang(&mut methods);
    methods.layer(jrpc_runtime::layers::InFlightLimit::new(1).per_method());
    let mut call = Box::pin(methods.call::<()>("hang", ()));
    hang.started_while(&mut call).await;
    // The limit is taken: a second call is refused at once.
    let busy = methods
        .handle(r#"{"jsonrpc":"2.0","method":"hang","id":2}"#)
        .await
        .unwrap();
    assert!(busy.contains("-32000"), "{busy}");
    drop(call);
    hang.cancelled().await;
    let mut again = Box::pin(methods.call::<()>("hang", ()));
    hang.started_while(&mut again).await;
}

#[tokio::test]
async fn a_layer_sees_the_trace_of_its_call() {
    let mut methods = Methods::new();
    jrpc_tests::fixtures::add(&mut methods);
    let (mut seen, _dropped, _cancelled) = watching(&mut methods);
    let trace = TraceContext::parse(
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        None,
    )
    .unwrap();
    let ctx = Context::new(Transport::InProcess).with_trace(trace.clone());
    let answer = methods
        .handle_in(
            r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}"#,
            &ctx,
        )
        .await
        .unwrap();
    assert!(answer.contains(r#""result":3"#), "{answer}");
    let seen = seen.try_recv().unwrap();
    assert_eq!(
        seen.trace.map(|t| t.traceparent()),
        Some(trace.traceparent())
    );
}

#[tokio::test]
async fn an_in_process_call_from_a_traced_handler_carries_its_trace() {
    let mut downstream = Methods::new();
    jrpc_tests::fixtures::add(&mut downstream);
    let (mut seen, _dropped, _cancelled) = watching(&mut downstream);
    let mut edge = Methods::new();
    edge.register("relay", &[], move |(): (), _ctx: Context| {
        let downstream = downstream.clone();
        async move {
            let sum = downstream.call::<i64>("add", (1, 2)).await;
            sum.map_err(|_| jrpc_runtime::RpcError::internal())
        }
    })
    .unwrap();
    let trace = TraceContext::parse(
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        None,
    )
    .unwrap();
    let ctx = Context::new(Transport::InProcess).with_trace(trace.clone());
    let answer = edge
        .handle_in(r#"{"jsonrpc":"2.0","method":"relay","id":1}"#, &ctx)
        .await
        .unwrap();
    assert!(answer.contains(r#""result":3"#), "{answer}");
    let called = seen
        .try_recv()
        .unwrap()
        .trace
        .expect("the downstream call's trace");
    assert_eq!(called.trace_id(), trace.trace_id());
    assert_ne!(called.parent_id(), trace.parent_id(), "a span of its own");

    // Outside a traced request, the call carries none.
    let _: i64 = edge.call("relay", ()).await.unwrap();
    assert_eq!(seen.try_recv().unwrap().trace, None);
}

#[tokio::test]
async fn a_context_no_request_owns_is_never_cancelled() {
    let ctx = Context::new(Transport::InProcess);
    let mut cancelled = Box::pin(ctx.cancelled());
    assert!(futures_util::poll!(&mut cancelled).is_pending());
    drop(ctx);
    assert!(futures_util::poll!(&mut cancelled).is_pending());
}

#[test]
fn cancelled_shows_in_the_outcome() {
    assert_eq!(Outcome::Cancelled.to_string(), "cancelled");
    assert_ne!(
        Outcome::Cancelled,
        Outcome::Error(ErrorCode::INTERNAL_ERROR)
    );
}
