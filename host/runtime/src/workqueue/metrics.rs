//! [`QueueMetrics`]: one queue's client-go workqueue metrics (depth, adds,
//! time queued, time worked, retries) and its refusals (a full
//! queue's, wink's own). Owns the instruments only; the queue
//! records into them and the admin server exports them, labelled by plugin.
//! The unfinished-work gauges are computed when scraped
//! ([`super::Queue::in_progress`]).

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use std::time::Duration;

/// The instruments of one queue (clones share them).
#[derive(Clone)]
pub struct QueueMetrics {
    /// `workqueue_depth`.
    pub depth: Gauge,
    /// `workqueue_adds_total`.
    pub adds: Counter,
    /// `workqueue_queue_duration_seconds`: from add to a worker's get.
    pub queue_duration: Histogram,
    /// `workqueue_work_duration_seconds`: from get to done.
    pub work_duration: Histogram,
    /// `workqueue_retries_total`: rate-limited adds.
    pub retries: Counter,
    /// `wink_workqueue_refused_total`: new keys refused, the queue full.
    pub refused: Counter,
}

impl Default for QueueMetrics {
    fn default() -> Self {
        // client-go's buckets: 10 ns to 10 s... by tens (1e-8 .. 1e1).
        let buckets = || Histogram::new(exponential_buckets(1e-8, 10.0, 10));
        QueueMetrics {
            depth: Gauge::default(),
            adds: Counter::default(),
            queue_duration: buckets(),
            work_duration: buckets(),
            retries: Counter::default(),
            refused: Counter::default(),
        }
    }
}

impl QueueMetrics {
    pub(super) fn added(&self) {
        self.adds.inc();
    }

    pub(super) fn depth(&self, len: usize) {
        self.depth.set(len as i64);
    }

    pub(super) fn waited(&self, d: Duration) {
        self.queue_duration.observe(d.as_secs_f64());
    }

    pub(super) fn worked(&self, d: Duration) {
        self.work_duration.observe(d.as_secs_f64());
    }

    pub(super) fn retried(&self) {
        self.retries.inc();
    }
}
