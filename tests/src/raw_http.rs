//! HTTP/1.1 written and read by hand, so that a test sees every status, header and connection
//! detail as a client sees it.

use std::net::SocketAddr;

use serde_json::Value;
use tokio::io::{
    AsyncBufReadExt as _, AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, BufReader,
};
use tokio::net::TcpStream;

/// A reply as read off the wire.
#[derive(Debug)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// The headers in order, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: String,
}

impl Reply {
    /// The first header called `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    ///
    /// # Panics
    ///
    /// When it is not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|err| panic!("body is not JSON ({err}): {:?}", self.body))
    }

    /// Checks the error envelope every non-204 status the HTTP layer answers carries; returns
    /// the body.
    ///
    /// # Panics
    ///
    /// When the status is not `status`, or the body is not an error envelope of `code`.
    pub fn assert_envelope(&self, status: u16, code: i64) -> Value {
        assert_eq!(self.status, status, "{self:?}");
        assert_eq!(self.header("content-type"), Some("application/json"));
        let body = self.json();
        assert_eq!(body["jsonrpc"], "2.0");
        assert_eq!(body["id"], Value::Null);
        assert_eq!(body["error"]["code"], code, "{body}");
        assert!(body["error"]["message"].is_string());
        body
    }
}

/// What a [`Conn`] reads and writes: a TCP stream, or one end of an in-memory pipe.
pub trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Stream for S {}

/// One client connection, read as HTTP/1.1.
pub struct Conn {
    stream: BufReader<Box<dyn Stream>>,
    /// The local port of a TCP connection.
    port: Option<u16>,
}

impl Conn {
    /// Connects to `addr`.
    pub async fn open(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).await.unwrap();
        let port = stream.local_addr().unwrap().port();
        Self {
            stream: BufReader::new(Box::new(stream)),
            port: Some(port),
        }
    }

    /// A connection over `stream` (one end of a `tokio::io::duplex` pipe, say).
    pub fn over(stream: impl Stream + 'static) -> Self {
        Self {
            stream: BufReader::new(Box::new(stream)),
            port: None,
        }
    }

    /// The connection's local port.
    ///
    /// # Panics
    ///
    /// When it is not a TCP connection.
    pub fn local_port(&self) -> u16 {
        self.port.expect("a TCP connection")
    }

    /// Writes `bytes` as they are.
    pub async fn write(&mut self, bytes: &[u8]) {
        self.stream.get_mut().write_all(bytes).await.unwrap();
    }

    /// Writes `request` and reads the reply.
    pub async fn send(&mut self, request: &[u8]) -> Reply {
        self.write(request).await;
        self.read_reply().await
    }

    /// Reads one reply (its body by `content-length`, or chunk by chunk when it is chunked).
    pub async fn read_reply(&mut self) -> Reply {
        let mut reply = self.read_head().await;
        if reply.header("transfer-encoding") == Some("chunked") {
            while let Some(chunk) = self.read_chunk().await {
                reply.body.push_str(&chunk);
            }
            return reply;
        }
        let length = reply
            .header("content-length")
            .map_or(0, |v| v.parse().unwrap());
        let mut body = vec![0; length];
        self.stream.read_exact(&mut body).await.unwrap();
        reply.body = String::from_utf8(body).unwrap();
        reply
    }

    /// Reads a reply's status line and headers; its body is left to read.
    pub async fn read_head(&mut self) -> Reply {
        let mut line = String::new();
        self.stream.read_line(&mut line).await.unwrap();
        let status = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {line:?}"));
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.stream.read_line(&mut line).await.unwrap();
            let trimmed = line.trim_end();
            if trimmed.is_empty() {
                break;
            }
            let (name, value) = trimmed.split_once(':').expect("a header line");
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
        Reply {
            status,
            headers,
            body: String::new(),
        }
    }

    /// Reads one chunk of a chunked body; `None` at its last (empty) chunk.
    pub async fn read_chunk(&mut self) -> Option<String> {
        let mut line = String::new();
        self.stream.read_line(&mut line).await.unwrap();
        let size = usize::from_str_radix(line.trim(), 16)
            .unwrap_or_else(|_| panic!("bad chunk size line {line:?}"));
        let mut chunk = vec![0; size + 2];
        self.stream.read_exact(&mut chunk).await.unwrap();
        assert_eq!(&chunk[size..], b"\r\n", "a chunk ends its line");
        chunk.truncate(size);
        (size > 0).then(|| String::from_utf8(chunk).unwrap())
    }

    /// Reads the next Server-Sent Event of a chunked event stream (its lines, without the blank
    /// line that ends it), keeping what follows it in `pending`; `None` when the body ends.
    pub async fn read_event(&mut self, pending: &mut String) -> Option<String> {
        loop {
            if let Some(end) = pending.find("\n\n") {
                let event = pending[..end].to_owned();
                pending.replace_range(..end + 2, "");
                return Some(event);
            }
            pending.push_str(&self.read_chunk().await?);
        }
    }

    /// Whether the server closed the connection (end of stream, or a reset).
    pub async fn is_closed(&mut self) -> bool {
        let mut byte = [0u8; 1];
        matches!(self.stream.read(&mut byte).await, Ok(0) | Err(_))
    }
}

/// A `POST` of `body` to `path`, with a `content-type` header if given and the `extra` header
/// lines (each ended by `\r\n`).
pub fn post(path: &str, content_type: Option<&str>, extra: &str, body: &str) -> Vec<u8> {
    let content_type = content_type
        .map(|ct| format!("content-type: {ct}\r\n"))
        .unwrap_or_default();
    format!(
        "POST {path} HTTP/1.1\r\nhost: test\r\n{content_type}{extra}content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A JSON `POST` of `body` to `/rpc`.
pub fn post_json(body: &str) -> Vec<u8> {
    post("/rpc", Some("application/json"), "", body)
}

/// Sends `raw` on a fresh connection to `addr` and reads the reply.
pub async fn request(addr: SocketAddr, raw: &[u8]) -> Reply {
    Conn::open(addr).await.send(raw).await
}

/// Sends `raw` on a fresh connection to `addr` and reads until the server closes it; returns
/// all it sent, head and body.
pub async fn exchange(addr: SocketAddr, raw: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(raw).await.unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).await.unwrap();
    reply
}
