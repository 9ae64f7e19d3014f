//! A reconnecting `WsClient`: it connects again when its server restarts, its calls go over the
//! new connection, its subscriptions go on on the same stream under a new id; it gives up after
//! its attempts, ending them `Closed`; it backs off as told, with jitter or without (on a paused
//! clock); and without the setting a client closes with its connection, as before.

use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::{FutureExt as _, StreamExt as _, stream};
use jrpc_runtime::subscription::Ended;
use jrpc_runtime::ws::{Reconnect, WsClient, WsServer};
use jrpc_runtime::{
    Caller as _, ClientError, Context, Items, Methods, RpcError, Subscriber as _, Subscription,
};
use jrpc_tests::servers::serve_ws;
use jrpc_tests::{bounded, eventually};
use tokio::net::TcpListener;
use tokio::sync::{Notify, broadcast};
use tokio::task::JoinHandle;

/// An item of `subscribe_ticks`: the serving server's generation, and the number published.
type Tick = (u64, u64);

/// `add`; `generation`: which server answers; `ask`: the generation, and what the caller's
/// `whoami` answers it; `subscribe_ticks`: an item `[generation, n]` for each `n` published on
/// `bus` (each subscription is one of `bus`'s receivers while its producer lives).
fn methods(generation: u64, bus: &broadcast::Sender<u64>) -> Methods {
    let mut methods = Methods::new();
    jrpc_tests::fixtures::add(&mut methods);
    methods
        .register("generation", &[], move |(): (), _| async move {
            Ok::<_, RpcError>(generation)
        })
        .unwrap();
    methods
        .register("ask", &[], move |(): (), ctx: Context| async move {
            let caller = ctx
                .peer()
                .ok_or_else(|| RpcError::new(1, "no connection"))?;
            let name: String = caller
                .call("whoami", ())
                .await
                .map_err(|err| RpcError::new(2, err.to_string()))?;
            Ok::<_, RpcError>(format!("{generation}: {name}"))
        })
        .unwrap();
    let bus = bus.clone();
    methods
        .register_subscription(
            "subscribe_ticks",
            &[],
            "tick",
            "unsubscribe_ticks",
            move |(): (), _ctx| {
                let published = bus.subscribe();
                async move {
                    let ticks = stream::unfold(published, move |mut published| async move {
                        let n = published.recv().await.ok()?;
                        Some(((generation, n), published))
                    });
                    Ok::<_, RpcError>(Items::new(ticks))
                }
            },
        )
        .unwrap();
    methods
}

/// Serves `server` on `addr` (a port a stopped server held), from a task of its own.
async fn serve_at(server: WsServer, addr: SocketAddr) -> JoinHandle<()> {
    // Tokio binds listeners with `SO_REUSEADDR`: the old connections' TIME_WAIT is no obstacle.
    let listener = TcpListener::bind(addr).await.unwrap();
    tokio::spawn(async move { server.serve(listener).await })
}

async fn subscribe(client: &WsClient) -> Subscription<Tick> {
    bounded(client.subscribe("subscribe_ticks", (), "tick", "unsubscribe_ticks"))
        .await
        .unwrap()
}

async fn next(ticks: &mut Subscription<Tick>) -> Tick {
    bounded(ticks.next()).await.unwrap().unwrap()
}

/// A bus nobody has subscribed to yet.
fn bus() -> broadcast::Sender<u64> {
    broadcast::channel(16).0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_gets_the_calls_and_the_subscriptions_again() {
    let (first_bus, second_bus) = (bus(), bus());
    let first = WsServer::builder(methods(1, &first_bus)).build().unwrap();
    let (addr, serving) = serve_ws(first.clone()).await;
    // The client's own handlers, which serve each of its connections.
    let mut handlers = Methods::new();
    handlers
        .register("whoami", &[], |(): (), _| async move {
            Ok::<_, RpcError>("ada")
        })
        .unwrap();
    let client = bounded(
        WsClient::builder(format!("ws://{addr}/"))
            .methods(handlers)
            .reconnect(Some(
                Reconnect::new()
                    .initial_delay(Duration::from_millis(10))
                    .max_delay(Duration::from_millis(50)),
            ))
            .connect(),
    )
    .await
    .unwrap();
    let mut ticks = subscribe(&client).await;
    // Made on the connection's own handle: that connection's only, so it ends with it.
    let peer = client.peer().unwrap();
    let mut pinned: Subscription<Tick> =
        bounded(peer.subscribe("subscribe_ticks", (), "tick", "unsubscribe_ticks"))
            .await
            .unwrap();
    drop(peer);
    assert_eq!(first_bus.receiver_count(), 2);
    first_bus.send(0).unwrap();
    first_bus.send(1).unwrap();
    assert_eq!(next(&mut ticks).await, (1, 0));
    assert_eq!(next(&mut ticks).await, (1, 1));
    assert_eq!(next(&mut pinned).await, (1, 0));
    let first_id = ticks.id();

    let reconnected = client.reconnected();
    bounded(first.shutdown_handle().shutdown()).await;
    bounded(serving).await.unwrap();
    // The client knows its connection is gone, and is not closed: it reconnects.
    eventually(|| client.peer().is_none()).await;
    assert!(!client.is_closed());
    assert_eq!(client.reconnects(), 0);
    // A call made now waits for the next connection rather than fail.
    let mut sum = pin!(client.call::<i64>("add", [1, 2]));
    assert!(sum.as_mut().now_or_never().is_none());

    let second = WsServer::builder(methods(2, &second_bus)).build().unwrap();
    let _serving = serve_at(second, addr).await;
    assert!(bounded(reconnected).await);
    assert_eq!(client.reconnects(), 1);
    assert_eq!(bounded(sum).await.unwrap(), 3);
    let generation: u64 = bounded(client.call("generation", ())).await.unwrap();
    assert_eq!(generation, 2);
    // The new connection serves the client's handlers too.
    let asked: String = bounded(client.call("ask", ())).await.unwrap();
    assert_eq!(asked, "2: ada");

    // Subscribed again (once) when the count went up, under the new server's id.
    assert_eq!(second_bus.receiver_count(), 1);
    assert_ne!(ticks.id(), first_id);
    assert_eq!(ticks.ended(), None);
    // The same stream goes on, with what the new server publishes: nothing twice, nothing else.
    second_bus.send(7).unwrap();
    assert_eq!(next(&mut ticks).await, (2, 7));
    // The connection's own subscription ended with it, after what it had read.
    assert_eq!(next(&mut pinned).await, (1, 1));
    assert!(bounded(pinned.next()).await.is_none());
    assert_eq!(pinned.ended(), Some(Ended::Closed));

    // Dropping the stream unsubscribes on the current connection: the producer goes.
    drop(ticks);
    eventually(|| second_bus.receiver_count() == 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_gives_up_ends_its_subscriptions_closed() {
    let bus = bus();
    let server = WsServer::builder(methods(1, &bus)).build().unwrap();
    // One connection served; the listener stays bound, and then takes the reconnect attempts.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let connecting = WsClient::builder(format!("ws://{addr}/"))
        .reconnect(Some(
            Reconnect::new()
                .initial_delay(Duration::from_millis(1))
                .max_delay(Duration::from_millis(4))
                .max_attempts(Some(3)),
        ))
        .connect();
    let listener = Arc::new(listener);
    let served = tokio::spawn({
        let listener = Arc::clone(&listener);
        async move {
            let (tcp, from) = listener.accept().await.unwrap();
            server.serve_connection(tcp, Some(from)).await;
        }
    });
    let client = bounded(connecting).await.unwrap();
    let mut ticks = subscribe(&client).await;
    bus.send(0).unwrap();
    assert_eq!(next(&mut ticks).await, (1, 0));

    // Each attempt is taken and dropped: its opening handshake fails. The first is held until
    // the test has made a call meanwhile.
    let attempts = Arc::new(AtomicUsize::new(0));
    let (counted, release) = (Arc::clone(&attempts), Arc::new(Notify::new()));
    let released = Arc::clone(&release);
    let reconnected = client.reconnected();
    served.abort();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            if counted.fetch_add(1, Ordering::SeqCst) == 0 {
                released.notified().await;
            }
            drop(tcp);
        }
    });
    eventually(|| attempts.load(Ordering::SeqCst) == 1).await;
    assert!(client.peer().is_none());
    assert!(!client.is_closed());
    let mut sum = pin!(client.call::<i64>("add", [1, 2]));
    assert!(sum.as_mut().now_or_never().is_none());
    release.notify_one();

    // The stream ends once the client gives up, and says why.
    assert!(bounded(ticks.next()).await.is_none());
    assert_eq!(ticks.ended(), Some(Ended::Closed));
    // Each attempt failed only once the listener had taken it: all three are counted.
    assert_eq!(attempts.load(Ordering::SeqCst), 3);
    assert!(!bounded(reconnected).await);
    assert!(client.is_closed());
    assert_eq!(client.reconnects(), 0);
    assert!(client.peer().is_none());
    // The call that waited, and any call since, fail at once.
    assert!(
        matches!(bounded(sum).await, Err(ClientError::Closed { .. })),
        "a waiting call fails when the client gives up"
    );
    assert!(matches!(
        bounded(client.call::<i64>("add", [1, 2])).await,
        Err(ClientError::Closed { .. })
    ));
    assert!(matches!(
        bounded(client.subscribe::<Tick>("subscribe_ticks", (), "tick", "unsubscribe_ticks")).await,
        Err(ClientError::Closed { .. })
    ));
}

#[tokio::test]
async fn the_backoff_doubles_up_to_its_maximum_on_a_paused_clock() {
    // 1 + 2 + 4 + 4 + 4 seconds of waits (and each refused attempt within its 100 ms): five
    // attempts, doubling, capped; four would take 11 s, six 19 s, no cap 31 s.
    let elapsed = until_given_up(backoff().jitter(false)).await;
    assert!(
        elapsed >= Duration::from_secs(15) && elapsed < Duration::from_secs(16),
        "{elapsed:?}"
    );
}

#[tokio::test]
async fn the_jittered_backoff_waits_between_half_its_delays_and_the_whole() {
    // Each of the five waits between half its delay (1, 2, 4, 4, 4 s) and the whole: 7.5 s to
    // 15 s; all five drawn at their whole delay (15 s exactly) is not chance but no jitter.
    let elapsed = until_given_up(backoff()).await;
    assert!(
        elapsed >= Duration::from_millis(7500) && elapsed < Duration::from_secs(15),
        "{elapsed:?}"
    );
}

/// Five attempts, from 1 s doubling up to 4 s.
fn backoff() -> Reconnect {
    Reconnect::new()
        .initial_delay(Duration::from_secs(1))
        .max_delay(Duration::from_secs(4))
        .max_attempts(Some(5))
}

/// Returns how long a client reconnecting by `reconnect` takes to give up on a server gone for
/// good, on a paused clock; a call meanwhile waits within its timeout.
async fn until_given_up(reconnect: Reconnect) -> Duration {
    let server = WsServer::builder(methods(1, &bus())).build().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let connecting = WsClient::builder(format!("ws://{addr}/"))
        .call_timeout(Some(Duration::from_secs(3)))
        .connect_timeout(Duration::from_millis(100))
        .reconnect(Some(reconnect))
        .connect();
    // The listener goes once it has taken the one connection it serves: each attempt is
    // refused.
    let served = tokio::spawn(async move {
        let (tcp, from) = listener.accept().await.unwrap();
        drop(listener);
        server.serve_connection(tcp, Some(from)).await;
    });
    let client = bounded(connecting).await.unwrap();

    tokio::time::pause();
    let start = tokio::time::Instant::now();
    let reconnected = client.reconnected();
    served.abort();
    eventually(|| client.peer().is_none()).await;
    // A call waits for a connection within its timeout, and says so when it passes.
    let waited = bounded(client.call::<i64>("add", [1, 2])).await;
    assert!(
        matches!(waited, Err(ClientError::TimedOut { limit, .. }) if limit == Duration::from_secs(3)),
        "{waited:?}"
    );
    assert!(!bounded(reconnected).await);
    let elapsed = start.elapsed();
    assert!(client.is_closed());
    elapsed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_setting_a_client_closes_with_its_connection() {
    let bus = bus();
    let server = WsServer::builder(methods(1, &bus)).build().unwrap();
    let (addr, serving) = serve_ws(server.clone()).await;
    let client = bounded(WsClient::connect(&format!("ws://{addr}/"), Methods::new()))
        .await
        .unwrap();
    let mut ticks = subscribe(&client).await;
    bus.send(0).unwrap();
    assert_eq!(next(&mut ticks).await, (1, 0));
    let reconnected = client.reconnected();

    bounded(server.shutdown_handle().shutdown()).await;
    bounded(serving).await.unwrap();
    let _serving = serve_at(WsServer::builder(methods(2, &bus)).build().unwrap(), addr).await;
    assert!(bounded(ticks.next()).await.is_none());
    assert_eq!(ticks.ended(), Some(Ended::Closed));
    assert!(!bounded(reconnected).await);
    eventually(|| client.is_closed()).await;
    assert_eq!(client.reconnects(), 0);
    // A server is back on the address, but this client does not go to it.
    assert!(matches!(
        bounded(client.call::<u64>("generation", ())).await,
        Err(ClientError::Closed { .. })
    ));
    assert!(client.peer().is_some_and(|peer| peer.is_closed()));
}
