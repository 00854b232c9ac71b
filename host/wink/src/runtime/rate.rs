//! Token buckets: the one rate limiter of plugins' writes, Events and log
//! lines. Owns the arithmetic; callers decide whether to wait or to drop.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A token bucket: `burst` requests at once, `qps` sustained.
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    state: Mutex<(f64, Instant)>,
}

impl TokenBucket {
    /// A full bucket.
    pub fn new(qps: f64, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        TokenBucket {
            qps: qps.max(0.001),
            burst,
            state: Mutex::new((burst, Instant::now())),
        }
    }

    /// Take one token if one is there now (to drop what is over the rate).
    pub fn try_take(&self) -> bool {
        let mut state = self.state.lock().unwrap();
        let now = Instant::now();
        let (tokens, at) = *state;
        let tokens = (tokens + now.duration_since(at).as_secs_f64() * self.qps).min(self.burst);
        let taken = tokens >= 1.0;
        *state = (if taken { tokens - 1.0 } else { tokens }, now);
        taken
    }

    /// Take one token; returns how long the caller must wait before using it.
    pub fn reserve(&self) -> Duration {
        let mut state = self.state.lock().unwrap();
        let now = Instant::now();
        let (tokens, at) = *state;
        let tokens = (tokens + now.duration_since(at).as_secs_f64() * self.qps).min(self.burst) - 1.0;
        *state = (tokens, now);
        if tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-tokens / self.qps)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_bucket_allows_its_burst_then_paces() {
        let b = TokenBucket::new(10.0, 3);
        for _ in 0..3 {
            assert_eq!(b.reserve(), Duration::ZERO);
        }
        let wait = b.reserve();
        assert!(
            wait > Duration::from_millis(50) && wait <= Duration::from_millis(100),
            "{wait:?}"
        );
        let next = b.reserve();
        assert!(next > wait, "each reservation waits its turn: {next:?}");
    }

    #[test]
    fn try_take_drops_past_the_burst() {
        let b = TokenBucket::new(1.0, 2);
        assert!(b.try_take() && b.try_take());
        assert!(!b.try_take(), "empty: dropped, not queued");
    }
}
