//! The HTTP/1.1 server on a [`BoundedListener`]'s connections: hyper's,
//! with a deadline for each request's head (hyper's own, on a Tokio timer)
//! and one for its body (a [`Deadline`] around it), and the reserve's
//! connections answering the probe routes only, one request each.
//!
//! Owns serving connections; the routes are the surface's.

use super::{BoundedListener, ListenOptions, Place};
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use axum::response::IntoResponse;
use bytes::Bytes;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Sleep;
use tower::ServiceExt;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What a reserve connection answers on any route but the probes'.
async fn only_probes() -> axum::response::Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, "1")],
        "the connection cap is reached: only the health probes answer\n",
    )
        .into_response()
}

/// Serve `routes` on `listener` until the task is dropped. With `probes`
/// (routes such as `/healthz`), a connection past the cap takes a place
/// in the listener's reserve and answers those routes only.
pub async fn serve(
    mut listener: BoundedListener,
    routes: Router,
    probes: Option<Router>,
) -> anyhow::Result<()> {
    let probes = probes.map(|p| p.fallback(only_probes));
    loop {
        let (io, peer, place) = listener.next(probes.is_some()).await;
        let router = match (place, &probes) {
            (Place::Reserve, Some(probes)) => probes.clone(),
            _ => routes.clone(),
        };
        let options = listener.options.clone();
        tokio::spawn(async move {
            if let Err(e) = connection(io, router, place, &options).await {
                tracing::debug!(%peer, "connection ended: {e}");
            }
        });
    }
}

/// One connection, to its end.
async fn connection<I>(
    io: I,
    router: Router,
    place: Place,
    options: &ListenOptions,
) -> Result<(), hyper::Error>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let body_timeout = options.body_timeout;
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let request = request.map(|body| Body::new(Deadline::new(body, body_timeout)));
        router.clone().oneshot(request)
    });
    hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(options.header_timeout)
        .keep_alive(place == Place::Main)
        .serve_connection(TokioIo::new(io), service)
        .await
}

/// A request body that fails once its deadline passes before its end.
pub(crate) struct Deadline<B> {
    inner: B,
    deadline: Pin<Box<Sleep>>,
}

impl<B> Deadline<B> {
    pub(crate) fn new(inner: B, within: Duration) -> Self {
        Deadline {
            inner,
            deadline: Box::pin(tokio::time::sleep(within)),
        }
    }
}

impl<B> hyper::body::Body for Deadline<B>
where
    B: hyper::body::Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err("the request body did not arrive in time".into()))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
