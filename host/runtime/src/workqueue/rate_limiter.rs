//! client-go's workqueue rate limiters: how long a key waits before it is
//! retried. Owns the per-key failure counts and the overall token bucket;
//! it never queues anything (the rate-limited queue asks `when` and delays
//! the key by the answer).

use super::Key;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// client-go's `RateLimiter`.
pub trait RateLimiter: Send + Sync {
    /// How long `key` waits before its next retry (counting this one).
    fn when(&self, key: &str) -> Duration;
    /// Stop tracking `key`: its next failure starts a fresh backoff.
    fn forget(&self, key: &str);
    /// How many times `key` was retried since it was last forgotten.
    fn num_requeues(&self, key: &str) -> u32;
}

/// Per-key exponential backoff: `base * 2^failures`, capped at `max`
/// (client-go's `ItemExponentialFailureRateLimiter`).
pub struct ItemExponentialFailure {
    base: Duration,
    max: Duration,
    failures: Mutex<HashMap<Key, u32>>,
}

impl ItemExponentialFailure {
    pub fn new(base: Duration, max: Duration) -> Self {
        ItemExponentialFailure {
            base,
            max,
            failures: Mutex::default(),
        }
    }
}

impl RateLimiter for ItemExponentialFailure {
    fn when(&self, key: &str) -> Duration {
        let mut failures = self.failures.lock().unwrap();
        let exp = match failures.get_mut(key) {
            Some(n) => {
                let exp = *n;
                *n = n.saturating_add(1);
                exp
            }
            None => {
                failures.insert(key.into(), 1);
                0
            }
        };
        // An overflow (or anything past the cap) is the cap.
        2u32.checked_pow(exp)
            .and_then(|factor| self.base.checked_mul(factor))
            .map_or(self.max, |d| d.min(self.max))
    }

    fn forget(&self, key: &str) {
        self.failures.lock().unwrap().remove(key);
    }

    fn num_requeues(&self, key: &str) -> u32 {
        self.failures.lock().unwrap().get(key).copied().unwrap_or(0)
    }
}

/// An overall token bucket: `qps` tokens a second, at most `burst` saved;
/// a retry past the bucket waits for its token (client-go's
/// `BucketRateLimiter`, a reservation on `rate.Limiter`). Per key nothing.
pub struct Bucket {
    qps: f64,
    burst: f64,
    /// (tokens, when they were counted); below zero: reserved ahead.
    tokens: Mutex<(f64, Instant)>,
}

impl Bucket {
    /// `qps` and `burst` of at least 1 (a registration's are checked).
    pub fn new(qps: u32, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        Bucket {
            qps: f64::from(qps.max(1)),
            burst,
            tokens: Mutex::new((burst, Instant::now())),
        }
    }
}

impl RateLimiter for Bucket {
    fn when(&self, _key: &str) -> Duration {
        let mut t = self.tokens.lock().unwrap();
        let now = Instant::now();
        let refilled = (t.0 + (now - t.1).as_secs_f64() * self.qps).min(self.burst);
        let left = refilled - 1.0;
        *t = (left, now);
        if left >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-left / self.qps)
        }
    }

    fn forget(&self, _key: &str) {}

    fn num_requeues(&self, _key: &str) -> u32 {
        0
    }
}

/// The longest wait of several limiters (client-go's `MaxOfRateLimiter`).
pub struct MaxOf(pub Vec<Box<dyn RateLimiter>>);

impl RateLimiter for MaxOf {
    fn when(&self, key: &str) -> Duration {
        self.0.iter().map(|l| l.when(key)).max().unwrap_or_default()
    }

    fn forget(&self, key: &str) {
        for l in &self.0 {
            l.forget(key);
        }
    }

    fn num_requeues(&self, key: &str) -> u32 {
        self.0.iter().map(|l| l.num_requeues(key)).max().unwrap_or(0)
    }
}

/// client-go's `DefaultControllerRateLimiter` with the given numbers: the
/// per-key exponential backoff and the overall bucket, the longer wins.
pub fn controller(base: Duration, max: Duration, qps: u32, burst: u32) -> MaxOf {
    MaxOf(vec![
        Box::new(ItemExponentialFailure::new(base, max)),
        Box::new(Bucket::new(qps, burst)),
    ])
}

#[cfg(test)]
#[path = "rate_limiter_tests.rs"]
mod tests;
