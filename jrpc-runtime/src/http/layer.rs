//! Puts tower layers over the HTTP server's own service: CORS, compression, request ids, timeouts
//! (tower-http's, as they are), around every request of the server, on every connection.
//!
//! The server's paths ([`Routes`]: the JSON-RPC path, the WebSocket path, the mounted endpoints)
//! are one tower service, which the layer wraps once per connection; each request is answered by
//! a clone of the wrapped service. A server with no layer serves its paths as before, with no
//! box and no clone: the layer's machinery is chosen per connection, not per request.

use std::convert::Infallible;
use std::fmt;
use std::sync::Arc;
use std::task::Poll;

use ::http::{Request, Response};
use hyper::body::{Body, Buf as _, Bytes, Frame, Incoming};
use tower::ServiceExt as _;
use tower::util::BoxCloneService;
use tower_layer::Layer;
use tower_service::Service;

use super::config::HttpServerBuilder;
use super::connection::{Ends, Responder};
use super::reply::{self, ResponseBody};
use super::server::Router;
use super::service::{BoxError, ResponseFuture};

/// Serves the server's paths as one tower service: what an HTTP layer
/// ([`HttpServerBuilder::layer`](super::HttpServerBuilder::layer)) wraps. It answers every
/// request as the server without a layer would (`404` where nothing is served), and never fails.
pub struct Routes {
    router: Router,
}

impl fmt::Debug for Routes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Routes").finish_non_exhaustive()
    }
}

impl Clone for Routes {
    fn clone(&self) -> Self {
        Self {
            router: self.router.clone(),
        }
    }
}

impl Service<Request<Incoming>> for Routes {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = ResponseFuture;

    /// Reports ready at once: limits apply per request, there is no queue.
    fn poll_ready(&mut self, _cx: &mut std::task::Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Incoming>) -> Self::Future {
        Box::pin(self.router.respond(req, None))
    }
}

/// Names the layered service one connection is served by.
type LayeredService = BoxCloneService<Request<Incoming>, Response<ResponseBody>, BoxError>;

/// Wraps a connection's [`Routes`] in the server's layer.
type Wrap = dyn Fn(Routes) -> LayeredService + Send + Sync;

/// Holds the server's layer, as its connections apply it.
#[derive(Clone)]
pub(crate) struct ServerLayer(Arc<Wrap>);

impl fmt::Debug for ServerLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ServerLayer(..)")
    }
}

impl HttpServerBuilder {
    /// Puts a tower layer around every request of the server (CORS, compression, request ids,
    /// timeouts: tower-http's layers as they are; a `tower::ServiceBuilder` for several, the
    /// first added outermost): the `POST`s of the JSON-RPC path and their SSE answers, the
    /// WebSocket upgrades and the mounted endpoints alike, on HTTP/1.1, HTTP/2 and TLS, with the
    /// server's connection handling (the connection cap, header timeouts, idle parking, the
    /// graceful shutdown) kept. Setting a layer again replaces it.
    ///
    /// The layer wraps [`Routes`], the server's paths as one service, once per connection; a
    /// layer's own refusal (a CORS preflight it answers, a timeout) comes before the server's
    /// origin policy and bearer token, which run inside it. A server without a layer pays
    /// nothing for the option. Calls go through the table's call layers
    /// ([`Methods::layer`](crate::Methods::layer)) besides: those see JSON-RPC calls, this one
    /// HTTP requests.
    ///
    /// ```
    /// use std::time::Duration;
    /// use jrpc_runtime::Methods;
    /// use jrpc_runtime::http::HttpServer;
    /// use tower_http::cors::{AllowOrigin, CorsLayer};
    /// use http::{Method, header::{AUTHORIZATION, CONTENT_TYPE}};
    ///
    /// let origins = ["https://app.example"];
    /// let cors = CorsLayer::new()
    ///     .allow_origin(AllowOrigin::list(origins.map(|o| o.parse().unwrap())))
    ///     .allow_methods([Method::POST])
    ///     .allow_headers([CONTENT_TYPE, AUTHORIZATION]);
    /// let server = HttpServer::builder(Methods::new())
    ///     // The same list allows the pages through the origin policy.
    ///     .origin_policy(jrpc_runtime::server::OriginPolicy::new().allow_origins(origins))
    ///     .layer(cors)
    ///     .build()?;
    /// # drop(server);
    /// # Ok::<(), jrpc_runtime::ConfigError>(())
    /// ```
    pub fn layer<L, S, B>(self, layer: L) -> Self
    where
        L: Layer<Routes, Service = S> + Send + Sync + 'static,
        S: Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
        S::Future: Send + 'static,
        S::Error: Into<BoxError>,
        B: Body + Send + 'static,
        B::Error: Into<BoxError>,
    {
        self.set_layer(ServerLayer(Arc::new(move |routes| {
            let service = layer.layer(routes).map_err(Into::into);
            let service = service.map_response(|res| {
                res.map(|body| ResponseBody::streamed(EndOnError(Box::pin(body))))
            });
            BoxCloneService::new(service)
        })))
    }
}

/// Answers a connection's requests through the server's layer: its routes, wrapped.
#[derive(Clone)]
pub(crate) struct Layered {
    service: LayeredService,
}

impl Layered {
    /// Returns the service `layer` makes of `router`'s routes.
    pub(crate) fn new(layer: &ServerLayer, router: Router) -> Self {
        Self {
            service: (layer.0)(Routes { router }),
        }
    }

    /// Answers `req` through the layer, the answer handed to [`Ends::answered`] with `ends`.
    pub(crate) fn respond(&self, req: Request<Incoming>, ends: Option<Ends>) -> ResponseFuture {
        let answer = self.service.clone().oneshot(req);
        Box::pin(async move {
            let res = answer.await.unwrap_or_else(|err| {
                tracing::error!(error = %err, "the server's HTTP layer failed: answered 500");
                reply::envelope(
                    ::http::StatusCode::INTERNAL_SERVER_ERROR,
                    &crate::wire::RpcError::internal(),
                )
            });
            Ok(Ends::answered(ends, res))
        })
    }
}

/// Wraps a layer's body, sent as it is made: its data as `Bytes`, and an error (a layer's own body
/// failing, a timeout) ends it there, logged, since the reply's head is out already.
struct EndOnError<B>(std::pin::Pin<Box<B>>);

impl<B> Body for EndOnError<B>
where
    B: Body,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match std::task::ready!(self.get_mut().0.as_mut().poll_frame(cx)) {
            Some(Ok(frame)) => {
                let frame = frame.map_data(|mut data| data.copy_to_bytes(data.remaining()));
                Poll::Ready(Some(Ok(frame)))
            }
            Some(Err(err)) => {
                let err: BoxError = err.into();
                tracing::warn!(error = %err, "a reply's body failed in the server's HTTP layer: ended there");
                Poll::Ready(None)
            }
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.0.size_hint()
    }
}
