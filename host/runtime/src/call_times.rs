//! The durations of one instance's calls into its guest, recorded on every
//! call with three relaxed atomic adds: no lock and no float math on the
//! call path (a bucket is found among integer nanosecond bounds). Encoded as
//! a Prometheus histogram with the bounds the metric has always had, 10 µs
//! × 4ⁱ. Owns only these counts; the metric's name and labels are the
//! daemon's.

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the buckets, in nanoseconds: 10 µs × 4ⁱ, i < 9.
const BOUNDS: [u64; 9] = [
    10_000,
    40_000,
    160_000,
    640_000,
    2_560_000,
    10_240_000,
    40_960_000,
    163_840_000,
    655_360_000,
];

#[derive(Debug, Default)]
struct Counts {
    /// Calls per bucket (not cumulative); the last is past every bound.
    buckets: [AtomicU64; BOUNDS.len() + 1],
    count: AtomicU64,
    sum_nanos: AtomicU64,
}

/// One instance's call durations; clones share the counts.
#[derive(Debug, Clone, Default)]
pub struct CallTimes(Arc<Counts>);

impl CallTimes {
    /// Count a call that took `took`.
    pub fn record(&self, took: Duration) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let bucket = BOUNDS.iter().position(|b| nanos <= *b).unwrap_or(BOUNDS.len());
        self.0.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.0.count.fetch_add(1, Ordering::Relaxed);
        self.0.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// Calls counted so far.
    pub fn count(&self) -> u64 {
        self.0.count.load(Ordering::Relaxed)
    }

    /// (sum in seconds, count, each bucket's upper bound in seconds and its
    /// own count), as the histogram encoding takes them.
    fn snapshot(&self) -> (f64, u64, Vec<(f64, u64)>) {
        let bounds = BOUNDS.iter().map(|b| *b as f64 / 1e9).chain([f64::INFINITY]);
        let buckets = bounds
            .zip(&self.0.buckets)
            .map(|(b, n)| (b, n.load(Ordering::Relaxed)))
            .collect();
        let sum = self.0.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
        (sum, self.count(), buckets)
    }
}

impl CallTimes {
    /// The counts of `self` and `other` together (a copy, read now): a
    /// plugin's event instance and its admission pool, shown as one.
    pub fn merged(&self, other: &CallTimes) -> CallTimes {
        let both = CallTimes::default();
        for (i, n) in both.0.buckets.iter().enumerate() {
            n.store(
                self.0.buckets[i].load(Ordering::Relaxed) + other.0.buckets[i].load(Ordering::Relaxed),
                Ordering::Relaxed,
            );
        }
        let add = |f: fn(&Counts) -> &AtomicU64| {
            f(&self.0).load(Ordering::Relaxed) + f(&other.0).load(Ordering::Relaxed)
        };
        both.0.count.store(add(|c| &c.count), Ordering::Relaxed);
        both.0.sum_nanos.store(add(|c| &c.sum_nanos), Ordering::Relaxed);
        both
    }
}

/// Calls counted and timed together, shared by the instances that make
/// them: a plugin's admission pool keeps one for all its instances, so its
/// calls add up whichever instance made them, replaced ones included.
#[derive(Debug, Clone, Default)]
pub struct CallCounts {
    pub calls: Arc<AtomicU64>,
    pub times: CallTimes,
}

impl CallCounts {
    /// Calls started so far.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }
}

impl EncodeMetric for CallTimes {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let (sum, count, buckets) = self.snapshot();
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;
    use prometheus_client::registry::Registry;

    #[test]
    fn calls_land_in_their_buckets_and_encode_as_a_histogram() {
        let t = CallTimes::default();
        let shared = t.clone();
        for micros in [5, 10, 11, 700, 2_000_000] {
            shared.record(Duration::from_micros(micros));
        }
        let (sum, count, buckets) = t.snapshot();
        assert_eq!(count, 5);
        assert!((sum - 2.000726).abs() < 1e-9, "{sum}");
        let counts: Vec<u64> = buckets.iter().map(|b| b.1).collect();
        assert_eq!(counts, [2, 1, 0, 0, 1, 0, 0, 0, 0, 1]);
        let mut registry = Registry::default();
        registry.register("calls", "durations", t);
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        assert!(text.contains("# TYPE calls histogram"), "{text}");
        assert!(text.contains("calls_bucket{le=\"0.00001\"} 2"), "{text}");
        assert!(text.contains("calls_bucket{le=\"0.00004\"} 3"), "{text}");
        assert!(text.contains("calls_bucket{le=\"+Inf\"} 5"), "{text}");
        assert!(text.contains("calls_count 5"), "{text}");
    }

    #[test]
    fn merged_times_add_both_sides_and_stay_a_copy() {
        let (a, b) = (CallTimes::default(), CallTimes::default());
        a.record(Duration::from_micros(5));
        b.record(Duration::from_micros(5));
        b.record(Duration::from_secs(1));
        let both = a.merged(&b);
        let (sum, count, buckets) = both.snapshot();
        assert_eq!(count, 3);
        assert!((sum - 1.00001).abs() < 1e-9, "{sum}");
        let counts: Vec<u64> = buckets.iter().map(|b| b.1).collect();
        assert_eq!(counts, [2, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        a.record(Duration::from_micros(5));
        assert_eq!(both.count(), 3, "a copy, not shared");
    }
}
