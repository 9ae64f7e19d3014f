//! Enforces the write deadline on a byte stream: a peer that takes no byte for `write_timeout` is
//! cut.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use tokio::io::AsyncWrite;
use tokio::time::Sleep;

pin_project_lite::pin_project! {
    /// Writes, but fails with [`io::ErrorKind::TimedOut`] once a write (or flush) has waited
    /// `limit` without the other side taking a byte: a peer that stopped reading is cut instead of
    /// holding what waits for it forever. Progress of any size restarts the clock.
    ///
    /// The writer is held in place, not boxed: every write goes through it, and on a server
    /// with many connections each pointer followed is a cache line to fetch.
    #[derive(Debug)]
    pub struct WriteDeadline<W> {
        #[pin]
        inner: W,
        clock: Clock,
    }
}

/// Times the stalls of a [`WriteDeadline`]'s writer.
///
/// Laid out in order (`repr(C)`), `stalled` first: a write that the socket takes, nearly every
/// one, reads that flag alone, on the line the writer's last field is on.
#[derive(Debug)]
#[repr(C)]
struct Clock {
    /// Whether the writer waits: the clock of the stall runs.
    stalled: bool,
    limit: Option<Duration>,
    /// The clock of the current stall, made on the first one.
    stall: Option<Pin<Box<Sleep>>>,
}

impl<W: AsyncWrite> WriteDeadline<W> {
    /// Wraps `inner`, cut after `limit` without progress (`None`: never).
    pub fn new(inner: W, limit: Option<Duration>) -> Self {
        Self {
            inner,
            clock: Clock {
                stalled: false,
                limit,
                stall: None,
            },
        }
    }

    /// Returns the writer it wraps.
    pub fn into_inner(self) -> W {
        self.inner
    }
}

impl Clock {
    /// Tells what a poll of the inner writer means for the clock: progress stops it, waiting starts
    /// it (or finds it run out).
    fn watch<T>(
        &mut self,
        cx: &mut TaskContext<'_>,
        polled: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if polled.is_ready() {
            if self.stalled {
                self.stalled = false;
            }
            return polled;
        }
        let Some(limit) = self.limit else {
            return polled;
        };
        let stall = self
            .stall
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        if !self.stalled {
            self.stalled = true;
            stall.as_mut().reset(crate::time::after(limit));
        }
        match stall.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the peer took no byte for {limit:?} (`write_timeout`)"),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<W: AsyncWrite> AsyncWrite for WriteDeadline<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        let polled = this.inner.poll_write(cx, buf);
        this.clock.watch(cx, polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        let polled = this.inner.poll_write_vectored(cx, bufs);
        this.clock.watch(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        let this = self.project();
        let polled = this.inner.poll_flush(cx);
        this.clock.watch(cx, polled)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        let this = self.project();
        let polled = this.inner.poll_shutdown(cx);
        this.clock.watch(cx, polled)
    }
}

impl<R: tokio::io::AsyncRead> tokio::io::AsyncRead for WriteDeadline<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.project().inner.poll_read(cx, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_write_that_makes_no_progress_fails_after_the_limit() {
        use tokio::io::AsyncWriteExt as _;
        let (writer, mut reader) = tokio::io::duplex(8);
        let mut writer = WriteDeadline::new(writer, Some(Duration::from_secs(30)));
        // Progress keeps it alive: the reader takes what is written.
        let mut buf = [0; 8];
        writer.write_all(b"12345678").await.unwrap();
        tokio::io::AsyncReadExt::read_exact(&mut reader, &mut buf)
            .await
            .unwrap();
        // Then nothing is read: the write waits, and fails once the limit has passed.
        writer.write_all(b"12345678").await.unwrap();
        let err = writer.write_all(b"x").await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(err.to_string().contains("write_timeout"), "{err}");
    }
}
