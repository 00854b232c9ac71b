//! Reconciling: each plugin that registers a queue gets one
//! [`Reconciling`], its rate-limited work queue and the worker that hands
//! its keys to the plugin's `reconcile`. Owns the worker's loop (only on
//! the leader, only once the plugin's instance has synced, one key at a
//! time through the instance's one lock), what a reconcile's answer does to
//! the key, and the queues by plugin. Which keys an event adds is
//! `enqueueing`'s; the queue's semantics are `crate::workqueue`'s.
//!
//! The queue outlives an instance: a restart after a crash, a takeover and
//! a reload with the same queue numbers and resource keep its keys and
//! backoffs. A reload that changes them, and an unload, empty the old queue
//! at once.
//!
//! The plugin's own adds go through [`PluginKeys`]: refused past the
//! queue's limits (`crate::workqueue::Limits`), which the plugin is told,
//! the queue's metrics count, and the log says once, then at most once a
//! minute with the count since.

use super::PluginManager;
use crate::bindings::reconciler::Action;
use crate::capabilities::KeySink;
use crate::instance::PluginInstance;
use crate::leadership::Leadership;
use crate::workqueue::{Config, Full, QueueMetrics, RateLimiting};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use wink_informer::ObjRef;
use wink_informer::repeated::RepeatedFailure;

/// How often a worker waiting to be allowed to reconcile (not leading, its
/// instance not synced or being replaced) looks again, besides being told.
const LOOK_AGAIN: Duration = Duration::from_millis(100);

/// What a queue is for: its numbers and its resource (apiVersion, kind).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Wanted {
    pub(super) config: Config,
    /// The most keys it holds (the plugin's grant may cap it below
    /// [`crate::workqueue::MAX_KEYS`]).
    pub(super) keys: usize,
    pub(super) api_version: String,
    pub(super) kind: String,
}

/// One plugin's queue and the instance its worker calls.
pub(super) struct Reconciling {
    plugin: Arc<str>,
    wanted: Wanted,
    queue: RateLimiting,
    instance: Mutex<Option<Arc<PluginInstance>>>,
    /// A new instance is served, or the queue stops.
    changed: Notify,
    leadership: Leadership,
    /// Whether a `requeue-after` of 0 was said (once per queue).
    said_zero: std::sync::atomic::AtomicBool,
}

/// A queue's state, for metrics and `/debug/plugins`.
#[derive(Clone)]
pub struct QueueStatus {
    pub metrics: QueueMetrics,
    /// Keys queued, and waiting for their delay.
    pub depth: usize,
    pub waiting: usize,
    /// How long the oldest queued key has waited.
    pub oldest: Option<Duration>,
    /// Time spent so far by the reconcile in progress, and the longest.
    pub unfinished: Duration,
    pub longest_running: Duration,
}

impl Reconciling {
    /// A queue for `plugin`, with its worker started.
    fn start(plugin: &str, wanted: Wanted, leadership: Leadership) -> Arc<Self> {
        let r = Arc::new(Reconciling {
            plugin: plugin.into(),
            queue: RateLimiting::new(wanted.config, QueueMetrics::default()).with_limits(
                crate::workqueue::Limits {
                    keys: wanted.keys,
                    ..Default::default()
                },
            ),
            wanted,
            instance: Mutex::new(None),
            changed: Notify::new(),
            leadership,
            said_zero: Default::default(),
        });
        tokio::spawn(r.clone().work());
        r
    }

    /// The queue.
    pub(super) fn queue(&self) -> &RateLimiting {
        &self.queue
    }

    /// The queue's resource: (apiVersion, kind).
    pub(super) fn resource(&self) -> (&str, &str) {
        (&self.wanted.api_version, &self.wanted.kind)
    }

    /// From now `instance` reconciles, and its `queue` adds go here.
    pub(super) fn serve(&self, instance: &Arc<PluginInstance>) {
        instance.queue_scope().connect(Arc::new(PluginKeys {
            plugin: self.plugin.clone(),
            queue: self.queue.clone(),
            refusals: Default::default(),
        }));
        *self.instance.lock().unwrap() = Some(instance.clone());
        self.changed.notify_one();
    }

    /// Level-triggered: every key of the queue's resource in the cache (in
    /// the plugin's scope), once.
    pub(super) fn enqueue_all(&self, instance: &PluginInstance, excepted: impl Fn(&ObjRef) -> bool) {
        let (v, k) = self.resource();
        let Some(store) = instance.cache_scope().granted(v, k) else {
            return;
        };
        // Under a scope, only the keys of objects in it; never those of
        // objects the operator's exceptions except.
        let scope = instance.cache_scope().scope().get();
        let keys: Vec<String> = store
            .list(None, None)
            .iter()
            .filter(|o| scope.as_ref().is_none_or(|s| s.admits(o)) && !excepted(o))
            .map(|o| o.key())
            .collect();
        tracing::debug!(plugin = %self.plugin, keys = keys.len(), "every key of the queue's resource enqueued");
        for key in keys {
            self.queue.add(&key);
        }
    }

    /// The instance to reconcile with now, if it may: this replica leads
    /// and the instance has synced and is not being replaced.
    fn usable(&self) -> Option<Arc<PluginInstance>> {
        let current = self.instance.lock().unwrap().clone();
        current.filter(|i| i.has_synced() && !i.is_crashed() && self.leadership.is_leading())
    }

    /// Wait until an instance may reconcile; false once the queue shuts down.
    async fn ready(&self) -> bool {
        loop {
            if self.queue.queue().shutting_down() {
                return false;
            }
            if self.usable().is_some() {
                return true;
            }
            tokio::select! {
                _ = self.changed.notified() => {}
                _ = tokio::time::sleep(LOOK_AGAIN) => {}
            }
        }
    }

    /// The worker: one key at a time, until the queue shuts down. A key
    /// taken once the queue shuts down is left unprocessed.
    async fn work(self: Arc<Self>) {
        let q = self.queue.queue();
        while self.ready().await {
            let Some(key) = q.get().await else { return };
            if q.shutting_down() {
                q.done(&key);
                return;
            }
            let Some(instance) = self.usable() else {
                // Lost while waiting for the key: back for the next one.
                q.done(&key);
                self.queue.add(&key);
                continue;
            };
            let answer = instance.reconcile(&key).await;
            self.settle(&key, answer);
            q.done(&key);
        }
    }

    /// What a reconcile's answer does to its key (client-go's
    /// processNextWorkItem): done forgets its backoff, requeue-after
    /// forgets it and looks again then, requeue and errors retry with
    /// backoff.
    fn settle(&self, key: &str, answer: Result<Action, String>) {
        match answer {
            Ok(Action::Done) => self.queue.forget(key),
            // No delay is a requeue paced by the rate limiter (client-go's
            // AddAfter(0) is an Add): a plugin answering it in a loop is
            // slowed by the key's backoff, not reconciled as fast as a core
            // can.
            Ok(Action::RequeueAfter(0)) => {
                if !self.said_zero.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    tracing::warn!(
                        plugin = %self.plugin,
                        key,
                        "requeue-after 0 is a requeue with the key's backoff (said once)"
                    );
                }
                self.queue.add_rate_limited(key);
            }
            Ok(Action::RequeueAfter(ms)) => {
                self.queue.forget(key);
                self.queue.add_after(key, Duration::from_millis(ms));
            }
            Ok(Action::Requeue) => self.queue.add_rate_limited(key),
            Err(e) => {
                tracing::warn!(
                    plugin = %self.plugin,
                    key,
                    retries = self.queue.num_requeues(key),
                    "reconcile failed; retried with backoff: {e}"
                );
                self.queue.add_rate_limited(key);
            }
        }
    }

    /// The queue's state now.
    pub fn status(&self) -> QueueStatus {
        let q = self.queue.queue();
        let (unfinished, longest_running) = q.in_progress();
        QueueStatus {
            metrics: q.metrics().clone(),
            depth: q.len(),
            waiting: self.queue.waiting(),
            oldest: q.oldest(),
            unfinished,
            longest_running,
        }
    }

    /// Stop taking keys; the reconcile in progress finishes.
    async fn stop(&self) {
        self.changed.notify_one();
        self.queue.shut_down_with_drain().await;
    }

    /// Stop taking keys, waiting for nothing, and drop the keys held.
    fn abandon(&self) {
        self.queue.shut_down_and_empty();
        self.changed.notify_one();
    }
}

/// The plugin's own adds to its queue (its `queue` import): within the
/// queue's limits, a refusal said to the plugin and in the log.
struct PluginKeys {
    plugin: Arc<str>,
    queue: RateLimiting,
    /// Refusals said once, then at most once per interval with the count.
    refusals: Mutex<RepeatedFailure>,
}

impl PluginKeys {
    fn said(&self, added: Result<(), Full>) -> Result<(), String> {
        added.map_err(|full| {
            let error = full.to_string();
            if let Some(line) = self.refusals.lock().unwrap().failed(&error) {
                let (keys, bytes) = self.queue.size();
                tracing::warn!(plugin = %self.plugin, keys, bytes, "the plugin's key refused: {line}");
            }
            error
        })
    }
}

impl KeySink for PluginKeys {
    fn add(&self, key: &str) -> Result<(), String> {
        self.said(self.queue.try_add(key))
    }

    fn add_after(&self, key: &str, delay: Duration) -> Result<(), String> {
        self.said(self.queue.try_add_after(key, delay))
    }
}

/// Every plugin's queue, by plugin name.
#[derive(Default)]
pub(super) struct Queues(Mutex<BTreeMap<String, Arc<Reconciling>>>);

impl Queues {
    /// The queue `plugin` wants now: its running one when the numbers and
    /// resource are the same, else a new one (the old stops); none (and
    /// the old stops) when it wants none.
    pub(super) fn for_plugin(
        &self,
        plugin: &str,
        wanted: Option<Wanted>,
        leadership: &Leadership,
    ) -> Option<Arc<Reconciling>> {
        let mut queues = self.0.lock().unwrap();
        match (queues.get(plugin), wanted) {
            (Some(r), Some(w)) if r.wanted == w => Some(r.clone()),
            (_, Some(w)) => {
                let r = Reconciling::start(plugin, w, leadership.clone());
                if let Some(old) = queues.insert(plugin.to_string(), r.clone()) {
                    old.abandon();
                }
                Some(r)
            }
            (_, None) => {
                if let Some(old) = queues.remove(plugin) {
                    old.abandon();
                }
                None
            }
        }
    }

    /// `plugin` is unloaded: its queue stops.
    pub(super) fn remove(&self, plugin: &str) {
        if let Some(old) = self.0.lock().unwrap().remove(plugin) {
            old.abandon();
        }
    }

    fn all(&self) -> Vec<(String, Arc<Reconciling>)> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|(n, r)| (n.clone(), r.clone()))
            .collect()
    }
}

impl PluginManager {
    /// Each plugin's queue state, by plugin name.
    pub fn queue_status(&self) -> Vec<(String, QueueStatus)> {
        self.queues
            .all()
            .into_iter()
            .map(|(n, r)| (n, r.status()))
            .collect()
    }

    /// Shutdown: every queue stops taking keys; returns when the
    /// reconciles in progress have finished.
    pub async fn stop_reconciling(&self) {
        let queues = self.queues.all();
        futures::future::join_all(queues.iter().map(|(_, r)| r.stop())).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reconciling() -> Arc<Reconciling> {
        let wanted = Wanted {
            config: Config::default(),
            keys: crate::workqueue::MAX_KEYS,
            api_version: "v1".into(),
            kind: "Namespace".into(),
        };
        Reconciling::start("p", wanted, Leadership::always())
    }

    /// client-go's processNextWorkItem: done forgets, requeue and errors
    /// retry with the key's growing backoff, requeue-after forgets and
    /// waits its time.
    #[tokio::test(start_paused = true)]
    async fn answers_settle_keys_as_client_go_does() {
        let r = reconciling();
        let q = r.queue();
        r.settle("a", Err("conflict".into()));
        r.settle("a", Ok(Action::Requeue));
        assert_eq!(q.num_requeues("a"), 2, "each a retry");
        assert_eq!(q.queue().metrics().retries.get(), 2);
        r.settle("a", Ok(Action::Done));
        assert_eq!(q.num_requeues("a"), 0, "done forgets the backoff");

        r.settle("b", Err("conflict".into()));
        r.settle("b", Ok(Action::RequeueAfter(60_000)));
        assert_eq!(q.num_requeues("b"), 0, "requeue-after forgets the backoff");
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(q.queue().len(), 2, "the retries came due (5 ms, 10 ms)");
        assert_eq!(q.waiting(), 0, "b waits once, at the earlier of its times");

        // No delay, in a loop: each a retry with the key's growing backoff.
        for _ in 0..5 {
            r.settle("c", Ok(Action::RequeueAfter(0)));
        }
        assert_eq!(q.num_requeues("c"), 5, "paced by the rate limiter");
        assert_eq!(q.queue().len(), 2, "c is not due yet");
        r.abandon();
    }

    /// A queue is kept while a plugin wants the same one, replaced when its
    /// numbers change, and stopped when it wants none.
    #[tokio::test(start_paused = true)]
    async fn a_plugin_keeps_its_queue_until_its_numbers_change() {
        let queues = Queues::default();
        let leading = Leadership::always();
        let wanted = Wanted {
            config: Config::default(),
            keys: crate::workqueue::MAX_KEYS,
            api_version: "v1".into(),
            kind: "Namespace".into(),
        };
        let first = queues.for_plugin("p", Some(wanted.clone()), &leading).unwrap();
        let same = queues.for_plugin("p", Some(wanted.clone()), &leading).unwrap();
        assert!(Arc::ptr_eq(&first, &same));
        let faster = Wanted {
            config: Config {
                qps: 50,
                ..Config::default()
            },
            ..wanted
        };
        first.queue().add("ns/a");
        first.queue().add_after("ns/b", Duration::from_secs(60));
        let second = queues.for_plugin("p", Some(faster), &leading).unwrap();
        assert!(!Arc::ptr_eq(&first, &second));
        assert!(first.queue().queue().shutting_down(), "the old one stopped");
        assert_eq!(first.queue().size(), (0, 0), "and dropped its keys");
        assert!(queues.for_plugin("p", None, &leading).is_none());
        assert!(second.queue().queue().shutting_down());
        assert!(queues.all().is_empty());
    }
}
