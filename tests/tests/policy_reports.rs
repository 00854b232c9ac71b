//! End-to-end: policy results become PolicyReports on the simulated API
//! server. `pod-security` reports one result per rule per pod; the reports
//! hold exactly the current results with correct summaries, follow fixes
//! and deletions, stay right across a restart that missed deletions, batch
//! many changes into few writes, are written by the leader only, and read
//! with `kubectl`; `--report-api openreports` writes the same reports as
//! OpenReports Reports, in `wink run` and in `wink dev`.

use crate::cache_support;
use crate::common;
use crate::report_support;

use cache_support::*;
use common::Wink;
use report_support::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::Duration;
use wink::reports::ReportApi;
use wink_sim::{Sim, SimConfig};

/// Pods as (namespace, name, flaw).
type Pods = Vec<(String, String, usize)>;

/// `n` pods over two namespaces, every sixth of each flaw.
async fn fifty_pods(sim: &Sim, n: usize) -> Pods {
    namespace(sim, "team-a").await;
    namespace(sim, "team-b").await;
    let mut pods = Vec::new();
    for i in 0..n {
        let ns = if i % 2 == 0 { "team-a" } else { "team-b" };
        let name = format!("pod-{i:02}");
        sim.insert(violating_pod(ns, &name, i % 6)).unwrap();
        pods.push((ns.to_string(), name, i % 6));
    }
    pods
}

fn remove(pods: &mut Pods, name: &str) -> (String, String, usize) {
    let i = pods.iter().position(|p| p.1 == name).unwrap();
    pods.remove(i)
}

fn kubectl(s: &Setup, args: &[&str]) -> String {
    let out = std::process::Command::new("/usr/bin/kubectl")
        .arg("--kubeconfig")
        .arg(&s.kubeconfig)
        .args(args)
        .output()
        .expect("kubectl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "kubectl {args:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_security_reports_follow_fixes_deletions_and_a_restart() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let mut pods = fifty_pods(&sim, 50).await;
    let s = Setup::new("reports_pod_security", &sim);
    s.install("pod_security", "pod-security", None);
    let mut wink = s.run(&["--report-batch-ms", "200"]);
    until_reports(&sim, &expected(&pods), WAIT).await;
    let names: BTreeSet<String> = reports(&sim)
        .await
        .iter()
        .map(|r| {
            format!(
                "{}/{}",
                r["metadata"]["namespace"].as_str().unwrap(),
                r["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        names,
        BTreeSet::from(["team-a/wink-report".to_string(), "team-b/wink-report".to_string()])
    );

    // kubectl reads them as it would on a cluster.
    let table = kubectl(&s, &["get", "policyreports", "-A"]);
    assert!(
        table.contains("team-a") && table.contains("wink-report"),
        "{table}"
    );
    let yaml = kubectl(
        &s,
        &["get", "policyreport", "wink-report", "-n", "team-b", "-o", "yaml"],
    );
    assert!(
        yaml.contains("kind: PolicyReport") && yaml.contains("rule: privileged"),
        "{yaml}"
    );
    let short = kubectl(&s, &["get", "polr", "-n", "team-a", "-o", "name"]);
    assert_eq!(short.trim(), "policyreport.wgpolicyk8s.io/wink-report");

    // A fix: the privileged pod is replaced by a compliant one (a pod's
    // securityContext is immutable; a rollout replaces it).
    let (ns, name, _) = remove(&mut pods, "pod-01");
    sim.delete("pods", Some(&ns), &name).unwrap();
    sim.insert(violating_pod(&ns, &name, 0)).unwrap();
    pods.push((ns, name, 0));
    // A deletion: its results go.
    let (ns, name, _) = remove(&mut pods, "pod-02");
    sim.delete("pods", Some(&ns), &name).unwrap();
    until_reports(&sim, &expected(&pods), WAIT).await;

    // Deleted while wink is down: gone from the reports after the restart,
    // with one write per changed namespace and none elsewhere.
    wink.terminate(WAIT).expect("wink exits");
    for gone in ["pod-03", "pod-05"] {
        let (ns, name, _) = remove(&mut pods, gone);
        sim.delete("pods", Some(&ns), &name).unwrap();
    }
    let before = report_writes(&sim);
    let wink = s.run(&["--report-batch-ms", "200"]);
    wink.wait_for_line("policy reports: reconciled", WAIT);
    until_reports(&sim, &expected(&pods), WAIT).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let writes = report_writes(&sim) - before;
    assert_eq!(
        writes, 1,
        "only team-b changed (pod-03 and pod-05): {writes} writes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_labels_reports_fail_then_pass_once_labeled() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("reports_require_labels", &sim);
    s.install("require_labels", "require-labels", None);
    sim.insert(serde_json::to_value(deployment("default", "web", 1)).unwrap())
        .unwrap();
    let grants = s.plugins.parent().unwrap().join("grants.yaml");
    std::fs::write(
        &grants,
        "plugins:\n  require-labels:\n    mode: audit\n    events: true\n    writes:\n      - {apiVersion: apps/v1, kind: Deployment, verbs: [patch]}\n",
    )
    .unwrap();
    let _wink = s.run(&["--grants", grants.to_str().unwrap(), "--report-batch-ms", "200"]);
    let row = |result: &str| {
        BTreeSet::from([(
            "default".to_string(),
            "web".to_string(),
            "require-labels".to_string(),
            "require-label-team".to_string(),
            result.to_string(),
        )])
    };
    // Audit mode: the patch is a dry run, so the Deployment stays failing.
    until_reports(&sim, &row("fail"), WAIT).await;
    let mut web = serde_json::to_value(deployment("default", "web", 1)).unwrap();
    web["metadata"]["labels"] = serde_json::json!({"team": "payments"});
    sim.update("deployments.apps", web).unwrap();
    until_reports(&sim, &row("pass"), WAIT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_changes_take_far_fewer_report_writes() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let mut pods = fifty_pods(&sim, 50).await;
    let s = Setup::new("reports_batching", &sim);
    s.install("pod_security", "pod-security", None);
    let _wink = s.run(&[]);
    until_reports(&sim, &expected(&pods), WAIT).await;
    let before = report_writes(&sim);
    // 1,000 changes over about five seconds: 600 creates, 400 deletes.
    for i in 0..1000 {
        if i % 5 < 3 || pods.len() < 10 {
            let ns = if i % 2 == 0 { "team-a" } else { "team-b" };
            let name = format!("churn-{i:04}");
            sim.insert(violating_pod(ns, &name, i % 6)).unwrap();
            pods.push((ns.to_string(), name, i % 6));
        } else {
            let (ns, name, _) = pods.remove((i * 7) % pods.len());
            sim.delete("pods", Some(&ns), &name).unwrap();
        }
        if i % 10 == 9 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    until_reports(&sim, &expected(&pods), WAIT).await;
    let writes = report_writes(&sim) - before;
    println!("1000 changes: {writes} report writes");
    // At most a tenth of one write per change: batching, not a per-change
    // write (11 on this machine; the bound leaves room for a slow one).
    assert!(
        writes > 0 && writes <= 100,
        "{writes} report writes for 1,000 changes"
    );
}

/// A replica with leader election and an admin server.
fn reporting_replica(s: &Setup, identity: &str, admin: &str) -> Wink {
    replica(s, identity, &["--admin-addr", admin, "--report-batch-ms", "200"])
}

/// The report writer's successful writes, from a replica's /metrics.
async fn writes_of(admin: &str) -> u64 {
    let (_, text) = http(admin, "GET", "/metrics").await;
    text.lines()
        .filter(|l| l.starts_with("wink_report_requests_total{"))
        .filter(|l| {
            ["op=\"create\"", "op=\"patch\"", "op=\"delete\""]
                .iter()
                .any(|op| l.contains(op))
        })
        .filter(|l| l.contains("outcome=\"2"))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap() as u64)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_writes_reports_and_a_failover_keeps_them_right() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let mut pods = fifty_pods(&sim, 20).await;
    let s = Setup::new("reports_leader", &sim);
    s.install("pod_security", "pod-security", None);
    let (admin_a, admin_b) = (
        format!("127.0.0.1:{}", free_port()),
        format!("127.0.0.1:{}", free_port()),
    );
    let mut a = reporting_replica(&s, "a", &admin_a);
    a.wait_for_line("became the leader", WAIT);
    let b = reporting_replica(&s, "b", &admin_b);
    wait_synced(&b, "pod-security");
    until_reports(&sim, &expected(&pods), WAIT).await;
    sim.insert(violating_pod("team-a", "late", 1)).unwrap();
    pods.push(("team-a".into(), "late".into(), 1));
    until_reports(&sim, &expected(&pods), WAIT).await;
    assert!(writes_of(&admin_a).await >= 3, "the leader wrote");
    assert_eq!(writes_of(&admin_b).await, 0, "the standby writes nothing");

    // The leader goes; changes made meanwhile show up once b leads.
    a.terminate(WAIT).expect("a exits");
    for gone in ["pod-00", "pod-01"] {
        let (ns, name, _) = remove(&mut pods, gone);
        sim.delete("pods", Some(&ns), &name).unwrap();
    }
    sim.insert(violating_pod("team-b", "after", 3)).unwrap();
    pods.push(("team-b".into(), "after".into(), 3));
    b.wait_for_line("became the leader", WAIT);
    until_reports(&sim, &expected(&pods), WAIT).await;
    assert!(writes_of(&admin_b).await >= 1, "the new leader writes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_writes_the_server_refuses_are_retried_until_the_reports_are_right() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let mut pods = fifty_pods(&sim, 10).await;
    let s = Setup::new("reports_faults", &sim);
    s.install("pod_security", "pod-security", None);
    let wink = s.run(&["--report-batch-ms", "100"]);
    until_reports(&sim, &expected(&pods), WAIT).await;
    // The writer's next writes (server-side applies) fail: 500 three
    // times, then 429.
    sim.faults().fail_next_on(3, 500, "patch", "policyreports");
    let (ns, name, _) = remove(&mut pods, "pod-04");
    sim.delete("pods", Some(&ns), &name).unwrap();
    wink.wait_for_line("policy report not written (retried)", WAIT);
    sim.faults().fail_next_on(1, 429, "patch", "policyreports");
    sim.insert(violating_pod("team-a", "late", 2)).unwrap();
    pods.push(("team-a".into(), "late".into(), 2));
    until_reports(&sim, &expected(&pods), WAIT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_reports_off_leaves_the_cluster_alone() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    fifty_pods(&sim, 6).await;
    let s = Setup::new("reports_off", &sim);
    s.install("pod_security", "pod-security", None);
    let wink = s.run(&["--policy-reports=false", "--report-batch-ms", "100"]);
    wait_synced(&wink, "pod-security");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(sim.request_count("create", "customresourcedefinitions"), 0);
    assert_eq!(sim.request_count("list", "policyreports"), 0);
    assert!(reports(&sim).await.is_empty());
}

/// A report as both APIs must hold it: its place, summary and results,
/// without what differs by API or by server (kind, timestamps, uids).
fn comparable(r: &Value) -> Value {
    let mut results = r["results"].clone();
    for x in results.as_array_mut().unwrap() {
        let x = x.as_object_mut().unwrap();
        x.remove("timestamp");
        x["resources"][0].as_object_mut().unwrap().remove("uid");
    }
    serde_json::json!({
        "namespace": r["metadata"]["namespace"],
        "name": r["metadata"]["name"],
        "summary": r["summary"],
        "results": results,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_results_become_openreports_reports_or_policyreports_as_asked() {
    let mut written = Vec::new();
    for (api, other) in [
        (ReportApi::OpenReports, ReportApi::Wgpolicyk8s),
        (ReportApi::Wgpolicyk8s, ReportApi::OpenReports),
    ] {
        let sim = Sim::start(SimConfig::default()).await.unwrap();
        let mut pods = fifty_pods(&sim, 12).await;
        let s = Setup::new(&format!("reports_api_{api}"), &sim);
        s.install("pod_security", "pod-security", None);
        let flag = format!("--report-api={api}");
        let _wink = s.run(&[&flag, "--report-batch-ms", "200"]);
        until_reports_in(&sim, api, &expected(&pods), WAIT).await;
        assert!(
            reports_in(&sim, other).await.is_empty(),
            "{api}: nothing in {other}"
        );
        assert_eq!(
            sim.request_count("create", "customresourcedefinitions"),
            2,
            "{api}: its two CRDs installed, no others"
        );
        let mut now: Vec<Value> = reports_in(&sim, api).await.iter().map(comparable).collect();
        now.sort_by_key(|r| r["namespace"].to_string());
        written.push(now);

        // kubectl reads them as it would on a cluster.
        let group = api.group();
        let table = kubectl(&s, &["get", &format!("{}.{group}", api.plural(true)), "-A"]);
        let header = table.lines().next().unwrap_or_default();
        assert!(
            ["NAMESPACE", "NAME", "PASS", "FAIL", "AGE"]
                .iter()
                .all(|c| header.contains(c)),
            "{table}"
        );
        assert!(
            table
                .lines()
                .any(|l| l.starts_with("team-a") && l.contains("wink-report")),
            "{table}"
        );
        let short = kubectl(&s, &["get", api.short_name(true), "-n", "team-a", "-o", "name"]);
        assert_eq!(
            short.trim(),
            format!("{}.{group}/wink-report", api.kind(true).to_lowercase())
        );
        let yaml = kubectl(
            &s,
            &[
                "get",
                api.plural(true),
                "wink-report",
                "-n",
                "team-b",
                "-o",
                "yaml",
            ],
        );
        assert!(
            yaml.contains(&format!("apiVersion: {}", api.api_version()))
                && yaml.contains(&format!("kind: {}", api.kind(true)))
                && yaml.contains("source: wink")
                && yaml.contains("rule: privileged"),
            "{yaml}"
        );

        // The same batching: one deletion, one write of its namespace's report.
        let before = report_writes_in(&sim, api);
        let (ns, name, _) = remove(&mut pods, "pod-04");
        sim.delete("pods", Some(&ns), &name).unwrap();
        until_reports_in(&sim, api, &expected(&pods), WAIT).await;
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(report_writes_in(&sim, api) - before, 1, "{api}");
        assert_eq!(report_writes_in(&sim, other), 0, "{api}: no write in {other}");
    }
    assert_eq!(written[0].len(), 2, "a report per namespace");
    assert_eq!(
        written[0], written[1],
        "the same reports, summaries and results in either API"
    );
}

/// `wink dev` compiles every example first, slowly while other builds
/// share the cores.
const DEV_WAIT: Duration = Duration::from_secs(300);

#[test]
fn wink_dev_writes_openreports_reports_when_asked() {
    let dir = common::scratch("dev_openreports");
    let kubeconfig = dir.join("kubeconfig");
    let precompiled = dir.join("precompiled");
    let seed = dir.join("seed");
    std::fs::create_dir_all(&seed).unwrap();
    let pod = violating_pod("default", "privileged", 1);
    std::fs::write(seed.join("pod.json"), pod.to_string()).unwrap();
    let wink = Wink::spawn_in(
        &common::root(),
        &[
            "dev",
            "--churn",
            "0",
            "--seed",
            seed.to_str().unwrap(),
            "--kubeconfig-out",
            kubeconfig.to_str().unwrap(),
            "--precompiled",
            precompiled.to_str().unwrap(),
            "--report-api",
            "openreports",
        ],
    );
    wink.wait_for_line("plugin synced plugin=pod-security", DEV_WAIT);
    wink.wait_until("the reports reconciled in openreports", DEV_WAIT, |w| {
        w.lines()
            .iter()
            .any(|l| l.contains("policy reports: reconciled") && l.contains("api=openreports"))
    });
    let get = |args: &[&str]| {
        let out = std::process::Command::new("/usr/bin/kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(args)
            .output()
            .expect("kubectl runs");
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    // pod-security's failure about the seeded pod, in a Report.
    let deadline = std::time::Instant::now() + DEV_WAIT;
    loop {
        let yaml = get(&[
            "get",
            "reports.openreports.io",
            "wink-report",
            "-n",
            "default",
            "-o",
            "yaml",
        ]);
        if yaml.contains("name: privileged") && yaml.contains("result: fail") {
            assert!(
                yaml.contains("kind: Report") && yaml.contains("source: wink"),
                "{yaml}"
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no Report about the pod: {yaml}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let old = get(&["get", "policyreports.wgpolicyk8s.io", "-A"]);
    assert!(
        !old.contains("wink-report"),
        "no PolicyReport in openreports mode: {old}"
    );
}
