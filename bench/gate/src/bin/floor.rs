//! The floor's HTTP server for `bench/gate/run`, alone in a binary of its own: built beside
//! jrpc's server, it was compiled otherwise with every change to jrpc (what the compiler inlines
//! follows all the code a binary holds), and its counts moved with changes it did not have.
//!
//! `floor serve`: hyper 1 and typed serde_json (`bench/src/floor/`), HTTP/1.1 or HTTP/2 by the
//! connection's first bytes, served as `jrpc-gate serve` serves jrpc's.

#[path = "../../../src/floor/answer.rs"]
mod answer;
#[path = "../../../src/floor/http.rs"]
mod floor_http;
#[path = "../serving.rs"]
mod serving;

fn main() -> serving::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args != ["serve"] {
        return Err("usage: floor serve".into());
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
