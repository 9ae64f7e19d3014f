//! Call layers on stream peers: a `Peer` in both framings (as stdio serves one), and
//! `SocketServer` peers on Unix and TCP sockets, each running the layers for every element of a
//! batch and for a request alone.

use std::time::Duration;

use jrpc_runtime::server::SocketServer;
use jrpc_runtime::{Framing, Methods, Peer, PeerConfig};
use jrpc_tests::bounded;
use jrpc_tests::fixtures::{GUARDED_ANSWER, GUARDED_BATCH, Seen, guarded, guarded_batch_seen};
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt as _, AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, BufReader,
};

/// A request alone for `secret`, and its answer.
const SECRET: &str = r#"{"jsonrpc":"2.0","method":"secret","id":"s"}"#;

fn secret_refused() -> Value {
    json!({"jsonrpc": "2.0", "error": {"code": -32003, "message": "Forbidden", "data": {"method": "secret"}}, "id": "s"})
}

/// Writes `text` as one message in `framing`.
async fn send(io: &mut (impl AsyncWrite + Unpin), framing: Framing, text: &str) {
    let framed = match framing {
        Framing::ContentLength => format!("Content-Length: {}\r\n\r\n{text}", text.len()),
        _ => format!("{text}\n"),
    };
    io.write_all(framed.as_bytes()).await.unwrap();
}

/// Reads one message in `framing`.
async fn recv(io: &mut BufReader<impl AsyncRead + Unpin>, framing: Framing) -> String {
    let mut line = String::new();
    io.read_line(&mut line).await.unwrap();
    if !matches!(framing, Framing::ContentLength) {
        return line.trim_end().to_owned();
    }
    let length: usize = line
        .trim()
        .strip_prefix("Content-Length: ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a Content-Length header: {line:?}"));
    line.clear();
    io.read_line(&mut line).await.unwrap();
    let mut body = vec![0; length];
    io.read_exact(&mut body).await.unwrap();
    String::from_utf8(body).unwrap()
}

/// Sends the guarded batch and the `secret` request on `io`, and checks their answers and what
/// the layer saw.
async fn exchange<I: AsyncRead + AsyncWrite + Unpin>(io: I, framing: Framing, seen: &Seen) {
    let mut io = BufReader::new(io);
    send(io.get_mut(), framing, GUARDED_BATCH).await;
    assert_eq!(recv(&mut io, framing).await, GUARDED_ANSWER);
    send(io.get_mut(), framing, SECRET).await;
    let answer: Value = serde_json::from_str(&recv(&mut io, framing).await).unwrap();
    assert_eq!(answer, secret_refused());
    let mut expected = guarded_batch_seen();
    expected.push(("secret".to_owned(), Some("\"s\"".to_owned())));
    assert_eq!(*seen.lock().unwrap(), expected);
}

#[tokio::test]
async fn a_peer_runs_the_layers_for_each_element_in_both_framings() {
    bounded(async {
        for framing in [Framing::Lines, Framing::ContentLength] {
            let mut methods = Methods::new();
            let seen = guarded(&mut methods);
            let (ours, theirs) = tokio::io::duplex(64 * 1024);
            let (_peer, driver) =
                Peer::connect(theirs, methods, PeerConfig::default().with_framing(framing));
            let driver = tokio::spawn(driver);
            exchange(ours, framing, &seen).await;
            driver.abort();
        }
    })
    .await;
}

#[cfg(unix)]
#[tokio::test]
async fn socket_peers_run_the_layers_for_each_element_over_unix_and_tcp() {
    bounded(async {
        let mut methods = Methods::new();
        let seen = guarded(&mut methods);
        let server = SocketServer::builder(methods)
            .drain_timeout(Duration::ZERO)
            .build()
            .unwrap();

        let path = std::env::temp_dir().join(format!("jrpc-layers-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let unix = tokio::net::UnixListener::bind(&path).unwrap();
        let serving = server.clone();
        tokio::spawn(async move { serving.serve_unix(unix).await });
        let stream = tokio::net::UnixStream::connect(&path).await.unwrap();
        exchange(stream, Framing::Lines, &seen).await;
        let _ = std::fs::remove_file(&path);

        seen.lock().unwrap().clear();
        let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = tcp.local_addr().unwrap();
        let serving = server.clone();
        tokio::spawn(async move { serving.serve_tcp(tcp).await });
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        exchange(stream, Framing::Lines, &seen).await;
        server.shutdown_handle().shutdown().await;
    })
    .await;
}
