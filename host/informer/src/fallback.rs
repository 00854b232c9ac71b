//! Streaming lists with a fallback, as client-go does: an informer starts
//! with a streaming list (`sendInitialEvents`, the WatchList feature); a
//! server that refuses it on the first request (400/422: the feature gate
//! is off, or the server predates it) gets paged LIST+WATCH instead, and so
//! does every informer started on that server afterwards. Owns only the
//! switch; kube-runtime's watcher does the listing and watching either way.

use super::object::RawObject;
use futures::Stream;
use kube::runtime::watcher;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

type Item = Result<watcher::Event<RawObject>, watcher::Error>;

/// Whether `e`, on a stream's first request, says the server does not serve
/// streaming lists.
pub fn refuses_streaming(e: &watcher::Error) -> bool {
    matches!(e, watcher::Error::WatchStartFailed(kube::Error::Api(s)) if s.code == 400 || s.code == 422)
}

/// A streaming-list watcher stream that turns into its paged twin when the
/// server refuses streaming lists before anything was received.
pub struct WithFallback<S> {
    current: Pin<Box<S>>,
    paged: Option<Pin<Box<S>>>,
    received: bool,
    /// Set once a server refused: later informers start paged.
    unsupported: Arc<AtomicBool>,
    informer: String,
}

impl<S> WithFallback<S> {
    pub fn new(streaming: S, paged: S, unsupported: Arc<AtomicBool>, informer: String) -> Self {
        WithFallback {
            current: Box::pin(streaming),
            paged: Some(Box::pin(paged)),
            received: false,
            unsupported,
            informer,
        }
    }
}

impl<S: Stream<Item = Item>> Stream for WithFallback<S> {
    type Item = Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Item>> {
        let this = self.get_mut();
        loop {
            match this.current.as_mut().poll_next(cx) {
                Poll::Ready(Some(Err(e)))
                    if !this.received && this.paged.is_some() && refuses_streaming(&e) =>
                {
                    tracing::warn!(
                        informer = %this.informer,
                        "the API server does not serve streaming lists ({}): falling back to paged LIST+WATCH",
                        crate::repeated::short_error(&e)
                    );
                    this.unsupported.store(true, Ordering::Relaxed);
                    this.current = this.paged.take().expect("checked above");
                }
                Poll::Ready(Some(Ok(event))) => {
                    this.received = true;
                    return Poll::Ready(Some(Ok(event)));
                }
                other => return other,
            }
        }
    }
}
