//! [`Delaying`]: client-go's delaying queue. Owns the keys waiting for
//! their time (a min-heap of ready times, one entry per key, deduplicated
//! to the earliest) and the waiting loop that adds them to the [`Queue`]
//! when due. It never processes, rate limits or forgets keys.

use super::{Full, Key, Limits, Queue};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The keys waiting for their time.
#[derive(Default)]
struct Waiting {
    /// Each waiting key's ready time: the truth, one entry per key.
    ready_at: HashMap<Key, Instant>,
    /// Ready times, earliest first; an entry whose time is not its key's
    /// in `ready_at` any more is stale and skipped.
    heap: BinaryHeap<Reverse<(Instant, Key)>>,
    /// The bytes of the keys in `ready_at`.
    bytes: usize,
}

impl Waiting {
    /// Wait for `key` until `at`, or keep its earlier time.
    fn insert(&mut self, key: &str, at: Instant) -> bool {
        match self.ready_at.get_mut(key) {
            Some(t) if *t <= at => return false,
            Some(t) => *t = at,
            None => {
                self.ready_at.insert(key.into(), at);
                self.bytes += key.len();
            }
        }
        let key = self.ready_at.get_key_value(key).expect("just inserted").0.clone();
        self.heap.push(Reverse((at, key)));
        // Stale entries are bounded: past twice the keys, rebuild.
        if self.heap.len() > 2 * self.ready_at.len() + 16 {
            self.heap = self
                .ready_at
                .iter()
                .map(|(k, t)| Reverse((*t, k.clone())))
                .collect();
        }
        true
    }

    /// The keys due at `now`, earliest first, and when the next one is.
    fn due(&mut self, now: Instant) -> (Vec<Key>, Option<Instant>) {
        let mut due = Vec::new();
        while let Some(Reverse((at, key))) = self.heap.peek() {
            if self.ready_at.get(key) != Some(at) {
                self.heap.pop();
                continue;
            }
            if *at > now {
                return (due, Some(*at));
            }
            let Reverse((_, key)) = self.heap.pop().expect("peeked");
            self.ready_at.remove(&key);
            self.bytes -= key.len();
            due.push(key);
        }
        (due, None)
    }
}

struct Inner {
    queue: Arc<Queue>,
    waiting: Mutex<Waiting>,
    /// A key now waits for an earlier time than the loop sleeps to, or the
    /// queue shuts down.
    changed: Notify,
}

/// A [`Queue`] with `add_after`: a key added with a delay is added when
/// the delay has passed (client-go's `DelayingInterface`).
#[derive(Clone)]
pub struct Delaying {
    inner: Arc<Inner>,
}

impl Delaying {
    /// Wrap `queue` and start its waiting loop on the current tokio runtime;
    /// the loop ends when the queue shuts down.
    pub fn new(queue: Arc<Queue>) -> Self {
        let inner = Arc::new(Inner {
            queue,
            waiting: Mutex::default(),
            changed: Notify::new(),
        });
        tokio::spawn(waiting_loop(inner.clone()));
        Delaying { inner }
    }

    /// The queue keys are added to.
    pub fn queue(&self) -> &Arc<Queue> {
        &self.inner.queue
    }

    /// Add `key` after `delay` (at once for none). A key already waiting
    /// keeps the earlier of its two times.
    pub fn add_after(&self, key: &str, delay: Duration) {
        if self.inner.queue.shutting_down() {
            return;
        }
        if delay.is_zero() {
            self.inner.queue.add(key);
            return;
        }
        let at = Instant::now() + delay;
        if self.inner.waiting.lock().unwrap().insert(key, at) {
            self.inner.changed.notify_one();
        }
    }

    /// [`Delaying::add_after`], unless `key` would be a new waiting key
    /// past `limits` with `queued` (keys, bytes) held by the queue: then it
    /// is refused. A key already waiting is never refused.
    pub(super) fn add_after_within(
        &self,
        key: &str,
        delay: Duration,
        limits: Limits,
        queued: (usize, usize),
    ) -> Result<(), Full> {
        if self.inner.queue.shutting_down() {
            return Ok(());
        }
        let at = Instant::now() + delay;
        let mut w = self.inner.waiting.lock().unwrap();
        if !w.ready_at.contains_key(key) {
            limits.admit(key, (queued.0 + w.ready_at.len(), queued.1 + w.bytes))?;
        }
        if w.insert(key, at) {
            self.inner.changed.notify_one();
        }
        Ok(())
    }

    /// How many keys wait for their time.
    pub fn waiting(&self) -> usize {
        self.inner.waiting.lock().unwrap().ready_at.len()
    }

    /// The keys waiting and their bytes.
    pub(super) fn size(&self) -> (usize, usize) {
        let w = self.inner.waiting.lock().unwrap();
        (w.ready_at.len(), w.bytes)
    }

    /// Drop every waiting key.
    pub(super) fn clear(&self) {
        *self.inner.waiting.lock().unwrap() = Waiting::default();
        self.inner.changed.notify_one();
    }

    /// Shut the queue down and end the waiting loop.
    pub fn shut_down(&self) {
        self.inner.queue.shut_down();
        self.inner.changed.notify_one();
    }
}

/// Add keys to the queue as they come due; sleep until the next one or a
/// change.
async fn waiting_loop(inner: Arc<Inner>) {
    loop {
        if inner.queue.shutting_down() {
            return;
        }
        let (due, next) = inner.waiting.lock().unwrap().due(Instant::now());
        for key in due {
            inner.queue.add(&key);
        }
        match next {
            Some(at) => {
                tokio::select! {
                    _ = tokio::time::sleep_until(at) => {}
                    _ = inner.changed.notified() => {}
                }
            }
            None => inner.changed.notified().await,
        }
    }
}

#[cfg(test)]
#[path = "delaying_tests.rs"]
mod tests;
