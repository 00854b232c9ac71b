//! Token buckets: the one rate limiter of plugins' writes, Events and log
//! lines, and the [`Rate`] the grants file gives them, checked when it is
//! parsed. Owns the arithmetic; callers decide whether to wait or to drop.

use serde::{Deserialize, Serialize};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The slowest rate a grant may set: one write per 1,000 s.
pub const MIN_QPS: f64 = 0.001;

/// The fastest rate a grant may set.
pub const MAX_QPS: f64 = 1_000_000.0;

/// The largest burst a grant may set.
pub const MAX_BURST: u32 = 1_000_000;

/// A token-bucket rate: `qps` sustained, `burst` at once. Read from a
/// grants file only within [`MIN_QPS`]..=[`MAX_QPS`] and 1..=[`MAX_BURST`]:
/// a rate of 0 (every write waiting forever) or NaN is an error there.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RateFields")]
pub struct Rate {
    pub qps: f64,
    pub burst: u32,
}

/// A rate as written, before it is checked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RateFields {
    qps: f64,
    burst: u32,
}

impl TryFrom<RateFields> for Rate {
    type Error = String;

    fn try_from(f: RateFields) -> Result<Rate, String> {
        if !(MIN_QPS..=MAX_QPS).contains(&f.qps) {
            return Err(format!(
                "rate.qps must be a number from {MIN_QPS} (one write per {} s) to {MAX_QPS}, not {}",
                1.0 / MIN_QPS,
                f.qps
            ));
        }
        if !(1..=MAX_BURST).contains(&f.burst) {
            return Err(format!(
                "rate.burst must be from 1 to {MAX_BURST}, not {}",
                f.burst
            ));
        }
        Ok(Rate {
            qps: f.qps,
            burst: f.burst,
        })
    }
}

/// A token bucket: `burst` requests at once, `qps` sustained.
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    state: Mutex<(f64, Instant)>,
}

impl TokenBucket {
    /// A full bucket.
    pub fn new(qps: f64, burst: u32) -> Self {
        Self::new_at(qps, burst, Instant::now())
    }

    /// A bucket full at `now`.
    pub fn new_at(qps: f64, burst: u32, now: Instant) -> Self {
        let burst = f64::from(burst.max(1));
        TokenBucket {
            qps: qps.max(0.001),
            burst,
            state: Mutex::new((burst, now)),
        }
    }

    /// Whether the bucket is full again at `now` (it has refilled since it
    /// was last taken from: forgetting it loses nothing).
    pub fn is_full_at(&self, now: Instant) -> bool {
        let (tokens, at) = *self.state.lock().unwrap();
        tokens + now.saturating_duration_since(at).as_secs_f64() * self.qps >= self.burst
    }

    /// Take one token if one is there now (to drop what is over the rate).
    pub fn try_take(&self) -> bool {
        self.try_take_at(Instant::now())
    }

    /// [`TokenBucket::try_take`] at `now` (a later instant than the last).
    pub fn try_take_at(&self, now: Instant) -> bool {
        let mut state = self.state.lock().unwrap();
        let (tokens, at) = *state;
        let tokens = (tokens + now.saturating_duration_since(at).as_secs_f64() * self.qps).min(self.burst);
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

    fn grant_rate(rate: &str) -> Result<crate::grants::Grants, String> {
        let text = format!("plugins:\n  probe:\n    rate: {rate}\n");
        crate::grants::Grants::parse(text.as_bytes())
    }

    #[test]
    fn rates_out_of_bounds_are_refused_naming_the_plugin_and_field() {
        for (rate, field) in [
            ("{qps: 0, burst: 5}", "rate.qps"),
            ("{qps: -1, burst: 5}", "rate.qps"),
            ("{qps: .nan, burst: 5}", "rate.qps"),
            ("{qps: .inf, burst: 5}", "rate.qps"),
            ("{qps: 0.0000001, burst: 5}", "rate.qps"),
            ("{qps: 1e12, burst: 5}", "rate.qps"),
            ("{qps: 5, burst: 0}", "rate.burst"),
            ("{qps: 5, burst: 2000000}", "rate.burst"),
        ] {
            let e = grant_rate(rate).expect_err(rate);
            assert!(e.contains("probe") && e.contains(field), "{rate}: {e}");
        }
        let daemon = "daemon:\n  rate: {qps: 0, burst: 1}\n";
        let e = crate::grants::Grants::parse(daemon.as_bytes()).unwrap_err();
        assert!(e.contains("daemon") && e.contains("rate.qps"), "{e}");
    }

    #[test]
    fn rates_within_bounds_are_read_as_given() {
        let g = grant_rate("{qps: 0.5, burst: 1}").unwrap();
        let rate = g.plugins["probe"].rate.unwrap();
        assert_eq!(rate, Rate { qps: 0.5, burst: 1 });
        assert!(grant_rate(&format!("{{qps: {MIN_QPS}, burst: {MAX_BURST}}}")).is_ok());
        assert!(grant_rate(&format!("{{qps: {MAX_QPS}, burst: 1}}")).is_ok());
    }

    #[test]
    fn try_take_drops_past_the_burst() {
        let b = TokenBucket::new(1.0, 2);
        assert!(b.try_take() && b.try_take());
        assert!(!b.try_take(), "empty: dropped, not queued");
    }
}
