//! The layout of reports: which report objects hold which results.
//! One set of reports per namespace (a `PolicyReport` or `Report` named
//! `wink-report`, then `wink-report-2`, ... when one would pass the size
//! limit) and one for cluster-scoped subjects (a `ClusterPolicyReport` or
//! `ClusterReport` `wink-cluster-report`, ...), each with its `summary`,
//! labelled `app.kubernetes.io/managed-by: wink`.
//!
//! One layout, two renderings: the same objects with the same results in
//! either [`ReportApi`]; an OpenReports report also names its `source` at
//! the report level (every result keeps its own `source` too, which the
//! API lets override the report's, for consumers that read only results).
//!
//! Pure functions: from the aggregator's snapshot of one scope to the JSON of
//! its reports. A result keeps the timestamp the server's copy has for the
//! identical result, so recomputing an unchanged report gives the same JSON
//! (and no write), across restarts too.

use super::aggregate::{Held, Outcome, Scope};
use super::api::ReportApi;
use serde_json::{Map, Value, json};
use std::collections::HashMap;

/// The label on every report wink manages.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "wink");

/// The `source` of every result.
pub const SOURCE: &str = "wink";

/// The largest report written, in bytes of JSON: well under etcd's 1.5 MiB
/// per object, so a report plus its metadata always fits.
pub const MAX_REPORT_BYTES: usize = 1024 * 1024;

/// One report object: its API, its namespace (none for a cluster report)
/// and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReportId {
    pub api: ReportApi,
    pub namespace: Option<String>,
    pub name: String,
}

impl ReportId {
    /// `PolicyReport`, `ClusterPolicyReport`, `Report` or `ClusterReport`.
    pub fn kind(&self) -> &'static str {
        self.api.kind(self.namespace.is_some())
    }

    /// The API path of this report's collection.
    pub fn collection(&self) -> String {
        collection(self.api, self.namespace.as_deref())
    }

    /// The API path of this report.
    pub fn path(&self) -> String {
        format!("{}/{}", self.collection(), self.name)
    }

    /// The scope it belongs to.
    pub fn scope(&self) -> Scope {
        self.namespace.clone()
    }
}

/// The collection path of `api`'s reports in `namespace` (none: cluster
/// reports).
pub fn collection(api: ReportApi, namespace: Option<&str>) -> String {
    let v = api.api_version();
    match namespace {
        Some(ns) => format!("/apis/{v}/namespaces/{ns}/{}", api.plural(true)),
        None => format!("/apis/{v}/{}", api.plural(false)),
    }
}

/// The path of `api`'s namespaced reports in every namespace.
pub fn all_namespaces(api: ReportApi) -> String {
    format!("/apis/{}/{}", api.api_version(), api.plural(true))
}

/// The name of the `n`th (0-based) report of a scope.
fn name(scope: &Scope, n: usize) -> String {
    let base = match scope {
        Some(_) => "wink-report",
        None => "wink-cluster-report",
    };
    match n {
        0 => base.to_string(),
        n => format!("{base}-{}", n + 1),
    }
}

/// A result's JSON without its timestamp: its identity for timestamp reuse.
fn result_json(h: &Held) -> Map<String, Value> {
    let r = &h.result;
    let s = &h.subject;
    let mut resource = Map::new();
    resource.insert("apiVersion".into(), s.api_version.clone().into());
    resource.insert("kind".into(), s.kind.clone().into());
    if let Some(ns) = &s.namespace {
        resource.insert("namespace".into(), ns.clone().into());
    }
    resource.insert("name".into(), s.name.clone().into());
    resource.insert("uid".into(), s.uid.clone().into());
    let mut m = Map::new();
    m.insert("source".into(), SOURCE.into());
    m.insert("policy".into(), r.policy.clone().into());
    m.insert("rule".into(), r.rule.clone().into());
    m.insert("result".into(), r.outcome.as_str().into());
    if let Some(sev) = r.severity {
        m.insert("severity".into(), sev.as_str().into());
    }
    if let Some(c) = &r.category {
        m.insert("category".into(), c.clone().into());
    }
    if !r.message.is_empty() {
        m.insert("message".into(), r.message.clone().into());
    }
    if !r.properties.is_empty() {
        let props: Map<String, Value> = r
            .properties
            .iter()
            .map(|(k, v)| (k.clone(), v.clone().into()))
            .collect();
        m.insert("properties".into(), props.into());
    }
    m.insert("resources".into(), json!([resource]));
    m
}

/// The bytes `h` takes in a report.
pub fn result_size(h: &Held) -> usize {
    Value::Object(result_json(h)).to_string().len() + TIMESTAMP_BYTES
}

/// `"timestamp":{"seconds":N,"nanos":0},`
const TIMESTAMP_BYTES: usize = 48;

/// The timestamps of the results of existing reports, by the result's JSON
/// without its timestamp.
#[derive(Default)]
pub struct Timestamps(HashMap<String, Value>);

impl Timestamps {
    /// Remember the timestamps of `report`'s results.
    pub fn learn(&mut self, report: &Value) {
        for r in report["results"].as_array().into_iter().flatten() {
            let Some(mut m) = r.as_object().cloned() else {
                continue;
            };
            if let Some(ts) = m.remove("timestamp") {
                self.0.insert(Value::Object(m).to_string(), ts);
            }
        }
    }
}

/// `results[].timestamp` now.
fn now() -> Value {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    json!({"seconds": t.as_secs(), "nanos": 0})
}

/// The reports of `scope` holding `held` (sorted) in `api`, none when it
/// is empty.
pub fn reports(
    api: ReportApi,
    scope: &Scope,
    held: &[Held],
    known: &Timestamps,
    max_bytes: usize,
) -> Vec<(ReportId, Value)> {
    let mut chunks: Vec<Vec<Value>> = Vec::new();
    let mut size = 0;
    let stamp = now();
    for h in held {
        let mut m = result_json(h);
        let identity = Value::Object(m.clone()).to_string();
        let ts = known.0.get(&identity).cloned().unwrap_or_else(|| stamp.clone());
        let len = identity.len() + TIMESTAMP_BYTES;
        m.insert("timestamp".into(), ts);
        if chunks.is_empty() || (size + len > max_bytes && !chunks.last().unwrap().is_empty()) {
            chunks.push(Vec::new());
            size = 0;
        }
        size += len;
        chunks.last_mut().unwrap().push(Value::Object(m));
    }
    chunks
        .into_iter()
        .enumerate()
        .map(|(n, results)| {
            let id = ReportId {
                api,
                namespace: scope.clone(),
                name: name(scope, n),
            };
            (id.clone(), report(&id, results))
        })
        .collect()
}

/// A report's counts by outcome.
fn summary(results: &[Value]) -> Value {
    let mut counts = Map::new();
    for o in Outcome::ALL {
        let n = results.iter().filter(|r| r["result"] == o.as_str()).count();
        counts.insert(o.as_str().into(), n.into());
    }
    Value::Object(counts)
}

fn report(id: &ReportId, results: Vec<Value>) -> Value {
    let mut metadata = json!({"name": id.name, "labels": {MANAGED_BY.0: MANAGED_BY.1}});
    if let Some(ns) = &id.namespace {
        metadata["namespace"] = ns.clone().into();
    }
    let mut report = json!({
        "apiVersion": id.api.api_version(),
        "kind": id.kind(),
        "metadata": metadata,
        "summary": summary(&results),
        "results": results,
    });
    if id.api == ReportApi::OpenReports {
        report["source"] = SOURCE.into();
    }
    report
}

/// Whether the server's copy of a report says what `desired` says (its
/// results, summary, source and label), so that no write is needed.
pub fn same_content(server: &Value, desired: &Value) -> bool {
    let label = |v: &Value| v["metadata"]["labels"][MANAGED_BY.0].clone();
    let results = |v: &Value| match &v["results"] {
        Value::Null => Value::Array(Vec::new()),
        r => r.clone(),
    };
    server["summary"] == desired["summary"]
        && server["source"] == desired["source"]
        && results(server) == results(desired)
        && label(server) == label(desired)
}

#[cfg(test)]
mod tests {
    use super::super::aggregate::{PolicyResult, Severity, Subject};
    use super::*;
    use std::collections::BTreeMap;

    fn held(name: &str, rule: &str, outcome: Outcome) -> Held {
        Held {
            subject: Subject {
                api_version: "v1".into(),
                kind: "Pod".into(),
                namespace: Some("ns".into()),
                name: name.into(),
                uid: format!("u-{name}"),
            },
            result: PolicyResult {
                policy: "pod-security".into(),
                rule: rule.into(),
                outcome,
                severity: Some(Severity::High),
                category: None,
                message: "m".repeat(100),
                properties: BTreeMap::from([("containers".to_string(), "c".to_string())]),
            },
        }
    }

    #[test]
    fn a_scope_gets_one_report_with_a_summary() {
        let held = vec![
            held("a", "r1", Outcome::Fail),
            held("a", "r2", Outcome::Pass),
            held("b", "r1", Outcome::Pass),
        ];
        let scope = Some("ns".to_string());
        let out = reports(
            ReportApi::Wgpolicyk8s,
            &scope,
            &held,
            &Timestamps::default(),
            MAX_REPORT_BYTES,
        );
        assert_eq!(out.len(), 1);
        let (id, r) = &out[0];
        assert_eq!((id.name.as_str(), id.kind()), ("wink-report", "PolicyReport"));
        assert_eq!(
            id.path(),
            "/apis/wgpolicyk8s.io/v1alpha2/namespaces/ns/policyreports/wink-report"
        );
        assert_eq!(
            r["summary"],
            json!({"pass": 2, "fail": 1, "warn": 0, "error": 0, "skip": 0})
        );
        assert_eq!(r["results"][0]["resources"][0]["uid"], "u-a");
        assert_eq!(r["results"][0]["severity"], "high");
        assert_eq!(r["metadata"]["labels"]["app.kubernetes.io/managed-by"], "wink");
        assert!(
            reports(
                ReportApi::Wgpolicyk8s,
                &scope,
                &[],
                &Timestamps::default(),
                MAX_REPORT_BYTES
            )
            .is_empty()
        );
        let cluster = reports(
            ReportApi::Wgpolicyk8s,
            &None,
            &held[..1],
            &Timestamps::default(),
            MAX_REPORT_BYTES,
        );
        assert_eq!(cluster[0].0.kind(), "ClusterPolicyReport");
        assert!(cluster[0].1["metadata"].get("namespace").is_none());
    }

    #[test]
    fn a_large_scope_splits_under_the_limit_and_every_result_lands_once() {
        let held: Vec<Held> = (0..300)
            .map(|i| held(&format!("pod-{i:03}"), "r", Outcome::Fail))
            .collect();
        let scope = Some("ns".to_string());
        let out = reports(
            ReportApi::Wgpolicyk8s,
            &scope,
            &held,
            &Timestamps::default(),
            16 * 1024,
        );
        assert!(out.len() > 3, "{} reports", out.len());
        let names: Vec<&str> = out.iter().map(|(id, _)| id.name.as_str()).collect();
        assert_eq!(&names[..3], ["wink-report", "wink-report-2", "wink-report-3"]);
        let mut total = 0;
        for (_, r) in &out {
            let n = r["results"].as_array().unwrap().len();
            assert!(r.to_string().len() < 16 * 1024 + 1024, "{}", r.to_string().len());
            assert_eq!(r["summary"]["fail"], n);
            total += n;
        }
        assert_eq!(total, 300);
    }

    #[test]
    fn unchanged_results_keep_the_servers_timestamps() {
        let held = vec![held("a", "r1", Outcome::Fail)];
        let scope = Some("ns".to_string());
        let (_, mut server) = reports(
            ReportApi::Wgpolicyk8s,
            &scope,
            &held,
            &Timestamps::default(),
            MAX_REPORT_BYTES,
        )
        .remove(0);
        server["results"][0]["timestamp"] = json!({"seconds": 12, "nanos": 0});
        let mut known = Timestamps::default();
        known.learn(&server);
        let (_, again) = reports(ReportApi::Wgpolicyk8s, &scope, &held, &known, MAX_REPORT_BYTES).remove(0);
        assert_eq!(again["results"][0]["timestamp"]["seconds"], 12);
        assert!(same_content(&server, &again));
        let changed = vec![held_with_outcome(Outcome::Pass)];
        let (_, other) =
            reports(ReportApi::Wgpolicyk8s, &scope, &changed, &known, MAX_REPORT_BYTES).remove(0);
        assert!(!same_content(&server, &other));
    }

    #[test]
    fn one_layout_two_renderings() {
        let held: Vec<Held> = (0..60)
            .map(|i| held(&format!("pod-{i:02}"), "r", Outcome::Fail))
            .collect();
        let scope = Some("ns".to_string());
        let known = Timestamps::default();
        let w = reports(ReportApi::Wgpolicyk8s, &scope, &held, &known, 8 * 1024);
        let o = reports(ReportApi::OpenReports, &scope, &held, &known, 8 * 1024);
        assert!(w.len() > 1, "split into {} reports", w.len());
        assert_eq!(w.len(), o.len());
        for ((wid, wr), (oid, or)) in w.iter().zip(&o) {
            assert_eq!((&wid.namespace, &wid.name), (&oid.namespace, &oid.name));
            assert_eq!(wr["summary"], or["summary"]);
            assert_eq!(wr["metadata"], or["metadata"]);
            let strip = |r: &Value| {
                let mut r = r["results"].clone();
                for x in r.as_array_mut().unwrap() {
                    x.as_object_mut().unwrap().remove("timestamp");
                }
                r
            };
            assert_eq!(strip(wr), strip(or), "the same results");
            assert_eq!(wr["apiVersion"], "wgpolicyk8s.io/v1alpha2");
            assert_eq!(wr["kind"], "PolicyReport");
            assert!(
                wr.get("source").is_none(),
                "PolicyReport has no report-level source"
            );
            assert_eq!(or["apiVersion"], "openreports.io/v1alpha1");
            assert_eq!(or["kind"], "Report");
            assert_eq!(or["source"], SOURCE);
            assert_eq!(or["results"][0]["source"], SOURCE);
        }
        assert_eq!(
            o[0].0.path(),
            "/apis/openreports.io/v1alpha1/namespaces/ns/reports/wink-report"
        );
        let cluster = reports(
            ReportApi::OpenReports,
            &None,
            &held[..1],
            &known,
            MAX_REPORT_BYTES,
        );
        assert_eq!(cluster[0].0.kind(), "ClusterReport");
        assert_eq!(
            cluster[0].0.path(),
            "/apis/openreports.io/v1alpha1/clusterreports/wink-cluster-report"
        );
        assert_eq!(
            all_namespaces(ReportApi::OpenReports),
            "/apis/openreports.io/v1alpha1/reports"
        );
        // A server copy without the report-level source is rewritten.
        let mut old = o[0].1.clone();
        old.as_object_mut().unwrap().remove("source");
        assert!(!same_content(&old, &o[0].1));
        assert!(same_content(&o[0].1, &o[0].1));
    }

    fn held_with_outcome(o: Outcome) -> Held {
        held("a", "r1", o)
    }
}
