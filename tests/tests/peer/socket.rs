//! `SocketServer`: two-way peers on Unix sockets in both framings, many at once, calls both ways,
//! the connection cap and a graceful shutdown; the same over TCP; `Client` on `unix:` URLs.
#![cfg(unix)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use jrpc_runtime::server::{Drained, SocketServer};
use jrpc_runtime::{Caller as _, Client, Context, Framing, Methods, PeerConfig, RpcError};
use jrpc_tests::bounded;
use jrpc_tests::fixtures::{self, Gate, add};
use tokio::net::UnixListener;
use tokio::sync::mpsc;

fn methods() -> Methods {
    let mut methods = Methods::new();
    add(&mut methods);
    methods
        .register("whoami", &[], |(): (), ctx: Context| async move {
            Ok::<_, RpcError>(ctx.transport().as_str())
        })
        .unwrap();
    // Calls the client back, then answers with what it said.
    methods
        .register("ask", &[], |(): (), ctx: Context| async move {
            let peer = ctx.peer().ok_or_else(RpcError::internal)?;
            let name: String = peer
                .call("name", ())
                .await
                .map_err(|_| RpcError::internal())?;
            Ok::<_, RpcError>(format!("hello, {name}"))
        })
        .unwrap();
    methods
}

/// A socket path of its own under the temporary folder.
fn socket_path() -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let path = std::env::temp_dir().join(format!(
        "jrpc-{}-{}.sock",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_file(&path);
    path
}

fn client_methods(name: String) -> Methods {
    let mut methods = Methods::new();
    methods
        .register("name", &[], move |(): (), _| {
            let name = name.clone();
            async move { Ok::<_, RpcError>(name) }
        })
        .unwrap();
    methods
}

#[tokio::test]
async fn unix_peers_in_both_framings_concurrently() {
    for framing in [Framing::Lines, Framing::ContentLength] {
        let path = socket_path();
        let server = SocketServer::builder(methods())
            .peer(PeerConfig::default().with_framing(framing))
            .build()
            .unwrap();
        let listener = UnixListener::bind(&path).unwrap();
        let serving = tokio::spawn({
            let server = server.clone();
            async move { server.serve_unix(listener).await }
        });
        let url = format!("unix:{}", path.display());
        bounded(async {
            let clients = (0..8).map(|n| {
                let url = url.clone();
                async move {
                    let client = Client::builder(url)
                        .framing(framing)
                        .methods(client_methods(format!("client {n}")))
                        .connect()
                        .await
                        .unwrap();
                    let who: String = client.call("whoami", ()).await.unwrap();
                    assert_eq!(who, "unix");
                    let sums = (0..16).map(|i| client.call::<i64>("add", [n, i]));
                    let sums = futures_util::future::try_join_all(sums).await.unwrap();
                    assert_eq!(sums, (0..16).map(|i| n + i).collect::<Vec<_>>());
                    let greeting: String = client.call("ask", ()).await.unwrap();
                    assert_eq!(greeting, format!("hello, client {n}"));
                }
            });
            futures_util::future::join_all(clients).await;
        })
        .await;
        assert_eq!(
            bounded(server.shutdown_handle().shutdown()).await,
            Drained::Complete
        );
        bounded(serving).await.unwrap();
        let _ = std::fs::remove_file(&path);
    }
}

#[tokio::test]
async fn a_shutdown_lets_running_calls_finish_then_closes() {
    let path = socket_path();
    let gate = Gate::shared();
    let mut methods = methods();
    fixtures::gate(&mut methods, &gate);
    let server = SocketServer::builder(methods).build().unwrap();
    let listener = UnixListener::bind(&path).unwrap();
    let serving = tokio::spawn({
        let server = server.clone();
        async move { server.serve_unix(listener).await }
    });
    let url = format!("unix:{}", path.display());
    bounded(async {
        let client = Client::connect(&url).await.unwrap();
        let slow = tokio::spawn({
            let client = client.clone();
            async move { client.call::<String>("gate", ()).await }
        });
        // The call is running once the server answers another one after it.
        assert_eq!(client.call::<i64>("add", [1, 1]).await.unwrap(), 2);
        let handle = server.shutdown_handle();
        let drained = tokio::spawn({
            let handle = handle.clone();
            async move { handle.shutdown().await }
        });
        // The gate opens only once the shutdown has begun: the call finishes during the drain.
        handle.shutting_down().await;
        assert!(!slow.is_finished(), "the call is held by its gate");
        gate.release.add_permits(1);
        assert_eq!(
            slow.await.unwrap().unwrap(),
            "through",
            "answered during the drain"
        );
        assert_eq!(drained.await.unwrap(), Drained::Complete);
        serving.await.unwrap();
        // The connection is closed: a call now fails instead of hanging.
        assert!(client.call::<i64>("add", [1, 1]).await.is_err());
        // And nobody accepts any more.
        assert!(Client::connect(&url).await.is_err());
    })
    .await;
    let _ = std::fs::remove_file(&path);
}

#[tokio::test(start_paused = true)]
async fn the_connection_cap_holds_new_clients_back() {
    let path = socket_path();
    let server = SocketServer::builder(methods())
        .max_connections(1)
        .build()
        .unwrap();
    let listener = UnixListener::bind(&path).unwrap();
    let handle = server.shutdown_handle();
    tokio::spawn(async move { server.serve_unix(listener).await });
    let url = format!("unix:{}", path.display());
    bounded(async {
        let first = Client::connect(&url).await.unwrap();
        assert_eq!(first.call::<i64>("add", [1, 1]).await.unwrap(), 2);
        // The second connects (the kernel's backlog), but is not served while the first is open.
        let second = Client::connect(&url).await.unwrap();
        let (tx, mut answered) = mpsc::channel(1);
        tokio::spawn(async move {
            let _ = tx.send(second.call::<i64>("add", [2, 2]).await).await;
        });
        // Virtual time: the 200 ms pass only while every task, the server's included, is idle,
        // so the check does not depend on how fast this machine is.
        assert!(
            tokio::time::timeout(Duration::from_millis(200), answered.recv())
                .await
                .is_err(),
            "served past the cap"
        );
        assert_eq!(handle.connections(), 1, "admitted past the cap");
        drop(first);
        assert_eq!(answered.recv().await.unwrap().unwrap(), 4);
    })
    .await;
    let _ = std::fs::remove_file(&path);
}

#[tokio::test]
async fn tcp_peers_see_their_transport_and_address() {
    let server = SocketServer::builder(methods()).build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { server.serve_tcp(listener).await });
    bounded(async {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (peer, driver) =
            jrpc_runtime::Peer::connect(stream, Methods::new(), PeerConfig::default());
        tokio::spawn(driver);
        let who: String = peer.call("whoami", ()).await.unwrap();
        assert_eq!(who, "tcp");
    })
    .await;
}
