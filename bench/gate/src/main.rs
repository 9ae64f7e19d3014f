//! The instruction gate's binary, run under callgrind by `bench/gate/run` (the servers it
//! calls are binaries of their own: `src/bin/jrpc.rs` and `src/bin/floor.rs`):
//!
//! - `count N CASE jrpc|floor`: one in-process case of the dispatch bench
//!   (`jrpc-runtime/benches/cases/`) N times: `Methods::handle`, or the bare typed serde_json
//!   work that answers the same body;
//! - `client PORT N [PAUSE_US [--token]]`: N calls of `add`, one at a time, on one keep-alive
//!   HTTP/1.1 connection (run natively, not under callgrind), each answer checked, a pause of
//!   PAUSE µs before each; with `--token`, with the bearer token `jrpc-auth` asks for;
//! - `h2client PORT N [PAUSE]`: the same over one HTTP/2 connection with prior knowledge (h2c),
//!   one stream at a time;
//! - `fanclient PORT CONTROL N CONNECTIONS SUBSCRIPTIONS PAUSE_US`: opens CONNECTIONS WebSockets
//!   with SUBSCRIPTIONS `eth_subscribe("newHeads")` each, then N times: a pause, one byte on the
//!   control connection (one header published), and every notification it makes read and
//!   checked, so that the server has parked again before the next.

use std::hint::black_box;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

#[path = "../../../jrpc-runtime/benches/cases/mod.rs"]
mod cases;

#[allow(
    dead_code,
    reason = "the servers' binaries serve: this one has the token and `Result`"
)]
mod serving;

use serving::{Result, TOKEN};

/// The call the client sends, and the answer it expects (the id is written back as sent).
const BODY: &str = r#"{"jsonrpc":"2.0","id":7,"method":"add","params":[7,1]}"#;
const RESULT: &str = r#""result":8"#;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args[..] {
        ["count", n, case, side] => count(n.parse()?, case, side),
        ["client", port, n] => client(port.parse()?, n.parse()?, 0, false),
        ["client", port, n, pause] => client(port.parse()?, n.parse()?, pause.parse()?, false),
        ["client", port, n, pause, "--token"] => {
            client(port.parse()?, n.parse()?, pause.parse()?, true)
        }
        ["h2client", port, n, pause] => h2client(port.parse()?, n.parse()?, pause.parse()?),
        ["fanclient", port, control, n, connections, subscriptions, pause] => fanclient(
            (port.parse()?, control.parse()?),
            n.parse()?,
            (connections.parse()?, subscriptions.parse()?),
            pause.parse()?,
        ),
        _ => Err(
            "usage: jrpc-gate count N CASE jrpc|floor | client PORT N [PAUSE_US [--token]] | h2client PORT N PAUSE_US | fanclient PORT CONTROL N CONNECTIONS SUBSCRIPTIONS PAUSE_US"
                .into(),
        ),
    }
}

/// Runs one side of one in-process case `n` times, after checking both sides answer alike.
fn count(n: usize, case: &str, side: &str) -> Result<()> {
    let (name, body, baseline) = cases::cases()
        .into_iter()
        .find(|(name, _, _)| *name == case)
        .ok_or_else(|| format!("unknown case {case:?}"))?;
    let methods = cases::table(name);
    let rt = tokio::runtime::Builder::new_current_thread().build()?;
    let ours: serde_json::Value =
        serde_json::from_str(&rt.block_on(methods.handle(&body)).ok_or("no answer")?)?;
    let theirs: serde_json::Value = serde_json::from_str(&baseline(&body))?;
    if ours != theirs {
        return Err(format!("{case}: jrpc answers {ours}, the floor {theirs}").into());
    }
    match side {
        "jrpc" => rt.block_on(async {
            for _ in 0..n {
                black_box(methods.handle(black_box(&body)).await);
            }
        }),
        "floor" => {
            for _ in 0..n {
                black_box(baseline(black_box(&body)));
            }
        }
        other => return Err(format!("unknown side {other:?}").into()),
    }
    Ok(())
}

/// Makes `n` calls one at a time on one keep-alive connection (with [`TOKEN`] if `token`),
/// checking each answer.
fn client(port: u16, n: usize, pause_us: u64, token: bool) -> Result<()> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let authorization = if token {
        format!("authorization: Bearer {TOKEN}\r\n")
    } else {
        String::new()
    };
    let request = format!(
        "POST /rpc HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         {authorization}content-length: {}\r\n\r\n{BODY}",
        BODY.len()
    );
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    let mut body = Vec::new();
    for _ in 0..n {
        if pause_us > 0 {
            std::thread::sleep(Duration::from_micros(pause_us));
        }
        stream.write_all(request.as_bytes())?;
        let mut length = None;
        line.clear();
        reader.read_line(&mut line)?;
        if !line.starts_with("HTTP/1.1 200") {
            return Err(format!("status line {line:?}").into());
        }
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                return Err("the server closed the connection".into());
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = Some(value.trim().parse::<usize>()?);
            }
        }
        body.resize(length.ok_or("no content-length")?, 0);
        reader.read_exact(&mut body)?;
        if !std::str::from_utf8(&body)?.contains(RESULT) {
            return Err(format!("answer {:?}", String::from_utf8_lossy(&body)).into());
        }
    }
    Ok(())
}

/// Makes `n` calls one at a time on one HTTP/2 connection with prior knowledge (h2c), checking
/// each answer; on a runtime of one thread, so that the client's own timing varies little.
fn h2client(port: u16, n: usize, pause_us: u64) -> Result<()> {
    use http_body_util::{BodyExt as _, Full};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
        stream.set_nodelay(true)?;
        let io = hyper_util::rt::TokioIo::new(stream);
        let (mut sender, connection) =
            hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), io).await?;
        tokio::spawn(connection);
        let uri: hyper::Uri = format!("http://127.0.0.1:{port}/rpc").parse()?;
        for _ in 0..n {
            if pause_us > 0 {
                // A blocking pause, as the HTTP/1.1 client's: the server parks before each call.
                std::thread::sleep(Duration::from_micros(pause_us));
            }
            let req = hyper::Request::post(uri.clone())
                .header("content-type", "application/json")
                .body(Full::new(bytes::Bytes::from_static(BODY.as_bytes())))?;
            let res = sender.send_request(req).await?;
            if res.status() != hyper::StatusCode::OK {
                return Err(format!("status {}", res.status()).into());
            }
            let body = res.into_body().collect().await?.to_bytes();
            if !std::str::from_utf8(&body)?.contains(RESULT) {
                return Err(format!("answer {:?}", String::from_utf8_lossy(&body)).into());
            }
        }
        Ok(())
    })
}

/// Opens `connections` WebSockets with `subscriptions` subscriptions each, then publishes `n`
/// headers one at a time through the control port, reading and checking every notification of
/// each before the next.
fn fanclient(
    (port, control): (u16, u16),
    n: u64,
    (connections, subscriptions): (usize, usize),
    pause_us: u64,
) -> Result<()> {
    use tungstenite::Message;
    let mut sockets = Vec::with_capacity(connections);
    for _ in 0..connections {
        let stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        let (mut ws, _) = tungstenite::client::client(format!("ws://127.0.0.1:{port}/ws"), stream)
            .map_err(|err| format!("WebSocket handshake: {err}"))?;
        for id in 0..subscriptions {
            ws.send(Message::text(format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"eth_subscribe","params":["newHeads"]}}"#
            )))?;
        }
        for _ in 0..subscriptions {
            let answer = ws.read()?;
            if !answer.to_text()?.contains(r#""result":"0x"#) {
                return Err(format!("eth_subscribe answered {answer}").into());
            }
        }
        sockets.push(ws);
    }
    let mut control = TcpStream::connect(("127.0.0.1", control))?;
    control.set_nodelay(true)?;
    for number in 1..=n {
        if pause_us > 0 {
            std::thread::sleep(Duration::from_micros(pause_us));
        }
        control.write_all(b"p")?;
        let expected = format!(r#""number":"0x{number:x}""#);
        for ws in &mut sockets {
            for _ in 0..subscriptions {
                let message = ws.read()?;
                let text = message.to_text()?;
                if !text.contains(r#""method":"eth_subscription""#) || !text.contains(&expected) {
                    return Err(format!("expected head {number}, read {text}").into());
                }
            }
        }
    }
    Ok(())
}
