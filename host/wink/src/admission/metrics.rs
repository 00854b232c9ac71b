//! What the webhook server counts of the requests it serves, per plugin
//! and door (`validate`, `mutate`): each request by the answer wink gave
//! (the plugin's own: `allowed`, `denied`, `patched`; or its failure
//! policy's, named by why the plugin gave none, with the `policy` applied),
//! how long each took from its first byte read to its answer, and the
//! deadlines hit; and per plugin, the audit-mode results not recorded, by
//! why (`rate`: over their peer's rate; `full`: the trail full of results
//! about objects that exist); and per connection, how its TLS handshake
//! ended and how long it took (a client that reconnects for every review
//! pays a handshake each time: this is where it shows). Owns only these
//! counts; the admin server registers them under their names at scrape
//! time.
//!
//! A request's series are found once per plugin and door (and result) and
//! kept ([`DoorSeries`]): counting a request then takes no allocation and
//! no lookup of label sets in the families.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use wink_runtime::admission::Decision;
use wink_runtime::admission::audit::Unrecorded;
use wink_runtime::instance::Door;

/// Bucket bounds, seconds: the API server's own
/// (`apiserver_admission_webhook_admission_duration_seconds`: 5 ms to
/// 25 s), with finer ones under it, where a plugin's answer usually is.
pub const BUCKETS: [f64; 14] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 1.0, 2.5, 10.0, 25.0,
];

type Labels = Vec<(&'static str, String)>;
type Times = Family<Labels, Histogram, fn() -> Histogram>;

/// The webhook server's counts; clones share them.
#[derive(Debug, Clone)]
pub struct AdmissionMetrics {
    requests: Family<Labels, Counter>,
    seconds: Times,
    deadlines: Family<Labels, Counter>,
    unrecorded: Family<Labels, Counter>,
    /// Each plugin's series, by door ([`door_index`]).
    series: Arc<RwLock<HashMap<String, Doors>>>,
    connections: Family<Labels, Counter>,
    handshakes: Histogram,
}

/// How a connection's TLS handshake ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handshake {
    /// Done: the connection serves reviews.
    Done,
    /// The client's TLS was refused (or it went away).
    Failed,
    /// Not done within the handshake's deadline.
    TimedOut,
}

impl Handshake {
    fn name(self) -> &'static str {
        match self {
            Handshake::Done => "served",
            Handshake::Failed => "handshake_failed",
            Handshake::TimedOut => "handshake_timeout",
        }
    }
}

/// Bucket bounds of a handshake, seconds.
pub const HANDSHAKE_BUCKETS: [f64; 8] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1.0];

/// A plugin's series: of its `validate` and its `mutate` door.
type Doors = [Option<Arc<DoorSeries>>; 2];

/// The most plugins whose series are kept; past it (plugins come and go)
/// they are found again.
const MAX_KEPT: usize = 1024;

/// One plugin and door's series (clones of the families' own: they count
/// in the same place).
#[derive(Debug)]
struct DoorSeries {
    deadlines: Counter,
    seconds: Histogram,
    /// The plugin's audit results dropped: `rate`, `full`.
    unrecorded: [Counter; 2],
    /// The request counts met so far, by `result` and `policy`.
    requests: Mutex<Vec<(Outcome, Counter)>>,
}

/// A request's `result` and `policy` labels.
type Outcome = (&'static str, Option<&'static str>);

impl Default for AdmissionMetrics {
    fn default() -> Self {
        AdmissionMetrics {
            requests: Family::default(),
            seconds: Family::new_with_constructor(|| Histogram::new(BUCKETS)),
            deadlines: Family::default(),
            unrecorded: Family::default(),
            connections: Family::default(),
            handshakes: Histogram::new(HANDSHAKE_BUCKETS),
            series: Arc::default(),
        }
    }
}

fn door_index(door: Door) -> usize {
    match door {
        Door::Validate => 0,
        Door::Mutate => 1,
    }
}

/// The door's name, as in the webhook's path.
pub fn door_name(door: Door) -> &'static str {
    match door {
        Door::Validate => "validate",
        Door::Mutate => "mutate",
    }
}

/// The `plugin` and `door` labels.
fn labels(plugin: &str, door: Door) -> Labels {
    vec![
        ("plugin", plugin.to_string()),
        ("door", door_name(door).to_string()),
    ]
}

/// What a decision counts as: `result`, and for a failure policy's answer
/// the `policy` applied.
pub fn result(decision: &Decision) -> (&'static str, Option<&'static str>) {
    match decision.fallback {
        Some(f) => (f.why, Some(f.policy)),
        None if !decision.allowed => ("denied", None),
        None if decision.patch.is_some() => ("patched", None),
        None => ("allowed", None),
    }
}

impl AdmissionMetrics {
    /// Count one request to `plugin` through `door`, answered `decision`
    /// after `took`.
    pub fn observe(&self, plugin: &str, door: Door, decision: &Decision, took: Duration) {
        let series = self.series_of(plugin, door);
        // Every door served has a deadline count, 0 until one is hit.
        let outcome = result(decision);
        if outcome.0 == "deadline" {
            series.deadlines.inc();
        }
        series.seconds.observe(took.as_secs_f64());
        // Every plugin served has both counts, 0 until a result is dropped.
        for (why, count) in [Unrecorded::Rate, Unrecorded::Full]
            .into_iter()
            .zip(&series.unrecorded)
        {
            if decision.unrecorded == Some(why) {
                count.inc();
            }
        }
        let mut requests = series.requests.lock().unwrap_or_else(|e| e.into_inner());
        match requests.iter().find(|(o, _)| *o == outcome) {
            Some((_, count)) => {
                count.inc();
            }
            None => {
                let (result, policy) = outcome;
                let mut counted = labels(plugin, door);
                counted.push(("result", result.to_string()));
                if let Some(policy) = policy {
                    counted.push(("policy", policy.to_string()));
                }
                let count = self.requests.get_or_create(&counted).clone();
                count.inc();
                requests.push((outcome, count));
            }
        }
    }

    /// `plugin` and `door`'s series, found in the families the first time.
    fn series_of(&self, plugin: &str, door: Door) -> Arc<DoorSeries> {
        let i = door_index(door);
        let kept = self.series.read().unwrap_or_else(|e| e.into_inner());
        if let Some(series) = kept.get(plugin).and_then(|doors| doors[i].clone()) {
            return series;
        }
        drop(kept);
        let labels = labels(plugin, door);
        let dropped = |why: Unrecorded| {
            let dropped: Labels = vec![("plugin", plugin.to_string()), ("reason", why.name().to_string())];
            self.unrecorded.get_or_create(&dropped).clone()
        };
        let series = Arc::new(DoorSeries {
            deadlines: self.deadlines.get_or_create(&labels).clone(),
            seconds: self.seconds.get_or_create(&labels).clone(),
            unrecorded: [dropped(Unrecorded::Rate), dropped(Unrecorded::Full)],
            requests: Mutex::default(),
        });
        let mut kept = self.series.write().unwrap_or_else(|e| e.into_inner());
        if kept.len() >= MAX_KEPT && !kept.contains_key(plugin) {
            kept.clear();
        }
        let doors = kept.entry(plugin.to_string()).or_default();
        doors[i].get_or_insert(series).clone()
    }

    /// Count one connection whose handshake ended `how` after `took`
    /// (timed only when done).
    pub fn connection(&self, how: Handshake, took: Duration) {
        let labels: Labels = vec![("result", how.name().to_string())];
        self.connections.get_or_create(&labels).inc();
        if how == Handshake::Done {
            self.handshakes.observe(took.as_secs_f64());
        }
    }

    /// Register the families in `registry` (which adds `wink_`).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "admission_requests",
            "Admission requests answered, by result",
            self.requests.clone(),
        );
        registry.register(
            "admission_request_seconds",
            "How long admission requests took, from the request read to the answer",
            self.seconds.clone(),
        );
        registry.register(
            "admission_deadlines",
            "Admission requests the plugin did not answer in time",
            self.deadlines.clone(),
        );
        registry.register(
            "admission_audit_results_dropped",
            "Audit-mode results not recorded: over their peer's rate, or the trail full of results about objects that exist",
            self.unrecorded.clone(),
        );
        registry.register(
            "admission_connections",
            "Connections to the webhook server, by how their TLS handshake ended",
            self.connections.clone(),
        );
        registry.register(
            "admission_tls_handshake_seconds",
            "How long the webhook server's completed TLS handshakes took",
            self.handshakes.clone(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;
    use wink_runtime::admission::{Fallback, Unanswered, failed};

    fn scrape(m: &AdmissionMetrics) -> String {
        let mut registry = Registry::with_prefix("wink");
        m.register(&mut registry);
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        text
    }

    #[test]
    fn requests_are_counted_by_result_door_and_policy() {
        let m = AdmissionMetrics::default();
        let ms = Duration::from_micros(300);
        let denied = Decision {
            allowed: false,
            ..Decision::allow()
        };
        let patched = Decision {
            patch: Some(serde_json::json!([])),
            ..Decision::allow()
        };
        m.observe("p", Door::Validate, &Decision::allow(), ms);
        m.observe("p", Door::Validate, &Decision::allow(), ms);
        m.observe("p", Door::Validate, &denied, ms);
        m.observe("p", Door::Mutate, &patched, ms);
        let late = failed(None, &Unanswered::Deadline("p".into(), Duration::from_secs(1)));
        m.observe("p", Door::Mutate, &late, Duration::from_secs(1));
        let ignored = Decision {
            fallback: Some(Fallback {
                why: "overloaded",
                policy: "Ignore",
            }),
            ..Decision::allow()
        };
        m.observe("p", Door::Validate, &ignored, ms);
        for why in [Unrecorded::Rate, Unrecorded::Rate, Unrecorded::Full] {
            let audited = Decision {
                unrecorded: Some(why),
                ..Decision::allow()
            };
            m.observe("a", Door::Validate, &audited, ms);
        }
        let text = scrape(&m);
        for line in [
            r#"wink_admission_requests_total{plugin="p",door="validate",result="allowed"} 2"#,
            r#"wink_admission_requests_total{plugin="p",door="validate",result="denied"} 1"#,
            r#"wink_admission_requests_total{plugin="p",door="mutate",result="patched"} 1"#,
            r#"wink_admission_requests_total{plugin="p",door="mutate",result="deadline",policy="Fail"} 1"#,
            r#"wink_admission_requests_total{plugin="p",door="validate",result="overloaded",policy="Ignore"} 1"#,
            r#"wink_admission_deadlines_total{plugin="p",door="mutate"} 1"#,
            r#"wink_admission_deadlines_total{plugin="p",door="validate"} 0"#,
            r#"wink_admission_request_seconds_count{plugin="p",door="validate"} 4"#,
            r#"wink_admission_request_seconds_bucket{le="0.0005",plugin="p",door="validate"} 4"#,
            r#"wink_admission_request_seconds_bucket{le="0.5",plugin="p",door="mutate"} 1"#,
            r#"wink_admission_request_seconds_bucket{le="1.0",plugin="p",door="mutate"} 2"#,
            r#"wink_admission_audit_results_dropped_total{plugin="a",reason="rate"} 2"#,
            r#"wink_admission_audit_results_dropped_total{plugin="a",reason="full"} 1"#,
            r#"wink_admission_audit_results_dropped_total{plugin="p",reason="rate"} 0"#,
        ] {
            assert!(text.contains(line), "no {line} in:\n{text}");
        }
        assert!(!text.contains("wink_admission_connections_total{"), "{text}");
        assert_eq!(
            text.matches("# TYPE wink_admission_request_seconds histogram")
                .count(),
            1
        );
    }

    #[test]
    fn connections_are_counted_by_how_their_handshake_ended() {
        let m = AdmissionMetrics::default();
        m.connection(Handshake::Done, Duration::from_micros(700));
        m.connection(Handshake::Done, Duration::from_millis(3));
        m.connection(Handshake::Failed, Duration::ZERO);
        m.connection(Handshake::TimedOut, Duration::from_secs(5));
        let text = scrape(&m);
        for line in [
            r#"wink_admission_connections_total{result="served"} 2"#,
            r#"wink_admission_connections_total{result="handshake_failed"} 1"#,
            r#"wink_admission_connections_total{result="handshake_timeout"} 1"#,
            r#"wink_admission_tls_handshake_seconds_count 2"#,
            r#"wink_admission_tls_handshake_seconds_bucket{le="0.001"} 1"#,
            r#"wink_admission_tls_handshake_seconds_bucket{le="0.005"} 2"#,
        ] {
            assert!(text.contains(line), "no {line} in:\n{text}");
        }
    }
}
