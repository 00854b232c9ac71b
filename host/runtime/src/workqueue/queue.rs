//! [`Queue`]: client-go's workqueue `Type`. Owns the three sets of a key's
//! life (queued in order, dirty = wanted again, processing = handed to a
//! worker) and shutting down; it never delays (`delaying`) nor rate limits
//! (`rate_limiter`), and knows nothing of plugins.
//!
//! A key is held once however often it is added; a key added while it is
//! processed is not handed to a second worker but queued again when the
//! first calls [`Queue::done`]; so a key is never processed twice at once.

use super::metrics::QueueMetrics;
use super::{Full, Key, Limits};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The queue's sets, under one lock.
#[derive(Default)]
struct State {
    /// Keys waiting for a worker, in the order they were added.
    queue: VecDeque<Key>,
    /// Keys that need processing: every queued key, and keys added again
    /// while they were processed.
    dirty: HashSet<Key>,
    /// Keys handed to a worker and not yet done, with when they were.
    processing: HashMap<Key, Instant>,
    /// When each queued key was added (for `queue_duration`).
    added: HashMap<Key, Instant>,
    /// Keys held (dirty or processing, each once) and their bytes.
    held: usize,
    bytes: usize,
    shutting_down: bool,
    /// Whether a shutdown waits for the keys being processed.
    drain: bool,
}

/// client-go's `workqueue.Type` for string keys.
pub struct Queue {
    state: Mutex<State>,
    /// A key was queued, or the queue shuts down.
    ready: Notify,
    /// The last key being processed was done, or a drain was cut short.
    idle: Notify,
    metrics: QueueMetrics,
}

impl Default for Queue {
    fn default() -> Self {
        Self::new(QueueMetrics::default())
    }
}

impl Queue {
    /// An empty queue recording into `metrics`.
    pub fn new(metrics: QueueMetrics) -> Self {
        Queue {
            state: Mutex::default(),
            ready: Notify::new(),
            idle: Notify::new(),
            metrics,
        }
    }

    /// Its metrics.
    pub fn metrics(&self) -> &QueueMetrics {
        &self.metrics
    }

    /// Mark `key` as needing processing. Ignored once shutting down; a key
    /// already dirty is not added twice; a key being processed is queued
    /// again only when it is done.
    pub fn add(&self, key: &str) {
        let mut s = self.state.lock().unwrap();
        self.add_locked(&mut s, key);
    }

    /// [`Queue::add`], unless `key` would be a new key past `limits` with
    /// `waiting` (keys, bytes) held elsewhere (the delaying queue's): then
    /// it is refused. A key already held is never refused.
    pub(super) fn add_within(&self, key: &str, limits: Limits, waiting: (usize, usize)) -> Result<(), Full> {
        let mut s = self.state.lock().unwrap();
        if !s.shutting_down && !s.dirty.contains(key) && !s.processing.contains_key(key) {
            limits.admit(key, (s.held + waiting.0, s.bytes + waiting.1))?;
        }
        self.add_locked(&mut s, key);
        Ok(())
    }

    fn add_locked(&self, s: &mut State, key: &str) {
        if s.shutting_down || s.dirty.contains(key) {
            return;
        }
        let key: Key = key.into();
        self.metrics.added();
        s.dirty.insert(key.clone());
        if s.processing.contains_key(&key) {
            return;
        }
        s.held += 1;
        s.bytes += key.len();
        self.push(s, key);
    }

    /// Keys held (queued, dirty or processing, each once) and their bytes.
    pub(super) fn size(&self) -> (usize, usize) {
        let s = self.state.lock().unwrap();
        (s.held, s.bytes)
    }

    /// Drop every key not being processed (a reconcile in progress still
    /// calls [`Queue::done`]).
    pub(super) fn clear(&self) {
        let mut s = self.state.lock().unwrap();
        s.queue = VecDeque::new();
        s.dirty = HashSet::new();
        s.added = HashMap::new();
        s.held = s.processing.len();
        s.bytes = s.processing.keys().map(|k| k.len()).sum();
        self.metrics.depth(0);
    }

    fn push(&self, s: &mut State, key: Key) {
        s.added.entry(key.clone()).or_insert_with(Instant::now);
        s.queue.push_back(key);
        self.metrics.depth(s.queue.len());
        self.ready.notify_one();
    }

    /// The number of keys waiting for a worker.
    pub fn len(&self) -> usize {
        self.state.lock().unwrap().queue.len()
    }

    /// Whether no key waits for a worker.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The next key to process, waiting for one; `None` once the queue
    /// shuts down and nothing is queued. The caller must call
    /// [`Queue::done`] with it.
    pub async fn get(&self) -> Option<Key> {
        loop {
            let ready = self.ready.notified();
            tokio::pin!(ready);
            ready.as_mut().enable();
            {
                let mut s = self.state.lock().unwrap();
                if let Some(key) = s.queue.pop_front() {
                    let now = Instant::now();
                    if let Some(added) = s.added.remove(&key) {
                        self.metrics.waited(now - added);
                    }
                    self.metrics.depth(s.queue.len());
                    s.dirty.remove(&key);
                    s.processing.insert(key.clone(), now);
                    // Another waiter may take the next key.
                    if !s.queue.is_empty() {
                        self.ready.notify_one();
                    }
                    return Some(key);
                }
                if s.shutting_down {
                    return None;
                }
            }
            ready.await;
        }
    }

    /// `key` is processed: it is queued again if it was added meanwhile.
    pub fn done(&self, key: &str) {
        let mut s = self.state.lock().unwrap();
        let Some((key, started)) = s.processing.remove_entry(key) else {
            return;
        };
        self.metrics.worked(Instant::now() - started);
        if s.dirty.contains(&key) {
            self.push(&mut s, key);
            return;
        }
        s.held -= 1;
        s.bytes -= key.len();
        if s.processing.is_empty() {
            self.idle.notify_waiters();
        }
    }

    /// Stop: later adds are ignored, and `get` answers `None` once nothing
    /// is queued. Cuts short a [`Queue::shut_down_with_drain`] under way.
    pub fn shut_down(&self) {
        let mut s = self.state.lock().unwrap();
        s.shutting_down = true;
        s.drain = false;
        self.ready.notify_waiters();
        self.idle.notify_waiters();
    }

    /// Stop as [`Queue::shut_down`] does, then wait until every key being
    /// processed is done (or a plain shut down cuts the wait short).
    pub async fn shut_down_with_drain(&self) {
        {
            let mut s = self.state.lock().unwrap();
            s.shutting_down = true;
            s.drain = true;
            self.ready.notify_waiters();
        }
        loop {
            let idle = self.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            {
                let s = self.state.lock().unwrap();
                if !s.drain || s.processing.is_empty() {
                    return;
                }
            }
            idle.await;
        }
    }

    /// Whether the queue is shutting down.
    pub fn shutting_down(&self) -> bool {
        self.state.lock().unwrap().shutting_down
    }

    /// For the unfinished-work metrics: how long each key being processed
    /// has been, summed, and the longest.
    pub fn in_progress(&self) -> (std::time::Duration, std::time::Duration) {
        let s = self.state.lock().unwrap();
        let now = Instant::now();
        s.processing
            .values()
            .map(|started| now - *started)
            .fold(Default::default(), |(sum, max), d| (sum + d, max.max(d)))
    }

    /// How long the oldest queued key has waited.
    pub fn oldest(&self) -> Option<std::time::Duration> {
        let s = self.state.lock().unwrap();
        s.added.values().min().map(|t| Instant::now() - *t)
    }

    /// How many keys the queue holds (queued, dirty or processing): its
    /// memory is proportional to this.
    pub fn held(&self) -> usize {
        self.state.lock().unwrap().held
    }
}

#[cfg(test)]
#[path = "queue_tests.rs"]
mod tests;
