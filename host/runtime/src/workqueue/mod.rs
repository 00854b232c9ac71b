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
        }
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
}
