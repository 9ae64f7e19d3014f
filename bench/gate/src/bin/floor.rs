//! The floor's HTTP server for `bench/gate/run`, alone in a binary of its own: built beside
//! jrpc's server, it was compiled otherwise with every change to jrpc (what the compiler inlines
//! follows all the code a binary holds), and its counts moved with changes it did not have.
//!
//! `floor serve`: hyper 1 and typed serde_json (`bench/src/floor/`), HTTP/1.1 or HTTP/2 by the
//! connection's first bytes, served as `jrpc-gate serve` serves jrpc's.
//!
//! `floor serve fanout`: the fan-out benchmark's floor (`bench/src/fanout/floor.rs`):
//! tokio-tungstenite writing each subscription's notification around the header encoded once,
//! a header published for each byte on the control connection.

#[path = "../../../src/floor/answer.rs"]
mod answer;
#[path = "../../../src/fanout/floor.rs"]
mod fanout_floor;
#[path = "../../../src/floor/http.rs"]
mod floor_http;
#[path = "../../../src/fanout/header.rs"]
#[allow(
    dead_code,
    reason = "the header's fields are the benchmark's client's to read"
)]
mod header;
#[path = "../serving.rs"]
mod serving;

fn main() -> serving::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args[..] {
        ["serve"] => {}
        ["serve", "fanout"] => return fanout(),
        _ => return Err("usage: floor serve [fanout]".into()),
    }
    serving::serve_until_stdin_closes(|listener| {
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                tokio::spawn(async move {
                    // HTTP/2 by its preface, as the floor of bench/ tells it.
                    let mut first = [0u8; 4];
                    let h2 = matches!(stream.peek(&mut first).await, Ok(4)) && &first == b"PRI ";
                    floor_http::serve_http(stream, h2).await
                });
            }
        });
        Ok(())
    })
}

/// Serves the fan-out floor, publishing a header for each byte on the control connection.
fn fanout() -> serving::Result<()> {
    serving::serve_publishing_until_stdin_closes(|listener| {
        let heads = fanout_floor::Heads::default();
        tokio::spawn(fanout_floor::serve(listener, heads.clone()));
        let mut number = 0;
        Ok(Some(Box::new(move || {
            number += 1;
            heads.publish(&header::Header::new(number, 0));
        })))
    })
}
