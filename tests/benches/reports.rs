//! Policy report benchmark: 1,000 pods checked by `pod-security` (five
//! results each), then a steady churn of creates, updates and deletes on
//! the simulated API server. Reports, per batch window of the report
//! writer: the time from a change to its result in a report (p50/p95, seen
//! through a watch on the reports), report writes per 1,000 changes, the
//! writes one report per subject would have needed for the same changes
//! (the layout not chosen, counted by the writer), and the largest report.
//! Run: `cargo bench -p wink-e2e --bench reports`.
//!
//! Environment: `REPORTS_BENCH_PODS` (1000), `REPORTS_BENCH_RATE` (changes
//! per second, 50), `REPORTS_BENCH_CHANGES` (1000).
//!
//! Updates change a pod's spec in place to move it between rules (the
//! simulator allows it; on a cluster a rollout would replace the pod): what
//! is measured is the path from a watch event to a written report.

#[path = "../tests/common/mod.rs"]
mod common;

use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, WatchEvent, WatchParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wink::daemon::Daemon;
use wink::reports::WriterOptions;
use wink::runtime::manager::ManagerOptions;
use wink_sim::{Sim, SimConfig};

/// The check each flaw of [`pod`] fails (PodSecurity's check IDs).
const RULES: [&str; 5] = [
    "privileged",
    "hostNamespaces",
    "hostPathVolumes",
    "capabilities_baseline",
    "hostPorts",
];

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn pod(ns: &str, name: &str, flaw: usize) -> Value {
    let mut container = json!({"name": "app", "image": "nginx"});
    let mut spec = json!({});
    match flaw {
        1 => container["securityContext"] = json!({"privileged": true}),
        2 => spec["hostNetwork"] = json!(true),
        3 => spec["volumes"] = json!([{"name": "root", "hostPath": {"path": "/"}}]),
        4 => container["securityContext"] = json!({"capabilities": {"add": ["SYS_ADMIN"]}}),
        5 => container["ports"] = json!([{"containerPort": 80, "hostPort": 8080}]),
        _ => {}
    }
    spec["containers"] = json!([container]);
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": spec})
}

/// What a report must show for a change to count as arrived.
#[derive(Clone, Copy, PartialEq)]
enum Want {
    /// The pod's failing rule is this one (0: all pass).
    Flaw(usize),
    Gone,
}

/// Pending changes by (namespace, pod), with when they were made.
type Pending = Arc<Mutex<HashMap<(String, String), (Want, Instant)>>>;

/// Per pod of a report: the rule that fails (0 for none).
fn flaws(report: &Value) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for r in report["results"].as_array().into_iter().flatten() {
        let name = r["resources"][0]["name"].as_str().unwrap_or("").to_string();
        let e = out.entry(name).or_insert(0);
        if r["result"] == "fail" {
            let rule = r["rule"].as_str().unwrap_or("");
            *e = RULES.iter().position(|x| *x == rule).map_or(0, |i| i + 1);
        }
    }
    out
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

struct Outcome {
    latencies: Vec<Duration>,
    writes: u64,
    per_subject: u64,
    /// Bytes written, and what one report per subject would have written.
    bytes: (u64, u64),
    largest: usize,
    reports: usize,
    changes: usize,
}

fn run(rt: &tokio::runtime::Runtime, batch: Duration) -> Outcome {
    let pods = env("REPORTS_BENCH_PODS", 1000);
    let rate = env("REPORTS_BENCH_RATE", 50);
    let changes = env("REPORTS_BENCH_CHANGES", 1000);
    let _guard = rt.enter();
    let sim = rt.block_on(Sim::start(SimConfig::default())).unwrap();
    let dir = common::scratch(&format!("bench_reports_{}", batch.as_millis()));
    std::fs::copy(common::plugin("pod_security"), dir.join("pod-security.wasm")).unwrap();
    let namespaces = ["team-a", "team-b"];
    for ns in namespaces {
        sim.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
            .unwrap();
    }
    let mut live: Vec<(String, String)> = Vec::new();
    for i in 0..pods {
        let (ns, name) = (namespaces[i % 2], format!("pod-{i:05}"));
        sim.insert(pod(ns, &name, i % 6)).unwrap();
        live.push((ns.to_string(), name));
    }
    let options = WriterOptions {
        batch,
        ..Default::default()
    };
    let daemon = rt
        .block_on(Daemon::start(
            sim.kube_config(),
            &dir,
            Default::default(),
            ManagerOptions::default(),
            Some(options),
        ))
        .unwrap();
    let aggregator = daemon.manager.reports();
    // Wait for every pod's five results to be written.
    let want = pods * 5;
    let started = Instant::now();
    loop {
        let (_, held, _) = aggregator.counts();
        if held == want && aggregator.stats.phase() == "current" && !aggregator.has_dirty() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "reports never settled"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(batch * 2 + Duration::from_millis(500));

    // Watch the reports; each event settles the pending changes it shows.
    let pending: Pending = Arc::default();
    let largest = Arc::new(Mutex::new(0usize));
    let gvk = GroupVersionKind::gvk("wgpolicyk8s.io", "v1alpha2", "PolicyReport");
    let api: Api<DynamicObject> = Api::all_with(sim.client(), &ApiResource::from_gvk(&gvk));
    let rv = rt
        .block_on(api.list_metadata(&Default::default()))
        .unwrap()
        .metadata
        .resource_version
        .unwrap_or_default();
    let latencies = Arc::new(Mutex::new(Vec::new()));
    let watcher = {
        let (pending, latencies, largest) = (pending.clone(), latencies.clone(), largest.clone());
        rt.spawn(async move {
            let mut stream = api.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
            // A report holds some of its namespace's pods: a pod is gone
            // when no report of its namespace names it.
            let mut seen: HashMap<(String, String), HashMap<String, usize>> = HashMap::new();
            while let Some(Ok(event)) = stream.next().await {
                let (obj, deleted) = match event {
                    WatchEvent::Added(o) | WatchEvent::Modified(o) => (o, false),
                    WatchEvent::Deleted(o) => (o, true),
                    _ => continue,
                };
                let ns = obj.metadata.namespace.clone().unwrap_or_default();
                let name = obj.metadata.name.clone().unwrap_or_default();
                let v = serde_json::to_value(&obj).unwrap();
                let mut l = largest.lock().unwrap();
                *l = (*l).max(v.to_string().len());
                drop(l);
                if deleted {
                    seen.remove(&(ns.clone(), name));
                } else {
                    seen.insert((ns.clone(), name), flaws(&v));
                }
                let now = Instant::now();
                let mut p = pending.lock().unwrap();
                p.retain(|(pns, pod), (want, at)| {
                    if *pns != ns {
                        return true;
                    }
                    let shown = seen
                        .iter()
                        .filter(|((rns, _), _)| *rns == ns)
                        .find_map(|(_, f)| f.get(pod).copied());
                    let arrived = match want {
                        Want::Gone => shown.is_none(),
                        Want::Flaw(f) => shown == Some(*f),
                    };
                    if arrived {
                        latencies.lock().unwrap().push(now - *at);
                    }
                    !arrived
                });
            }
        })
    };
    std::thread::sleep(Duration::from_millis(500));

    let writes_before = sim.request_count("create", "policyreports")
        + sim.request_count("patch", "policyreports")
        + sim.request_count("delete", "policyreports");
    let per_subject_before = aggregator.stats.per_subject_writes();
    let bytes_before = aggregator.stats.bytes();
    let period = Duration::from_secs_f64(1.0 / rate as f64);
    let churn_started = Instant::now();
    let mut next = 0usize;
    for i in 0..changes {
        let due = churn_started + period * i as u32;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let key;
        let want;
        match i % 3 {
            0 => {
                let ns = namespaces[i % 2];
                let name = format!("new-{i:05}");
                key = (ns.to_string(), name.clone());
                want = Want::Flaw(i % 6);
                pending
                    .lock()
                    .unwrap()
                    .insert(key.clone(), (want, Instant::now()));
                sim.insert(pod(ns, &name, i % 6)).unwrap();
                live.push(key);
            }
            1 => {
                let (ns, name) = live[(next * 7919) % live.len()].clone();
                next += 1;
                let flaw = (i / 3) % 6;
                key = (ns.clone(), name.clone());
                pending
                    .lock()
                    .unwrap()
                    .insert(key.clone(), (Want::Flaw(flaw), Instant::now()));
                sim.update("pods", pod(&ns, &name, flaw)).unwrap();
            }
            _ => {
                let (ns, name) = live.swap_remove((next * 104_729) % live.len());
                next += 1;
                pending
                    .lock()
                    .unwrap()
                    .insert((ns.clone(), name.clone()), (Want::Gone, Instant::now()));
                sim.delete("pods", Some(&ns), &name).unwrap();
            }
        }
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while !pending.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "changes never reached the reports");
        std::thread::sleep(Duration::from_millis(20));
    }
    let writes = sim.request_count("create", "policyreports")
        + sim.request_count("patch", "policyreports")
        + sim.request_count("delete", "policyreports")
        - writes_before;
    let per_subject = aggregator.stats.per_subject_writes() - per_subject_before;
    let bytes_after = aggregator.stats.bytes();
    let bytes = (bytes_after.0 - bytes_before.0, bytes_after.1 - bytes_before.1);
    let reports = rt.block_on(async {
        let gvk = GroupVersionKind::gvk("wgpolicyk8s.io", "v1alpha2", "PolicyReport");
        let api: Api<DynamicObject> = Api::all_with(sim.client(), &ApiResource::from_gvk(&gvk));
        api.list(&Default::default()).await.unwrap().items.len()
    });
    watcher.abort();
    daemon.shutdown();
    let mut latencies = latencies.lock().unwrap().clone();
    latencies.sort();
    let largest = *largest.lock().unwrap();
    Outcome {
        latencies,
        writes,
        per_subject,
        bytes,
        largest: largest.max(aggregator.stats.largest()),
        reports,
        changes,
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let pods = env("REPORTS_BENCH_PODS", 1000);
    let rate = env("REPORTS_BENCH_RATE", 50);
    println!("{pods} pods x 5 rules, churn at {rate} changes/s (creates, updates, deletes in turn)");
    println!(
        "| batch | change -> report p50 | p95 | max | report writes / 1,000 changes | MiB written | one report per subject: writes | MiB | largest report | reports |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for batch in [Duration::from_millis(1000), Duration::from_millis(200)] {
        let o = run(&rt, batch);
        let per_k = |n: u64| n as f64 * 1000.0 / o.changes as f64;
        let mib = |b: u64| b as f64 * 1000.0 / o.changes as f64 / (1 << 20) as f64;
        println!(
            "| {} ms | {:.0} ms | {:.0} ms | {:.0} ms | {:.0} | {:.1} | {:.0} | {:.1} | {:.0} KiB | {} |",
            batch.as_millis(),
            percentile(&o.latencies, 50.0).as_secs_f64() * 1e3,
            percentile(&o.latencies, 95.0).as_secs_f64() * 1e3,
            o.latencies.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
            per_k(o.writes),
            mib(o.bytes.0),
            per_k(o.per_subject),
            mib(o.bytes.1),
            o.largest as f64 / 1024.0,
            o.reports,
        );
    }
}
