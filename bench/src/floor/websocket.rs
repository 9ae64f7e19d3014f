//! The floor's WebSocket: one task per connection reads a text frame, answers it and queues the
//! answer; the queue is flushed when no more frames are ready, so the answers to frames that
//! arrived together leave in one write (as a framework's writer would send them).

use futures_util::{FutureExt as _, SinkExt as _, StreamExt as _};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use jrpc_bench::BoxError;

use super::answer::answer;

/// Accepts the upgrade on `stream` and answers its frames until it closes.
pub async fn serve(stream: TcpStream) -> Result<(), BoxError> {
    // The buffer sizes jrpc's WebSocket server uses, so that the memory figures compare.
    let config = WebSocketConfig::default()
        .read_buffer_size(4096)
        .write_buffer_size(4096);
    let mut ws = tokio_tungstenite::accept_async_with_config(stream, Some(config)).await?;
    while let Some(message) = ws.next().await {
        let mut message = Some(message?);
        while let Some(current) = message.take() {
            match current {
                Message::Text(text) => {
                    if let Some(answer) = answer(text.as_bytes()) {
                        // serde_json wrote it: UTF-8.
                        let answer = String::from_utf8(answer).unwrap_or_default();
                        ws.feed(Message::text(answer)).await?;
                    }
                }
                Message::Close(_) => return Ok(()),
                // tungstenite answers pings itself; binary frames are not JSON-RPC here.
                _ => {}
            }
            message = match ws.next().now_or_never() {
                Some(Some(next)) => Some(next?),
                Some(None) => return Ok(()),
                None => None,
            };
        }
        ws.flush().await?;
    }
    Ok(())
}
