//! client-go's workqueue for plugins' keys: [`Queue`] (dedupe, the dirty
//! and processing sets, shutdown with drain), [`Delaying`] (`add_after`),
//! the [`rate_limiter`]s and [`RateLimiting`], which puts them together as
//! a controller's queue, with its [`QueueMetrics`].
//!
//! Owns the queue's semantics and numbers only: which keys go in, who
//! processes them and when a plugin may is decided by the manager's
//! reconciling (`crate::manager`). Times are tokio's, so tests can pause
//! them.

mod delaying;
mod metrics;
mod queue;
pub mod rate_limiter;

pub use delaying::Delaying;
pub use metrics::QueueMetrics;
pub use queue::Queue;
pub use rate_limiter::RateLimiter;

use std::sync::Arc;
use std::time::Duration;

/// A key: `namespace/name`, or `name` for cluster-scoped objects (shared,
/// so the sets hold one copy).
pub type Key = Arc<str>;

/// The most keys a plugin's queue holds (queued, being reconciled, or
/// waiting for their delay) before the plugin's own adds of new keys are
/// refused.
pub const MAX_KEYS: usize = 50_000;

/// The most bytes of key text it holds so (a key is at most 507 bytes).
pub const MAX_KEY_BYTES: usize = 8 << 20;

/// How much a queue holds before new keys are refused ([`RateLimiting::try_add`]):
/// keys the host adds for the objects of the queue's resource are never
/// refused (the cache bounds them); a plugin's own adds are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub keys: usize,
    pub bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            keys: MAX_KEYS,
            bytes: MAX_KEY_BYTES,
        }
    }
}

impl Limits {
    /// Whether `key`, a new key, fits beside `held` (keys, bytes).
    fn admit(&self, key: &str, held: (usize, usize)) -> Result<(), Full> {
        if held.0 >= self.keys || held.1 + key.len() > self.bytes {
            return Err(Full(*self));
        }
        Ok(())
    }
}

/// A key refused: the queue holds as much as its [`Limits`] allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full(pub Limits);

impl std::fmt::Display for Full {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the work queue is full (it holds at most {} keys and {} bytes of keys); \
             new keys are refused until reconciles drain it",
            self.0.keys, self.0.bytes
        )
    }
}

impl std::error::Error for Full {}

/// A queue's numbers (a registration's `queue` record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// The first retry delay; doubles per consecutive failure of a key ...
    pub base_delay: Duration,
    /// ... up to this.
    pub max_delay: Duration,
    /// Overall retries per second ...
    pub qps: u32,
    /// ... and their burst.
    pub burst: u32,
}

impl Default for Config {
    /// client-go's `DefaultControllerRateLimiter`: 5 ms → 1,000 s per key,
    /// 10 qps with a burst of 100 overall.
    fn default() -> Self {
        Config {
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_secs(1000),
            qps: 10,
            burst: 100,
        }
    }
}

impl Config {
    /// Refuse numbers that make no queue: a zero delay, rate or burst, or a
    /// cap below the first delay.
    pub fn check(&self) -> Result<(), String> {
        if self.base_delay.is_zero() {
            return Err("its queue's base-delay-ms is 0: at least 1".into());
        }
        if self.max_delay < self.base_delay {
            return Err(format!(
                "its queue's max-delay-ms ({} ms) is below its base-delay-ms ({} ms)",
                self.max_delay.as_millis(),
                self.base_delay.as_millis()
            ));
        }
        if self.qps == 0 || self.burst == 0 {
            return Err(format!(
                "its queue's qps ({}) and burst ({}) must be at least 1",
                self.qps, self.burst
            ));
        }
        Ok(())
    }
}

/// client-go's rate-limiting queue: a [`Delaying`] queue whose
/// `add_rate_limited` delays a key by what its [`RateLimiter`] says.
#[derive(Clone)]
pub struct RateLimiting {
    delaying: Delaying,
    limiter: Arc<dyn RateLimiter>,
    limits: Limits,
}

impl RateLimiting {
    /// A queue with client-go's controller rate limiter on `config`'s
    /// numbers, on the current tokio runtime.
    pub fn new(config: Config, metrics: QueueMetrics) -> Self {
        let limiter = rate_limiter::controller(config.base_delay, config.max_delay, config.qps, config.burst);
        Self::with_limiter(Arc::new(limiter), metrics)
    }

    /// A queue with `limiter`.
    pub fn with_limiter(limiter: Arc<dyn RateLimiter>, metrics: QueueMetrics) -> Self {
        RateLimiting {
            delaying: Delaying::new(Arc::new(Queue::new(metrics))),
            limiter,
            limits: Limits::default(),
        }
    }

    /// The same queue refusing new keys past `limits`.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The queue itself (`get`, `done`, `len`, shutting down).
    pub fn queue(&self) -> &Queue {
        self.delaying.queue()
    }

    /// Add `key` now.
    pub fn add(&self, key: &str) {
        self.queue().add(key);
    }

    /// Add `key` after `delay`.
    pub fn add_after(&self, key: &str, delay: Duration) {
        self.delaying.add_after(key, delay);
    }

    /// Add `key` now, unless it is a new key and the queue holds as much as
    /// its [`Limits`] allow (queued, being processed and waiting keys
    /// together): a refusal is counted (`refused`).
    pub fn try_add(&self, key: &str) -> Result<(), Full> {
        let waiting = self.delaying.size();
        let added = self.queue().add_within(key, self.limits, waiting);
        self.count(added)
    }

    /// [`RateLimiting::add_after`] within the limits, as [`RateLimiting::try_add`].
    pub fn try_add_after(&self, key: &str, delay: Duration) -> Result<(), Full> {
        if delay.is_zero() {
            return self.try_add(key);
        }
        let queued = self.queue().size();
        let added = self.delaying.add_after_within(key, delay, self.limits, queued);
        self.count(added)
    }

    fn count(&self, added: Result<(), Full>) -> Result<(), Full> {
        if added.is_err() {
            self.queue().metrics().refused.inc();
        }
        added
    }

    /// Keys held, queued or waiting (each once per place), and their bytes.
    pub fn size(&self) -> (usize, usize) {
        let (qk, qb) = self.queue().size();
        let (wk, wb) = self.delaying.size();
        (qk + wk, qb + wb)
    }

    /// Shut down and drop every key queued or waiting, at once (the key
    /// being processed still finishes).
    pub fn shut_down_and_empty(&self) {
        self.delaying.shut_down();
        self.queue().clear();
        self.delaying.clear();
    }

    /// Add `key` when its rate limiter allows: a retry.
    pub fn add_rate_limited(&self, key: &str) {
        if self.queue().shutting_down() {
            return;
        }
        self.queue().metrics().retried();
        self.delaying.add_after(key, self.limiter.when(key));
    }

    /// Stop tracking `key`'s retries (after a success).
    pub fn forget(&self, key: &str) {
        self.limiter.forget(key);
    }

    /// How many times `key` was retried since it was last forgotten.
    pub fn num_requeues(&self, key: &str) -> u32 {
        self.limiter.num_requeues(key)
    }

    /// How many keys wait for their delay.
    pub fn waiting(&self) -> usize {
        self.delaying.waiting()
    }

    /// Stop at once (see [`Queue::shut_down`]).
    pub fn shut_down(&self) {
        self.delaying.shut_down();
    }

    /// Stop, then wait for the keys being processed (see
    /// [`Queue::shut_down_with_drain`]).
    pub async fn shut_down_with_drain(&self) {
        self.delaying.shut_down();
        self.queue().shut_down_with_drain().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_numbers_are_checked() {
        Config::default().check().unwrap();
        let ms = Duration::from_millis;
        let bad = [
            Config {
                base_delay: ms(0),
                ..Config::default()
            },
            Config {
                base_delay: ms(10),
                max_delay: ms(5),
                ..Config::default()
            },
            Config {
                qps: 0,
                ..Config::default()
            },
            Config {
                burst: 0,
                ..Config::default()
            },
        ];
        for c in bad {
            assert!(c.check().is_err(), "{c:?} passed");
        }
    }

    /// client-go's TestRateLimitingQueue: rate-limited adds wait for their
    /// backoff, `forget` resets it, and a key is held once.
    #[tokio::test(start_paused = true)]
    async fn rate_limited_adds_back_off_and_forget_resets() {
        let limiter = Arc::new(rate_limiter::ItemExponentialFailure::new(
            Duration::from_millis(1),
            Duration::from_secs(1),
        ));
        let q = RateLimiting::with_limiter(limiter, QueueMetrics::default());
        q.add_rate_limited("one");
        q.add_rate_limited("one");
        q.add_rate_limited("two");
        assert_eq!(q.waiting(), 2, "one key waits once");
        assert_eq!(q.num_requeues("one"), 2);
        assert_eq!(q.queue().metrics().retries.get(), 3);
        tokio::time::sleep(Duration::from_millis(1)).await;
        tokio::task::yield_now().await;
        assert_eq!(q.queue().len(), 2, "both came due after the first delay (1 ms)");
        q.forget("one");
        assert_eq!(q.num_requeues("one"), 0);
        assert_eq!(q.num_requeues("two"), 1);
        q.shut_down();
    }

    /// Past its limits a queue refuses new keys, queued or waiting, and
    /// counts each refusal; a key it holds is still accepted, host adds are
    /// never refused, and a key reconciled frees its room.
    #[tokio::test(start_paused = true)]
    async fn new_keys_past_the_limits_are_refused_and_counted() {
        let q = RateLimiting::new(Config::default(), QueueMetrics::default())
            .with_limits(Limits { keys: 3, bytes: 100 });
        q.try_add("a").unwrap();
        q.try_add_after("b", Duration::from_secs(60)).unwrap();
        q.try_add("c").unwrap();
        assert_eq!(q.size(), (3, 3));
        assert_eq!(q.try_add("d"), Err(Full(q.limits)));
        assert_eq!(q.try_add_after("d", Duration::from_secs(1)), Err(Full(q.limits)));
        assert_eq!(q.queue().metrics().refused.get(), 2);
        // Held keys again: no growth, no refusal.
        q.try_add("a").unwrap();
        q.try_add_after("b", Duration::from_secs(1)).unwrap();
        assert_eq!(q.queue().metrics().refused.get(), 2);
        // The host's own adds go in regardless.
        q.add("host");
        assert_eq!(q.size(), (4, 7));
        // Reconciling a key frees its room; a key being reconciled is held.
        let k = q.queue().get().await.unwrap();
        assert_eq!(q.size(), (4, 7), "a key being reconciled is held");
        q.queue().done(&k);
        let k = q.queue().get().await.unwrap();
        q.queue().done(&k);
        q.try_add("d").unwrap();
        assert_eq!(q.size(), (3, 6), "b waiting, host and d queued");
        // Bytes: a key that would pass the byte cap is refused.
        let long = "x".repeat(98);
        assert!(q.try_add(&long).is_err(), "6 + 98 bytes > 100");
        q.shut_down();
    }

    /// Emptied, a queue holds nothing, queued or waiting, even while a clone
    /// of it is still held elsewhere (by a plugin's instance).
    #[tokio::test(start_paused = true)]
    async fn an_emptied_queue_drops_its_keys_at_once() {
        let q = RateLimiting::new(Config::default(), QueueMetrics::default());
        let held_elsewhere = q.clone();
        for i in 0..100 {
            q.try_add(&format!("now-{i}")).unwrap();
            q.try_add_after(&format!("later-{i}"), Duration::from_secs(3600))
                .unwrap();
        }
        let k = q.queue().get().await.unwrap();
        assert_eq!(q.size().0, 200);
        q.shut_down_and_empty();
        assert_eq!((q.queue().len(), q.waiting()), (0, 0));
        assert_eq!(
            held_elsewhere.size(),
            (1, k.len()),
            "only the key being reconciled"
        );
        q.queue().done(&k);
        assert_eq!(held_elsewhere.size(), (0, 0));
        assert_eq!(q.queue().metrics().depth.get(), 0);
    }
}
