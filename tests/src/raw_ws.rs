//! A WebSocket client written by hand: the handshake and RFC 6455 frames, so that a test sees
//! every frame the server sends (pings and close codes included) and can do what no well-behaved
//! client does (send binary frames, never read).

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::bounded;

/// The opcode of a text frame.
pub const TEXT: u8 = 0x1;
/// The opcode of a binary frame.
pub const BINARY: u8 = 0x2;
/// The opcode of a close frame.
pub const CLOSE: u8 = 0x8;
/// The opcode of a ping.
pub const PING: u8 = 0x9;
/// The opcode of a pong.
pub const PONG: u8 = 0xA;

/// A frame as received: its opcode and payload.
#[derive(Debug)]
pub struct Received {
    /// The frame's opcode.
    pub opcode: u8,
    /// The frame's payload, unmasked.
    pub payload: Vec<u8>,
}

impl Received {
    /// The payload of a text frame.
    ///
    /// # Panics
    ///
    /// When this is not a text frame.
    pub fn text(&self) -> &str {
        assert_eq!(self.opcode, TEXT, "expected a text frame, got {self:?}");
        std::str::from_utf8(&self.payload).expect("text frames are UTF-8")
    }

    /// The payload of a text frame, as JSON.
    ///
    /// # Panics
    ///
    /// When this is not a text frame holding JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.text()).expect("a JSON message")
    }

    /// The close code of a close frame.
    ///
    /// # Panics
    ///
    /// When this is not a close frame.
    pub fn close_code(&self) -> u16 {
        assert_eq!(self.opcode, CLOSE, "expected a close frame, got {self:?}");
        u16::from_be_bytes([self.payload[0], self.payload[1]])
    }
}

/// A client connection after the upgrade.
pub struct RawWs {
    /// The socket, for what the frame methods do not cover (its local address).
    pub stream: TcpStream,
}

impl RawWs {
    /// Opens `path` on `addr` with the given extra headers; panics unless the answer is `101`.
    pub async fn connect(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> RawWs {
        Self::connect_sending(addr, path, headers, &[]).await
    }

    /// Does what [`connect`](Self::connect) does, sending `texts` (text frames) in the same write
    /// as the upgrade request, as a client that does not wait for the `101` may.
    pub async fn connect_sending(
        addr: SocketAddr,
        path: &str,
        headers: &[(&str, &str)],
        texts: &[&str],
    ) -> RawWs {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let mut request = format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        let mut bytes = request.into_bytes();
        bytes.extend(texts.iter().flat_map(|text| masked(TEXT, text.as_bytes())));
        stream.write_all(&bytes).await.unwrap();
        // Read the answer's head byte by byte: the first frame may follow it at once.
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let byte = stream.read_u8().await.expect("an answer to the upgrade");
            head.push(byte);
        }
        let head = String::from_utf8(head).unwrap();
        assert!(head.starts_with("HTTP/1.1 101"), "upgrade refused: {head}");
        // The accept key of the RFC's example nonce.
        assert!(
            head.to_ascii_lowercase()
                .contains("sec-websocket-accept: s3pplmbitxaq9kygzzhzrbk+xoo="),
            "{head}"
        );
        RawWs { stream }
    }

    /// Sends one masked frame, as a client must.
    pub async fn send_frame(&mut self, opcode: u8, payload: &[u8]) {
        self.stream
            .write_all(&masked(opcode, payload))
            .await
            .unwrap();
    }

    /// Sends a text frame.
    pub async fn send_text(&mut self, text: &str) {
        self.send_frame(TEXT, text.as_bytes()).await;
    }

    /// Sends text frames in one write, so that the server reads them together.
    pub async fn send_texts(&mut self, texts: &[&str]) {
        let frames: Vec<u8> = texts
            .iter()
            .flat_map(|text| masked(TEXT, text.as_bytes()))
            .collect();
        self.stream.write_all(&frames).await.unwrap();
    }

    /// The next frame; `None` when the server closed the socket.
    pub async fn next_frame(&mut self) -> Option<Received> {
        let mut head = [0u8; 2];
        self.stream.read_exact(&mut head).await.ok()?;
        let opcode = head[0] & 0x0F;
        assert_eq!(head[1] & 0x80, 0, "a server's frames are not masked");
        let len = match head[1] & 0x7F {
            126 => u64::from(self.stream.read_u16().await.ok()?),
            127 => self.stream.read_u64().await.ok()?,
            n => u64::from(n),
        };
        let mut payload = vec![0; len as usize];
        self.stream.read_exact(&mut payload).await.ok()?;
        Some(Received { opcode, payload })
    }

    /// The next data or close frame, answering pings on the way.
    pub async fn next_message(&mut self) -> Option<Received> {
        loop {
            let frame = self.next_frame().await?;
            match frame.opcode {
                PING => self.send_frame(PONG, &frame.payload).await,
                PONG => {}
                _ => return Some(frame),
            }
        }
    }

    /// The next message, as JSON.
    pub async fn next_json(&mut self) -> serde_json::Value {
        bounded(self.next_message())
            .await
            .expect("a message, not the end of the connection")
            .json()
    }

    /// Reads until a close frame; returns its code.
    pub async fn close_code(&mut self) -> u16 {
        loop {
            let frame = bounded(self.next_message())
                .await
                .expect("a close frame before the end of the connection");
            if frame.opcode == CLOSE {
                // Answer it, as the closing handshake asks.
                let code = frame.close_code();
                self.send_frame(CLOSE, &code.to_be_bytes()).await;
                return code;
            }
        }
    }

    /// Reads until the server drops the socket; returns the close code, if a close frame came.
    pub async fn until_end(&mut self) -> Option<u16> {
        let mut code = None;
        while let Some(frame) = bounded(self.next_message()).await {
            if frame.opcode == CLOSE {
                code = Some(frame.close_code());
            }
        }
        code
    }
}

/// One masked frame, as a client sends it.
fn masked(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut frame = vec![0x80 | opcode];
    match payload.len() {
        n if n < 126 => frame.push(0x80 | n as u8),
        n if n <= 0xFFFF => {
            frame.push(0x80 | 126);
            frame.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            frame.push(0x80 | 127);
            frame.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    let mask = [0x12, 0x34, 0x56, 0x78];
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    frame
}
