//! End-to-end: the metrics reference, the Grafana dashboard and the
//! Prometheus alerting rules against what a running wink exports.
//!
//! A daemon on the simulator with plugins that watch, query the cache,
//! write, report and crash serves `/metrics`; then
//! - docs/src/reference/metrics.md lists exactly the metrics it exports,
//!   with their types, labels and `# HELP` texts (both ways);
//! - every metric that docs/observability/wink-dashboard.json and
//!   wink-alerts.yaml name is one it exports, and the dashboard shows every
//!   metric family;
//! - Prometheus's own `promtool` (Debian's `prometheus` package, installed
//!   here when missing) accepts the rules and the dashboard's queries, and
//!   passes the rules' unit tests (wink-alerts.test.yaml);
//! - a real Prometheus (the same package) scrapes the daemon: every metric
//!   the dashboard and the rules name has series there, every query and
//!   rule evaluates;
//! - `wink manifests --prometheus-rule` renders the same rules;
//! - compiling a component is logged before and after, with its duration;
//! - docs/src/running/dashboards.md names every alert.

use crate::admin::sample;
use crate::cache_support::*;
use crate::common::{root, scratch};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use wink_sim::{Sim, SimConfig};

mod prometheus;
mod promql;

/// One metric family of `/metrics`.
#[derive(Debug, Default)]
struct Family {
    kind: String,
    help: String,
    labels: BTreeSet<String>,
}

/// The families of a scrape, by family name (`wink_plugin_calls`).
fn families(text: &str) -> BTreeMap<String, Family> {
    let mut all: BTreeMap<String, Family> = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap();
            all.entry(name.into()).or_default().help = help.into();
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            all.entry(name.into()).or_default().kind = kind.into();
        }
    }
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let name = line.split(['{', ' ']).next().unwrap();
        let family = all
            .keys()
            .filter(|f| name.starts_with(f.as_str()))
            .max_by_key(|f| f.len())
            .unwrap_or_else(|| panic!("a sample of no family: {line}"))
            .clone();
        if let Some(labels) = line.split_once('{').and_then(|(_, r)| r.split_once('}')) {
            for pair in labels.0.split(',').filter(|p| !p.is_empty()) {
                let label = pair.split('=').next().unwrap();
                if label != "le" {
                    all.get_mut(&family).unwrap().labels.insert(label.into());
                }
            }
        }
    }
    all
}

/// The names a query uses for a family: counters end in `_total`,
/// histograms are read through `_bucket`, `_sum` and `_count`.
fn sample_names(name: &str, f: &Family) -> Vec<String> {
    match f.kind.as_str() {
        "counter" => vec![format!("{name}_total")],
        "histogram" => ["", "_bucket", "_sum", "_count"]
            .iter()
            .map(|s| format!("{name}{s}"))
            .collect(),
        _ => vec![name.to_string()],
    }
}

/// A row of the metrics page: (type, labels, meaning), by metric name.
fn documented(page: &str) -> BTreeMap<String, (String, BTreeSet<String>, String)> {
    let mut rows = BTreeMap::new();
    for line in page.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(
            cells.len(),
            4,
            "a row is metric | type | labels | meaning: {line}"
        );
        let labels = cells[2]
            .split(',')
            .map(|l| l.trim().trim_matches('`').to_string())
            .filter(|l| !l.is_empty())
            .collect();
        let name = cells[0].trim_matches('`').to_string();
        let row = (cells[1].to_string(), labels, cells[3].to_string());
        assert!(rows.insert(name.clone(), row).is_none(), "{name} twice");
    }
    rows
}

/// A daemon on the simulator, with its admin server at `addr`.
struct Busy {
    addr: String,
    _wink: crate::common::Wink,
    _sim: Sim,
}

/// Scrape a daemon whose plugins have watched, queried, written, reported,
/// crashed and queued keys, once every one of those is counted.
async fn scrape_a_busy_daemon() -> (String, Busy) {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("observability", &sim);
    s.install("pod_logger", "good", None);
    s.install("app_index", "apps", None);
    s.install("require_labels", "require-labels", None);
    let bomb = json!({"mode": "panic", "trigger": "bomb", "on": "add"});
    s.install("misbehave", "bomb", Some(&bomb));
    // A reconciler: its work queue's metrics (its creates are not granted).
    s.install("defaults_keeper", "defaults-keeper", None);
    // Admission webhooks (answered for here, not called by the simulator):
    // one the plugin answers, one its failure policy does.
    s.install("admit_probe", "admit", None);
    s.install("admit_probe", "admit-trap", Some(&json!({"behaviour": "trap"})));
    let grants = s.plugins.parent().unwrap().join("grants.yaml");
    // `good` under a CPU share of its own: its team's series is exported.
    let shared = format!("{REQUIRE_LABELS_GRANT}  good:\n    limits: {{cpu: 4}}\n");
    std::fs::write(&grants, shared).unwrap();
    let addr = format!("127.0.0.1:{}", free_port());
    let grants = grants.to_str().unwrap();
    let port = free_port();
    let wink = crate::admission::run(
        &s,
        port,
        &[
            "--admin-addr",
            &addr,
            "--grants",
            grants,
            "--no-precompiled",
            "--admission-configurations=false",
        ],
    );
    wink.wait_for_line("admin server listening", WAIT);
    for plugin in ["good", "apps", "require-labels", "bomb", "defaults-keeper"] {
        wait_synced(&wink, plugin);
        // Compiling takes seconds for a large component: the log says so
        // before and how long it took after.
        let lines = wink.lines();
        let said = |what: &str| {
            lines
                .iter()
                .position(|l| l.contains(what) && l.contains(&format!("plugin={plugin} ")))
        };
        let (before, after) = (
            said("compiling the plugin's component"),
            said("compiled the plugin's component in"),
        );
        assert!(
            before.is_some() && before < after,
            "{plugin}: no compile progress:\n{}",
            lines.join("\n")
        );
        assert!(lines[after.unwrap()].contains("compile_ms="));
    }
    let ca = crate::admission::ca_pem(&sim).await;
    for plugin in ["admit", "admit-trap"] {
        wait_synced(&wink, plugin);
        let review = crate::admission::review("uid", crate::admission::pod("p", json!({})));
        for door in ["validate", "mutate"] {
            crate::admission::ask(port, &ca, &format!("/admission/{plugin}/{door}"), &review).await;
        }
    }
    let pods: Api<Pod> = Api::namespaced(sim.client(), "default");
    for name in ["web-1", "bomb"] {
        let pod = json!({"metadata": {"name": name, "labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "c", "image": "i"}]}});
        pods.create(&PostParams::default(), &from_json(pod))
            .await
            .unwrap();
    }
    Api::<Deployment>::namespaced(sim.client(), "default")
        .create(&PostParams::default(), &deployment("default", "web", 1))
        .await
        .unwrap();
    let deadline = Instant::now() + WAIT;
    loop {
        let (status, text) = http(&addr, "GET", "/metrics").await;
        assert_eq!(status, 200);
        let counted = [
            ("wink_plugin_writes_total", ("plugin", "require-labels")),
            ("wink_plugin_crashes_by_kind_total", ("plugin", "bomb")),
            ("wink_plugin_cache_queries_total", ("plugin", "apps")),
            ("wink_report_requests_total", ("op", "create")),
            ("workqueue_adds_total", ("plugin", "defaults-keeper")),
            ("wink_admission_requests_total", ("policy", "Fail")),
        ]
        .iter()
        .all(|(name, label)| sample(&text, name, &[*label]).is_some_and(|v| v >= 1.0));
        if counted {
            let busy = Busy {
                addr,
                _wink: wink,
                _sim: sim,
            };
            return (text, busy);
        }
        assert!(
            Instant::now() < deadline,
            "never counted a write, a crash, a query and a report:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Each metric family is one block: one `# TYPE` and one `# HELP` line,
/// however many plugins have series in it (the exposition format allows no
/// repeat, and stricter scrapers refuse one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_family_has_one_header() {
    let (text, _busy) = scrape_a_busy_daemon().await;
    let mut seen = std::collections::BTreeMap::<&str, usize>::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            *seen.entry(rest.split(' ').next().unwrap()).or_default() += 1;
        }
    }
    let repeated: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        repeated.is_empty(),
        "families with more than one header: {repeated:?}"
    );
    assert!(
        seen.contains_key("wink_plugin_handler_seconds")
            && seen.contains_key("workqueue_work_duration_seconds"),
        "{seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_docs_dashboard_and_alerts_name_what_wink_exports() {
    let (text, busy) = scrape_a_busy_daemon().await;
    let exported = families(&text);
    let page = std::fs::read_to_string(root().join("docs/src/reference/metrics.md")).unwrap();
    let rows = documented(&page);
    // Both ways: every family exported is on the page, as it is exported.
    let mut named = BTreeSet::new();
    for (family, f) in &exported {
        let name = sample_names(family, f)[0].clone();
        let Some((kind, labels, meaning)) = rows.get(&name) else {
            panic!(
                "{name} ({}, {:?}) is exported but not in metrics.md",
                f.kind, f.labels
            );
        };
        assert_eq!(kind, &f.kind, "{name}'s type");
        assert_eq!(labels, &f.labels, "{name}'s labels");
        assert!(
            meaning.starts_with(&f.help),
            "{name}'s meaning starts with its HELP {:?}: {meaning}",
            f.help
        );
        named.insert(name);
    }
    let stale: Vec<&String> = rows.keys().filter(|n| !named.contains(*n)).collect();
    assert!(
        stale.is_empty(),
        "metrics.md documents what wink does not export: {stale:?}"
    );

    let names: BTreeSet<String> = exported.iter().flat_map(|(n, f)| sample_names(n, f)).collect();
    let dir = root().join("docs/observability");
    let rules = alert_expressions(&dir.join("wink-alerts.yaml"));
    let dashboard = dashboard_expressions(&dir.join("wink-dashboard.json"));
    for (what, exprs) in [("wink-alerts.yaml", &rules), ("wink-dashboard.json", &dashboard)] {
        for (title, expr) in exprs {
            let used = promql::metric_names(expr);
            assert!(!used.is_empty(), "{what}: {title} names no metric: {expr}");
            for name in used {
                assert!(
                    names.contains(&name),
                    "{what}: {title} names {name}, which wink does not export: {expr}"
                );
            }
        }
    }
    let shown: BTreeSet<String> = dashboard
        .iter()
        .flat_map(|(_, e)| promql::metric_names(e))
        .collect();
    for (family, f) in &exported {
        let any = sample_names(family, f).iter().any(|n| shown.contains(n));
        assert!(any, "the dashboard shows nothing of {family}");
    }

    // A real Prometheus scrapes the daemon, evaluates the rules and answers
    // every query: each metric named has series, each expression evaluates.
    let prom = prometheus::Prometheus::start(
        &busy.addr,
        &dir.join("wink-alerts.yaml"),
        &scratch("observability_prometheus"),
    );
    prom.until_scraped(3).await;
    let used: BTreeSet<String> = rules
        .iter()
        .chain(&dashboard)
        .flat_map(|(_, e)| promql::metric_names(e))
        .collect();
    for name in &used {
        let (status, result) = prom.query(&format!("count({{__name__=\"{name}\"}})")).await;
        assert!(
            status == "success" && !result.is_empty(),
            "Prometheus has no {name}: {status}"
        );
    }
    for (title, expr) in rules.iter().chain(&dashboard) {
        let (status, _) = prom.query(expr).await;
        assert_eq!(status, "success", "Prometheus cannot evaluate {title}: {expr}");
    }
    let deadline = Instant::now() + WAIT;
    loop {
        let loaded = prom.rules().await;
        assert_eq!(loaded.len(), rules.len(), "{loaded:?}");
        let bad: Vec<_> = loaded.iter().filter(|(_, health, _)| health == "err").collect();
        assert!(bad.is_empty(), "rules that fail to evaluate: {bad:?}");
        if loaded.iter().all(|(_, health, _)| health == "ok") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the rules are never evaluated: {loaded:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Every alert's expression, by alert name.
fn alert_expressions(path: &Path) -> Vec<(String, String)> {
    let rules: Value = serde_norway::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut all = Vec::new();
    for group in rules["groups"].as_array().unwrap() {
        for rule in group["rules"].as_array().unwrap() {
            let name = rule["alert"].as_str().unwrap().to_string();
            all.push((name, rule["expr"].as_str().unwrap().to_string()));
        }
    }
    all
}

/// Every panel query and variable query of the dashboard, by title, as
/// PromQL: Grafana's variables replaced by what they stand for, and
/// `label_values(SELECTOR, LABEL)` by its selector.
fn dashboard_expressions(path: &Path) -> Vec<(String, String)> {
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let promql = |e: &str| {
        let e = e.replace("$__rate_interval", "5m");
        let e = ["$job", "$instance", "$plugin"]
            .iter()
            .fold(e, |e, v| e.replace(v, ".*"));
        match e.strip_prefix("label_values(") {
            Some(inner) => inner.rsplit_once(',').unwrap().0.to_string(),
            None => e,
        }
    };
    let mut all = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let title = format!("panel {:?}", panel["title"].as_str().unwrap());
            all.push((title, promql(target["expr"].as_str().unwrap())));
        }
    }
    for var in dashboard["templating"]["list"].as_array().unwrap() {
        if let Some(q) = var["query"]["query"].as_str() {
            all.push((format!("variable {}", var["name"]), promql(q)));
        }
    }
    assert!(all.len() > 20, "the dashboard's queries: {all:?}");
    all
}

/// `promtool`, installed from Debian's `prometheus` package when missing.
fn promtool() -> PathBuf {
    crate::debian_support::ensure("prometheus", "promtool")
}

fn run_promtool(args: &[&str], dir: &Path) -> String {
    let out = Command::new(promtool())
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool {args:?}:\n{all}");
    all
}

#[test]
fn promtool_accepts_the_rules_and_the_dashboards_queries_and_passes_the_rule_tests() {
    let dir = root().join("docs/observability");
    let alerts = alert_expressions(&dir.join("wink-alerts.yaml"));
    let checked = run_promtool(&["check", "rules", "wink-alerts.yaml"], &dir);
    assert!(
        checked.contains(&format!("SUCCESS: {} rules found", alerts.len())),
        "{checked}"
    );
    let tested = run_promtool(&["test", "rules", "wink-alerts.test.yaml"], &dir);
    assert!(tested.contains("SUCCESS"), "{tested}");

    // The dashboard's queries, as recording rules promtool parses.
    let scratch = scratch("observability_promtool");
    let queries = dashboard_expressions(&dir.join("wink-dashboard.json"));
    let rules: Vec<Value> = queries
        .iter()
        .enumerate()
        .map(|(i, (_, expr))| json!({"record": format!("dashboard:query_{i}"), "expr": expr}))
        .collect();
    let file = json!({"groups": [{"name": "dashboard", "rules": rules}]});
    std::fs::write(scratch.join("dashboard.yaml"), file.to_string()).unwrap();
    let checked = run_promtool(&["check", "rules", "dashboard.yaml"], &scratch);
    assert!(
        checked.contains(&format!("SUCCESS: {} rules found", queries.len())),
        "{checked}"
    );

    // A broken expression is caught: the check is not a formality.
    std::fs::write(
        scratch.join("broken.yaml"),
        "groups:\n- name: b\n  rules:\n  - alert: B\n    expr: sum by (plugin (wink_leader)\n",
    )
    .unwrap();
    let out = Command::new(promtool())
        .args(["check", "rules", "broken.yaml"])
        .current_dir(&scratch)
        .output()
        .unwrap();
    assert!(!out.status.success());

    // `wink manifests --prometheus-rule` renders the same rules, which
    // promtool accepts as they are.
    let plugins = scratch.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(crate::common::plugin("pod_logger"), plugins.join("good.wasm")).unwrap();
    let out = Command::new(crate::common::wink_bin())
        .args([
            "manifests",
            "--namespace",
            "ops",
            "--prometheus-rule",
            "--plugins",
        ])
        .arg(&plugins)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let yaml = String::from_utf8(out.stdout).unwrap();
    let last = yaml.rsplit("\n---\n").next().unwrap();
    let rule: Value = serde_norway::from_str(last).unwrap();
    assert_eq!(
        (&rule["kind"], &rule["metadata"]["namespace"]),
        (&json!("PrometheusRule"), &json!("ops"))
    );
    let file: Value =
        serde_norway::from_str(&std::fs::read_to_string(dir.join("wink-alerts.yaml")).unwrap()).unwrap();
    assert_eq!(rule["spec"]["groups"], file["groups"]);
    std::fs::write(scratch.join("rendered.yaml"), rule["spec"].to_string()).unwrap();
    run_promtool(&["check", "rules", "rendered.yaml"], &scratch);

    let page = std::fs::read_to_string(root().join("docs/src/running/dashboards.md")).unwrap();
    for (alert, _) in &alerts {
        assert!(
            page.contains(&format!("`{alert}`")),
            "dashboards.md does not explain {alert}"
        );
    }
}
