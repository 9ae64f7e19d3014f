//! Subscriptions over the WebSocket: unsubscribe scoped to the caller's connection, a handler's
//! view of its connection (its number, and `closed()`), and what waits in a lane when its
//! producer ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::StreamExt as _;
use jrpc_runtime::ws::{WsClient, WsServer};
use jrpc_runtime::{Caller as _, Context, Items, Methods, RpcError, Subscriber as _, WhenFull};
use jrpc_tests::fixtures::Alive;
use jrpc_tests::servers::serve_ws;
use jrpc_tests::{bounded, eventually};

/// `subscribe_ticks`: items forever, its producers counted in `alive`; `subscribe_quiet`: no
/// item ever, its producers counted in `alive` too; `me`: the connection's
/// number; `on_close`: counts in `closed` once the caller's connection is gone.
fn methods(alive: &Arc<AtomicUsize>, closed: &Arc<AtomicUsize>) -> Methods {
    let mut methods = Methods::new();
    let (alive, quiet) = (Arc::clone(alive), Arc::clone(alive));
    methods
        .register_subscription(
            "subscribe_ticks",
            &[],
            "tick",
            "unsubscribe_ticks",
            move |(): (), _ctx| {
                let guard = Alive::new(&alive);
                async move {
                    let ticks =
                        futures_util::stream::unfold((0u64, guard), |(n, guard)| async move {
                            tokio::task::yield_now().await;
                            Some((n, (n + 1, guard)))
                        });
                    Ok::<_, RpcError>(Items::new(ticks))
                }
            },
        )
        .unwrap();
    methods
        .register("me", &[], |(): (), ctx: Context| async move {
            Ok::<_, RpcError>(ctx.connection_id())
        })
        .unwrap();
    methods
        .register_subscription(
            "subscribe_quiet",
            &[],
            "quiet",
            "unsubscribe_quiet",
            move |(): (), _ctx| {
                let guard = Alive::new(&quiet);
                async move {
                    let never = futures_util::stream::pending::<u64>().map(move |n| {
                        let _held = &guard;
                        n
                    });
                    Ok::<_, RpcError>(Items::new(never))
                }
            },
        )
        .unwrap();
    let closed = Arc::clone(closed);
    methods
        .register("on_close", &[], move |(): (), ctx: Context| {
            let (closed, gone) = (Arc::clone(&closed), ctx.closed());
            tokio::spawn(async move {
                gone.await;
                closed.fetch_add(1, Ordering::SeqCst);
            });
            async { Ok::<_, RpcError>(()) }
        })
        .unwrap();
    methods
}

/// The caller's connection's number, as its handler sees it.
async fn me(client: &WsClient) -> Option<u64> {
    client.call("me", ()).await.unwrap()
}

async fn client(addr: std::net::SocketAddr) -> WsClient {
    bounded(WsClient::connect(&format!("ws://{addr}/"), Methods::new()))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsubscribe_is_scoped_to_the_callers_connection() {
    let (alive, closed) = (Arc::new(AtomicUsize::new(0)), Arc::default());
    let server = WsServer::builder(methods(&alive, &closed)).build().unwrap();
    let (addr, _) = serve_ws(server).await;
    let (a, b) = (client(addr).await, client(addr).await);
    let mut ticks = bounded(a.subscribe::<u64>("subscribe_ticks", (), "tick", "unsubscribe_ticks"))
        .await
        .unwrap();
    let first = bounded(ticks.next()).await.unwrap().unwrap();
    // Another connection names A's subscription: not its own, so `false`, and A's goes on.
    let theirs: bool = bounded(b.call("unsubscribe_ticks", [ticks.id()]))
        .await
        .unwrap();
    assert!(!theirs);
    let next = bounded(ticks.next()).await.unwrap().unwrap();
    assert!(next > first);
    assert!(bounded(ticks.unsubscribe()).await.unwrap());
    eventually(|| alive.load(Ordering::SeqCst) == 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_knows_its_connection_and_when_it_closes() {
    let (alive, closed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let server = WsServer::builder(methods(&alive, &closed)).build().unwrap();
    let (addr, _) = serve_ws(server).await;
    let (a, b) = (client(addr).await, client(addr).await);
    let (a_id, again, b_id) = (
        bounded(me(&a)).await,
        bounded(me(&a)).await,
        bounded(me(&b)).await,
    );
    assert!(a_id.is_some());
    assert_eq!(a_id, again);
    assert_ne!(a_id, b_id);
    bounded(a.call::<()>("on_close", ())).await.unwrap();
    let ticks = bounded(a.subscribe::<u64>("subscribe_ticks", (), "tick", "unsubscribe_ticks"))
        .await
        .unwrap();
    assert_eq!(closed.load(Ordering::SeqCst), 0);
    // The client goes, its subscription with it (its stream keeps the connection open).
    drop(ticks);
    drop(a);
    eventually(|| closed.load(Ordering::SeqCst) == 1).await;
    eventually(|| alive.load(Ordering::SeqCst) == 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_producer_is_dropped_when_its_client_goes() {
    let (alive, closed) = (Arc::new(AtomicUsize::new(0)), Arc::default());
    let server = WsServer::builder(methods(&alive, &closed)).build().unwrap();
    let (addr, _) = serve_ws(server).await;
    let a = client(addr).await;
    // Called as a plain method, so that no client-side stream unsubscribes when dropped.
    let id: String = bounded(a.call("subscribe_quiet", ())).await.unwrap();
    assert!(id.starts_with("0x"));
    assert_eq!(alive.load(Ordering::SeqCst), 1);
    // No item will ever come to find the connection gone: its end drops the producer.
    drop(a);
    eventually(|| alive.load(Ordering::SeqCst) == 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_waits_in_a_lane_goes_out_after_its_producer_ends() {
    // Together far more than the writer lets out between two flushes (a quarter of the
    // watermark): when the stream ends, most of its items still wait in their lane, and only
    // the room each flush gives back lets them out.
    const ITEMS: u64 = 64;
    let mut methods = Methods::new();
    methods
        .register_subscription(
            "subscribe_big",
            &[],
            "big",
            "unsubscribe_big",
            |(): (), _ctx| async {
                let big = "x".repeat(16 * 1024);
                let items = futures_util::stream::iter(0..ITEMS).map(move |n| (n, big.clone()));
                Ok::<_, RpcError>(
                    Items::new(items)
                        .bound(ITEMS as usize, usize::MAX)
                        .when_full(WhenFull::Wait),
                )
            },
        )
        .unwrap();
    let server = WsServer::builder(methods).build().unwrap();
    let (addr, _) = serve_ws(server).await;
    let a = client(addr).await;
    let mut items =
        bounded(a.subscribe::<(u64, String)>("subscribe_big", (), "big", "unsubscribe_big"))
            .await
            .unwrap();
    for n in 0..ITEMS {
        let (got, _) = bounded(items.next()).await.unwrap().unwrap();
        assert_eq!(got, n);
    }
}
