//! The API client the daemon's informers use: kube's own client, with its
//! watch requests sent over connections read in windows under a steady
//! stream ([`windowed`]).
//!
//! Lists, gets and writes go through the stack `kube::Client::try_from`
//! builds, untouched. Watch requests (`watch=true`) go through a second
//! stack built from the same configuration the way kube builds its own
//! (base URI, retries, authentication, extra headers, TLS, timeouts), whose
//! connector makes [`windowed::Windowed`] connections. With no window, the
//! client is kube's, unchanged.
//!
//! Owns how requests reach the API server; it does not know what they ask.

pub mod windowed;

use http::{Request, Response};
use http_body_util::BodyExt;
use hyper_util::client::legacy::connect::HttpConnector;
use kube::client::{Body, ClientBuilder, ConfigExt, DynBody};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tower::util::BoxService;
use tower::{BoxError, Layer, Service, ServiceBuilder, ServiceExt};
use windowed::WindowedConnector;

/// A kube client; with `watch_window`, its watches are read in windows of
/// that length under a steady stream.
pub fn client(config: kube::Config, watch_window: Option<Duration>) -> anyhow::Result<kube::Client> {
    let Some(window) = watch_window.filter(|w| !w.is_zero()) else {
        return Ok(kube::Client::try_from(config)?);
    };
    if config.proxy_url.is_some() {
        // Proxied connections are kube's to make.
        return Ok(kube::Client::try_from(config)?);
    }
    let watches = watch_stack(&config, window)?;
    let builder = ClientBuilder::try_from(config)?;
    Ok(builder.with_layer(&WatchesLayer::new(watches)).build())
}

type Responses = BoxService<Request<Body>, Response<Box<DynBody>>, BoxError>;

/// kube's stack, over connections read in windows.
fn watch_stack(config: &kube::Config, window: Duration) -> anyhow::Result<Responses> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    let tls = config.rustls_https_connector_with_connector(WindowedConnector::new(http, window))?;
    let mut connector = hyper_timeout::TimeoutConnector::new(tls);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);
    let http_client: hyper_util::client::legacy::Client<_, Body> =
        hyper_util::client::legacy::Builder::new(hyper_util::rt::TokioExecutor::new()).build(connector);
    let retry = config
        .default_retry
        .then(|| tower::retry::RetryLayer::new(kube::client::retry::RetryPolicy::server_retry()));
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(retry)
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .service(http_client.map_err(BoxError::from))
        .map_response(|res: Response<hyper::body::Incoming>| {
            res.map(|body| Box::new(body.map_err(BoxError::from)) as Box<DynBody>)
        })
        .map_err(BoxError::from);
    Ok(BoxService::new(service))
}

/// Whether a request is a watch (`watch=true` or `watch=1`).
fn is_watch(req: &Request<Body>) -> bool {
    req.uri()
        .query()
        .is_some_and(|q| q.split('&').any(|kv| kv == "watch=true" || kv == "watch=1"))
}

/// Sends watches to their own stack and everything else to kube's.
struct WatchesLayer {
    watches: std::sync::Mutex<Option<Responses>>,
}

impl WatchesLayer {
    fn new(watches: Responses) -> WatchesLayer {
        WatchesLayer {
            watches: std::sync::Mutex::new(Some(watches)),
        }
    }
}

impl<S> Layer<S> for WatchesLayer {
    type Service = Watches<S>;

    /// Layered once, by [`client`].
    fn layer(&self, inner: S) -> Watches<S> {
        let watches = self
            .watches
            .lock()
            .unwrap()
            .take()
            .expect("the watch stack is layered once");
        Watches { inner, watches }
    }
}

struct Watches<S> {
    inner: S,
    watches: Responses,
}

type Responding = Pin<Box<dyn Future<Output = Result<Response<Box<DynBody>>, BoxError>> + Send>>;

impl<S> Service<Request<Body>> for Watches<S>
where
    S: Service<Request<Body>, Response = Response<Box<DynBody>>, Error = BoxError>,
    S::Future: Send + 'static,
{
    type Response = Response<Box<DynBody>>;
    type Error = BoxError;
    type Future = Responding;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        match (self.inner.poll_ready(cx)?, self.watches.poll_ready(cx)?) {
            (Poll::Ready(()), Poll::Ready(())) => Poll::Ready(Ok(())),
            _ => Poll::Pending,
        }
    }

    fn call(&mut self, req: Request<Body>) -> Responding {
        if is_watch(&req) {
            Box::pin(self.watches.call(req))
        } else {
            Box::pin(self.inner.call(req))
        }
    }
}

#[cfg(test)]
mod tests;
