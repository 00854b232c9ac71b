//! Helpers of the policy report tests: pods that break (or keep) the Pod
//! Security Standards Baseline checks `pod-security` reports (at its
//! default, `baseline:latest`), the results expected of them, and a reader
//! of the reports on the server, in either report API.

use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};
use wink::reports::ReportApi;
use wink_sim::Sim;

/// The checks `pod-security` reports about every Pod of a namespace
/// without labels (Baseline at the latest version), by PodSecurity's IDs.
pub const CHECKS: [&str; 12] = [
    "appArmorProfile",
    "capabilities_baseline",
    "hostNamespaces",
    "hostPathVolumes",
    "hostPorts",
    "hostProbesAndHostLifecycle",
    "privileged",
    "procMount",
    "seLinuxOptions",
    "seccompProfile_baseline",
    "sysctls",
    "windowsHostProcess",
];

/// The checks [`violating_pod`] breaks, in the order of its flaws.
pub const RULES: [&str; 5] = [
    "privileged",
    "hostNamespaces",
    "hostPathVolumes",
    "capabilities_baseline",
    "hostPorts",
];

/// A pod that fails check `RULES[flaw - 1]`, or none when `flaw` is 0.
pub fn violating_pod(ns: &str, name: &str, flaw: usize) -> Value {
    let mut container = json!({"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]});
    let mut spec = json!({});
    match flaw {
        0 => {}
        1 => container["securityContext"] = json!({"privileged": true}),
        // No ports: with the host's network an API server defaults each
        // container port's hostPort to it, which would break hostPorts too.
        2 => {
            spec["hostNetwork"] = json!(true);
            container.as_object_mut().unwrap().remove("ports");
        }
        3 => spec["volumes"] = json!([{"name": "root", "hostPath": {"path": "/"}}]),
        4 => {
            container["securityContext"] = json!({"capabilities": {"add": ["NET_BIND_SERVICE", "SYS_ADMIN"]}})
        }
        5 => container["ports"] = json!([{"containerPort": 80, "hostPort": 8080}]),
        _ => unreachable!(),
    }
    spec["containers"] = json!([container]);
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": spec})
}

/// (namespace, subject name, policy, rule, result) of one reported result.
pub type Row = (String, String, String, String, String);

/// The rows `pod-security` must report about pods given as (ns, name, flaw).
pub fn expected<'a>(pods: impl IntoIterator<Item = &'a (String, String, usize)>) -> BTreeSet<Row> {
    let mut rows = BTreeSet::new();
    for (ns, name, flaw) in pods {
        let failing = flaw.checked_sub(1).map(|i| RULES[i]);
        for rule in CHECKS {
            let result = if failing == Some(rule) { "fail" } else { "pass" };
            rows.insert((
                ns.clone(),
                name.clone(),
                "pod-security".into(),
                rule.to_string(),
                result.into(),
            ));
        }
    }
    rows
}

/// Every PolicyReport and ClusterPolicyReport on the server (none while
/// the CRDs are missing).
pub async fn reports(sim: &Sim) -> Vec<Value> {
    reports_in(sim, ReportApi::Wgpolicyk8s).await
}

/// Every report of `api` on the server, namespaced and cluster ones (none
/// while the CRDs are missing).
pub async fn reports_in(sim: &Sim, api: ReportApi) -> Vec<Value> {
    reports_of(&sim.client(), api).await
}

/// Every report of `api` that `client`'s server has (a real one's too).
pub async fn reports_of(client: &kube::Client, api: ReportApi) -> Vec<Value> {
    let mut all = Vec::new();
    for namespaced in [true, false] {
        let gvk = GroupVersionKind::gvk(api.group(), api.version(), api.kind(namespaced));
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &ApiResource::from_gvk(&gvk));
        if let Ok(list) = api.list(&ListParams::default()).await {
            all.extend(list.items.into_iter().map(|o| serde_json::to_value(o).unwrap()));
        }
    }
    all
}

/// The rows of every report, with duplicates (a list, not a set), after
/// checking each report's summary against its results.
pub fn rows(reports: &[Value]) -> Vec<Row> {
    let mut rows = Vec::new();
    for r in reports {
        let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
        for res in r["results"].as_array().into_iter().flatten() {
            let outcome = res["result"].as_str().unwrap();
            *counts.entry(outcome).or_default() += 1;
            let subject = &res["resources"][0];
            rows.push((
                subject["namespace"].as_str().unwrap_or("").to_string(),
                subject["name"].as_str().unwrap().to_string(),
                res["policy"].as_str().unwrap().to_string(),
                res["rule"].as_str().unwrap().to_string(),
                outcome.to_string(),
            ));
            assert_eq!(
                r["metadata"]["namespace"].as_str().unwrap_or(""),
                subject["namespace"].as_str().unwrap_or(""),
                "a result is in its subject's namespace's report"
            );
        }
        for o in ["pass", "fail", "warn", "error", "skip"] {
            assert_eq!(
                r["summary"][o].as_u64().unwrap_or(0),
                counts.get(o).copied().unwrap_or(0),
                "summary.{o} of {}",
                r["metadata"]["name"]
            );
        }
        assert_eq!(r["metadata"]["labels"]["app.kubernetes.io/managed-by"], "wink");
    }
    rows
}

/// Wait until the reports hold exactly `want`, each once.
pub async fn until_reports(sim: &Sim, want: &BTreeSet<Row>, patience: Duration) {
    until_reports_in(sim, ReportApi::Wgpolicyk8s, want, patience).await
}

/// Wait until the reports of `api` hold exactly `want`, each once.
pub async fn until_reports_in(sim: &Sim, api: ReportApi, want: &BTreeSet<Row>, patience: Duration) {
    until_reports_of(&sim.client(), api, want, patience, |_| true).await
}

/// Wait until the reports of `api` on `client`'s server, those whose
/// namespace `ours` keeps, hold exactly `want`, each once.
pub async fn until_reports_of(
    client: &kube::Client,
    api: ReportApi,
    want: &BTreeSet<Row>,
    patience: Duration,
    ours: impl Fn(&Value) -> bool,
) {
    let deadline = Instant::now() + patience;
    loop {
        let reports: Vec<Value> = reports_of(client, api)
            .await
            .into_iter()
            .filter(|r| ours(r))
            .collect();
        let got = rows(&reports);
        let set: BTreeSet<Row> = got.iter().cloned().collect();
        if &set == want {
            assert_eq!(got.len(), set.len(), "no result is reported twice");
            return;
        }
        if Instant::now() > deadline {
            let missing: Vec<_> = want.difference(&set).take(10).collect();
            let extra: Vec<_> = set.difference(want).take(10).collect();
            panic!(
                "reports differ: missing {missing:?}, extra {extra:?} ({} vs {})",
                set.len(),
                want.len()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Report writes the server received: creates, patches, updates, deletes.
pub fn report_writes(sim: &Sim) -> u64 {
    report_writes_in(sim, ReportApi::Wgpolicyk8s)
}

/// Writes of reports of `api` the server received.
pub fn report_writes_in(sim: &Sim, api: ReportApi) -> u64 {
    ["create", "patch", "update", "delete"]
        .iter()
        .map(|v| sim.request_count(v, api.plural(true)) + sim.request_count(v, api.plural(false)))
        .sum()
}
