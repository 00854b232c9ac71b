//! The plugins' work queues on `/metrics`, under client-go's workqueue
//! names (no `wink_` prefix, so dashboards made for client-go controllers
//! read them) besides wink's own refusals, labelled by plugin; and each queue's line of
//! `/debug/plugins`. Owns only that rendering.

use crate::runtime::manager::QueueStatus;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

type Labels = Vec<(&'static str, String)>;

/// Append the queues' metric families to `text` (an OpenMetrics exposition
/// ending in `# EOF`), before its end.
pub(super) fn append(text: &mut String, queues: &[(String, QueueStatus)]) {
    if queues.is_empty() {
        return;
    }
    let mut registry = Registry::default();
    let depth = Family::<Labels, Gauge>::default();
    let adds = Family::<Labels, Counter>::default();
    let retries = Family::<Labels, Counter>::default();
    let refused = Family::<Labels, Counter>::default();
    let unfinished = Family::<Labels, Gauge<f64, AtomicU64>>::default();
    let longest = Family::<Labels, Gauge<f64, AtomicU64>>::default();
    let mut waits = super::per_plugin::PerPlugin::new(
        "workqueue_queue_duration_seconds",
        "How long a key waits in a plugin's work queue before it is reconciled",
    );
    let mut work = super::per_plugin::PerPlugin::new(
        "workqueue_work_duration_seconds",
        "How long reconciling a key of a plugin's work queue takes",
    );
    for (plugin, q) in queues {
        let l: Labels = vec![("plugin", plugin.clone())];
        depth.get_or_create(&l).set(q.metrics.depth.get());
        adds.get_or_create(&l).inc_by(q.metrics.adds.get());
        retries.get_or_create(&l).inc_by(q.metrics.retries.get());
        refused.get_or_create(&l).inc_by(q.metrics.refused.get());
        unfinished.get_or_create(&l).set(q.unfinished.as_secs_f64());
        longest.get_or_create(&l).set(q.longest_running.as_secs_f64());
        waits.push(plugin, q.metrics.queue_duration.clone());
        work.push(plugin, q.metrics.work_duration.clone());
    }
    registry.register_collector(Box::new(waits));
    registry.register_collector(Box::new(work));
    registry.register("workqueue_depth", "Keys waiting in a plugin's work queue", depth);
    registry.register("workqueue_adds", "Keys added to a plugin's work queue", adds);
    registry.register(
        "workqueue_retries",
        "Rate-limited adds (retries) of a plugin's work queue",
        retries,
    );
    registry.register(
        "wink_workqueue_refused",
        "Keys a plugin added to its work queue that were refused, the queue full",
        refused,
    );
    registry.register(
        "workqueue_unfinished_work_seconds",
        "Time spent so far by the reconciles in progress of a plugin's work queue",
        unfinished,
    );
    registry.register(
        "workqueue_longest_running_processor_seconds",
        "How long the longest reconcile in progress of a plugin's work queue has run",
        longest,
    );
    let mut more = String::new();
    encode(&mut more, &registry).expect("metrics encode into a string");
    let end = text.rfind("# EOF").unwrap_or(text.len());
    text.insert_str(end, more.trim_end_matches("# EOF\n"));
}

/// A queue's state for `/debug/plugins`.
pub(super) fn debug(q: &QueueStatus) -> serde_json::Value {
    serde_json::json!({
        "depth": q.depth,
        "waiting": q.waiting,
        "oldest_key_age_seconds": q.oldest.map(|d| d.as_secs_f64()),
        "retries": q.metrics.retries.get(),
        "refused": q.metrics.refused.get(),
    })
}
