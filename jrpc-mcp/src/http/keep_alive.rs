//! Keeps a long-lived event stream (a legacy session's GET stream, a modern listen stream) alive
//! through proxies and balancers that close a connection idle past their timeout: a comment
//! (`: keep-alive`) goes out whenever nothing else did for the interval set. Clients ignore
//! comments, as the SSE specification says they must.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Bytes, Frame, SizeHint};
use jrpc_runtime::http::reply::ResponseBody;
use tokio::time::{Instant, Sleep};

/// Holds the comment sent when a stream has been quiet for the interval.
pub(crate) const COMMENT: &[u8] = b": keep-alive\n\n";

/// Returns `body` sending a comment after each `every` without a frame; `body` itself when
/// `every` is `None`.
pub(crate) fn keep_alive(body: ResponseBody, every: Option<Duration>) -> ResponseBody {
    match every {
        Some(every) => ResponseBody::streamed(KeepAlive {
            inner: body,
            every,
            quiet: Box::pin(tokio::time::sleep(every)),
        }),
        None => body,
    }
}

/// Sends [`COMMENT`] in a body whenever its inner body was quiet for `every`.
struct KeepAlive {
    inner: ResponseBody,
    every: Duration,
    /// Fires when the stream has been quiet for `every`; reset by each frame.
    quiet: Pin<Box<Sleep>>,
}

impl Body for KeepAlive {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        // The inner body first: a frame ready now goes before a comment.
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            this.quiet.as_mut().reset(Instant::now() + this.every);
            return Poll::Ready(frame);
        }
        match this.quiet.as_mut().poll(cx) {
            Poll::Ready(()) => {
                this.quiet.as_mut().reset(Instant::now() + this.every);
                Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(COMMENT)))))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::poll_fn;

    async fn next(body: &mut ResponseBody) -> Option<Bytes> {
        let frame = poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await?;
        frame.ok()?.into_data().ok()
    }

    #[tokio::test(start_paused = true)]
    async fn a_quiet_stream_gets_a_comment_each_interval() {
        let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(4);
        let inner = futures_util::stream::unfold(rx, |mut rx| async move {
            let bytes = rx.recv().await?;
            Some((Ok::<_, Infallible>(Frame::data(bytes)), rx))
        });
        let inner = ResponseBody::streamed(StreamBody(Box::pin(inner)));
        let mut body = keep_alive(inner, Some(Duration::from_secs(15)));
        let started = Instant::now();
        assert_eq!(next(&mut body).await.as_deref(), Some(COMMENT));
        assert_eq!(started.elapsed(), Duration::from_secs(15));
        tx.send(Bytes::from_static(b"data: 1\n\n")).await.unwrap();
        assert_eq!(next(&mut body).await.as_deref(), Some(&b"data: 1\n\n"[..]));
        let sent = Instant::now();
        assert_eq!(next(&mut body).await.as_deref(), Some(COMMENT));
        assert_eq!(
            sent.elapsed(),
            Duration::from_secs(15),
            "counted from the last frame"
        );
        drop(tx);
        assert_eq!(next(&mut body).await, None, "it ends with its stream");
    }

    /// Serves a stream of frames as a body, for the test.
    struct StreamBody(
        Pin<Box<dyn futures_util::Stream<Item = Result<Frame<Bytes>, Infallible>> + Send>>,
    );

    impl Body for StreamBody {
        type Data = Bytes;
        type Error = Infallible;

        fn poll_frame(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            self.get_mut().0.as_mut().poll_next(cx)
        }
    }
}
