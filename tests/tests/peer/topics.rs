//! Topics on a connection that is neither WebSocket nor HTTP: a `Peer` over a byte stream (what
//! stdio and any socket served as a peer are), with the registry in the connection's context.

use jrpc_runtime::server::Topics;
use jrpc_runtime::{Caller as _, Context, Lifetime, Methods, Peer, PeerConfig, Transport};
use jrpc_tests::{bounded, fixtures};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

fn methods() -> Methods {
    let mut methods = Methods::new();
    fixtures::watch(&mut methods);
    methods
}

/// A client connected to a server over an in-memory stream; the server's context carries
/// `topics`. The client's `news` notifications land in the channel; the server's loop is the
/// task returned, which ends once the registry has forgotten the connection (its close hooks run
/// as the loop ends).
fn connect(
    topics: &Topics,
) -> (
    Peer,
    mpsc::UnboundedReceiver<String>,
    JoinHandle<std::io::Result<()>>,
) {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let config = PeerConfig::builder()
        .context(Context::new(Transport::Stream).with_extension(topics.clone()))
        .build()
        .unwrap();
    let (_server, server_loop) = Peer::connect(server_io, methods(), config);
    let server_loop = tokio::spawn(server_loop);
    let mut handlers = Methods::new();
    let rx = fixtures::news(&mut handlers);
    // The client's loop ends with its last handle, closing the stream.
    let client_config = PeerConfig::builder()
        .lifetime(Lifetime::UntilUnused)
        .build()
        .unwrap();
    let (client, client_loop) = Peer::connect(client_io, handlers, client_config);
    tokio::spawn(client_loop);
    (client, rx, server_loop)
}

#[tokio::test]
async fn a_stream_connection_subscribes_and_leaves_when_it_closes() {
    let topics = Topics::new();
    let (a, mut a_news, a_server) = connect(&topics);
    let (b, mut b_news, b_server) = connect(&topics);
    for client in [&a, &b] {
        let added: bool = bounded(client.call("watch", ["news"])).await.unwrap();
        assert!(added);
        let again: bool = bounded(client.call("watch", ["news"])).await.unwrap();
        assert!(!again);
    }
    assert_eq!(topics.subscribers("news"), 2);
    assert_eq!(topics.publish("news", "news", ["first"]).unwrap(), 2);
    assert_eq!(bounded(a_news.recv()).await.as_deref(), Some("first"));
    assert_eq!(bounded(b_news.recv()).await.as_deref(), Some("first"));

    // `b` hangs up: the server's loop sees the end of input and ends, and `b` leaves the topic.
    drop(b);
    bounded(b_server).await.unwrap().unwrap();
    assert_eq!(topics.subscribers("news"), 1);
    assert_eq!(topics.publish("news", "news", ["second"]).unwrap(), 1);
    assert_eq!(bounded(a_news.recv()).await.as_deref(), Some("second"));
    drop(a);
    bounded(a_server).await.unwrap().unwrap();
    assert!(topics.names().is_empty());
}
