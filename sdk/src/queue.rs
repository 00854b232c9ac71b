//! The plugin's work queue: declare it with [`Queue`] in the registration
//! ([`Registration::queue`](crate::Registration::queue)), say how each
//! watch feeds it ([`Watch::enqueue`](crate::Watch::enqueue) with an
//! [`Enqueue`]), and implement [`Handler::reconcile`](crate::Handler::reconcile),
//! which answers an [`Action`]. The host keeps client-go's workqueue: a key
//! is held once however often it is added, never reconciled twice at once,
//! retried with per-key exponential backoff after an error or a
//! [`Action::Requeue`]; only the leader reconciles, and every key of the
//! queue's resource is enqueued when the plugin starts, reloads or takes
//! over.
//!
//! ```no_run
//! use std::time::Duration;
//! use wink_sdk::queue::{Action, Enqueue, Queue};
//! use wink_sdk::{Handler, Registration, Resource, Watch};
//!
//! struct Keeper;
//!
//! impl Handler for Keeper {
//!     fn init(_config: &str) -> Result<(Self, Registration), String> {
//!         let registration = Registration::new()
//!             .queue(Queue::new(Resource::new("v1", "Namespace")))
//!             .watch(Watch::new("v1", "Namespace").enqueue(Enqueue::OwnKey));
//!         Ok((Keeper, registration))
//!     }
//!
//!     fn reconcile(&mut self, key: &str) -> Result<Action, String> {
//!         wink_sdk::info!("looking at {key}");
//!         Ok(Action::RequeueAfter(Duration::from_secs(60)))
//!     }
//! }
//!
//! wink_sdk::export_plugin!(Keeper);
//! # fn main() {}
//! ```

use crate::Resource;
use crate::bindings::exports::wink::plugin::reconciler as wit_reconciler;
use crate::bindings::wink::plugin::{queue as wit, types};
use std::time::Duration;

/// How a watch's events feed the queue: `None` (the default: the handler
/// only), `OwnKey` (the object's own key, for a watch of the queue's
/// resource), `ControllerOwner` (its controller owner's key, when that is
/// of the queue's resource: a Pod enqueues its ReplicaSet), `ByIndex(name)`
/// (the keys of the queue resource's objects whose index `name` holds the
/// changed object's key) or `Mapped` (what
/// [`Handler::map_to_keys`](crate::Handler::map_to_keys) answers).
pub use types::Enqueue;

/// What to do with a key after a reconcile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Done: its backoff is forgotten.
    Done,
    /// Look again after this long (its backoff forgotten).
    RequeueAfter(Duration),
    /// Look again after the key's backoff (rate limited).
    Requeue,
}

impl Action {
    #[doc(hidden)]
    pub fn into_wit(self) -> wit_reconciler::Action {
        match self {
            Action::Done => wit_reconciler::Action::Done,
            Action::RequeueAfter(d) => {
                wit_reconciler::Action::RequeueAfter(d.as_millis().min(u64::MAX as u128) as u64)
            }
            Action::Requeue => wit_reconciler::Action::Requeue,
        }
    }
}

/// The plugin's work queue: its resource, and client-go's default rate
/// limiter's numbers (5 ms doubling to 1,000 s per key; 10 retries a
/// second, burst 100, overall) unless changed.
#[derive(Debug, Clone)]
pub struct Queue(pub(crate) types::Queue);

impl Queue {
    /// A queue of keys of `resource` (which the plugin watches or reads).
    pub fn new(resource: Resource) -> Self {
        Queue(types::Queue {
            resource: resource.as_wit().clone(),
            base_delay_ms: 5,
            max_delay_ms: 1_000_000,
            qps: 10,
            burst: 100,
        })
    }

    /// A queue of keys of a typed kind.
    pub fn of<K: crate::Kind>() -> Self {
        Queue::new(Resource::of::<K>())
    }

    /// Per-key backoff: `base` after the first failure, doubling up to `max`
    /// (whole milliseconds, at least 1).
    pub fn backoff(mut self, base: Duration, max: Duration) -> Self {
        let ms = |d: Duration| d.as_millis().clamp(1, u32::MAX as u128) as u32;
        self.0.base_delay_ms = ms(base);
        self.0.max_delay_ms = ms(max);
        self
    }

    /// Overall retries: `qps` a second, with bursts of `burst`.
    pub fn rate(mut self, qps: u32, burst: u32) -> Self {
        self.0.qps = qps;
        self.0.burst = burst;
        self
    }
}

/// Add `key` to the plugin's queue now (held once however often added).
/// An error when the plugin registered no queue, and when the queue is
/// full: it holds at most 50,000 keys and 8 MiB of keys (queued and waiting
/// together), and refuses new ones past that until reconciles drain it.
pub fn add(key: &str) -> Result<(), String> {
    wit::add(key)
}

/// Add `key` to the plugin's queue after `delay` (an error as [`add`]'s).
pub fn add_after(key: &str, delay: Duration) -> Result<(), String> {
    wit::add_after(key, delay.as_millis().min(u64::MAX as u128) as u64)
}
