//! On the real kube-apiserver (see `envtest`; a pair of its own, since the
//! webhook configurations `wink` are cluster-wide): wink's webhooks as the
//! API server calls them. `admit-probe` plugins, each on the namespaces
//! labelled for it: one answers (a denial with its code and message, a
//! mutation stored, a warning shown by kubectl), one traps under failurePolicy
//! Fail (refused, saying so), one loops past its 1 s deadline under Ignore
//! (admitted), one in audit mode (a denial admitted with a warning). Dry
//! runs are reviewed too, and store nothing. wink's
//! own namespace is never sent to a webhook. The serving certificate is
//! renewed without a restart and the API server keeps trusting it (the same
//! CA). `unique-ingress-host` refuses an Ingress for a host another
//! namespace's Ingress routes, from its field index over
//! `spec.rules[*].host`, and every call shows in wink's admission metrics.
//! With wink stopped, its Fail webhooks refuse Pods elsewhere, and never in
//! its own namespace.

use crate::cache_support::{Setup, WAIT, free_port, wait_synced};
use crate::common::scratch;
use crate::envtest::{ControlPlane, Kubectl, Options};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const WINK_NS: &str = "wink-system";

/// `kubectl create` of `object`: (success, stderr).
async fn create(kubectl: &Kubectl, object: &Value) -> (bool, String) {
    let (ok, _, stderr) = kubectl
        .run_with(
            &["create", "--validate=false", "-f", "-"],
            Some(&object.to_string()),
        )
        .await;
    (ok, stderr)
}

fn pod(ns: &str, name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "i"}]}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_server_calls_wink_and_hears_each_answer_and_failure_policy() {
    let Some(cp) = ControlPlane::start(&Options::default()) else {
        return;
    };
    let dir = scratch("real_admission_kubectl");
    let kubectl = cp.kubectl(&dir);
    let s = Setup::with_kubeconfig("real_admission", &cp.kubeconfig);
    let on = |label: &str| Some(format!("probe={label}"));
    s.install(
        "admit_probe",
        "answers",
        Some(&json!({"namespaces": on("answers")})),
    );
    s.install(
        "admit_probe",
        "trap-fail",
        Some(&json!({"behaviour": "trap", "namespaces": on("trap")})),
    );
    s.install(
        "admit_probe",
        "loop-ignore",
        Some(&json!({"behaviour": "loop", "timeout": 1, "failure": "ignore", "namespaces": on("loop")})),
    );
    s.install(
        "admit_probe",
        "audited",
        Some(&json!({"namespaces": on("audit")})),
    );
    // A context-aware policy over every namespace's Ingresses, from a field
    // index through a list (`spec.rules[*].host`).
    s.install("unique_ingress_host", "unique-ingress-host", None);
    let grants = s.plugins.parent().unwrap().join("grants.yaml");
    std::fs::write(&grants, "plugins:\n  audited:\n    mode: audit\n").unwrap();
    for ns in [WINK_NS, "answers", "trap", "loop", "audit"] {
        let label = if ns == WINK_NS {
            json!({"probe": "answers"})
        } else {
            json!({"probe": ns})
        };
        let namespace =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": label}});
        assert!(create(&kubectl, &namespace).await.0);
        let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}});
        assert!(create(&kubectl, &sa).await.0);
    }
    let port = free_port();
    let (addr, url) = (format!("127.0.0.1:{port}"), format!("https://127.0.0.1:{port}"));
    let admin = format!("127.0.0.1:{}", free_port());
    let mut wink = s.run(&[
        "--admin-addr",
        &admin,
        "--admission-addr",
        &addr,
        "--admission-webhook-url",
        &url,
        "--admission-namespace",
        WINK_NS,
        // Valid 8 s: renewed after about 5.
        "--admission-cert-validity-secs",
        "8",
        "--grants",
        grants.to_str().unwrap(),
        "--call-deadline-ms",
        "5000",
    ]);
    for p in [
        "answers",
        "trap-fail",
        "loop-ignore",
        "audited",
        "unique-ingress-host",
    ] {
        wait_synced(&wink, p);
    }
    // The configurations, once written (a Pod admitted by `answers` is mutated).
    let deadline = Instant::now() + WAIT;
    let mut n = 0;
    loop {
        n += 1;
        let name = format!("first-{n}");
        let (ok, stderr) = create(&kubectl, &pod("answers", &name, json!({}))).await;
        assert!(ok, "{stderr}");
        let stored = kubectl
            .ok(&[
                "get",
                "pod",
                &name,
                "-n",
                "answers",
                "-o",
                "jsonpath={.metadata.labels.probed}",
            ])
            .await;
        if stored == "yes" {
            break;
        }
        assert!(Instant::now() < deadline, "the webhooks were never called");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    // An answer: a denial with the plugin's message; an allowance with its warning.
    let (ok, stderr) = create(&kubectl, &pod("answers", "bad", json!({"deny": "1"}))).await;
    assert!(!ok);
    assert!(
        stderr.contains(r#"admission webhook "answers.validate.wink.dev" denied the request"#)
            && stderr.contains("is labelled deny"),
        "{stderr}"
    );
    // Dry runs (`kubectl --dry-run=server`) reach the webhooks too, as
    // `sideEffects: None` allows: the denial is the same; a mutation is in
    // the answer and nothing is stored.
    let (ok, _, stderr) = kubectl
        .run_with(
            &["create", "--dry-run=server", "--validate=false", "-f", "-"],
            Some(&pod("answers", "dry-bad", json!({"deny": "1"})).to_string()),
        )
        .await;
    assert!(!ok && stderr.contains("is labelled deny"), "{stderr}");
    let answered = kubectl
        .run_with(
            &[
                "create",
                "--dry-run=server",
                "--validate=false",
                "-o",
                "json",
                "-f",
                "-",
            ],
            Some(&pod("answers", "dry-ok", json!({})).to_string()),
        )
        .await;
    assert!(answered.0, "{}", answered.2);
    let answered: Value = serde_json::from_str(&answered.1).unwrap();
    assert_eq!(answered["metadata"]["labels"]["probed"], "yes", "{answered}");
    let (stored, _, _) = kubectl.run(&["get", "pod", "dry-ok", "-n", "answers"]).await;
    assert!(!stored, "a dry run stored nothing");
    // failurePolicy Fail for a plugin that traps: refused, saying why.
    let (ok, stderr) = create(&kubectl, &pod("trap", "t", json!({}))).await;
    assert!(!ok);
    assert!(
        stderr.contains("wink: plugin trap-fail gave no answer"),
        "{stderr}"
    );
    // failurePolicy Ignore for a plugin that loops past its deadline: admitted.
    let started = Instant::now();
    let (ok, stderr) = create(&kubectl, &pod("loop", "l", json!({}))).await;
    assert!(ok, "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    // Audit mode: a denial admitted with a warning.
    let (ok, stderr) = create(&kubectl, &pod("audit", "a", json!({"deny": "1"}))).await;
    assert!(ok, "{stderr}");
    assert!(stderr.contains("would deny this request"), "{stderr}");
    // wink's own namespace matches `answers`' selector, but no webhook sees it.
    let (ok, stderr) = create(&kubectl, &pod(WINK_NS, "own", json!({"deny": "1"}))).await;
    assert!(ok, "wink's namespace is never sent to a webhook: {stderr}");

    // unique-ingress-host: a host another namespace's Ingress routes is refused.
    let ingress = |ns: &str, name: &str, host: &str| {
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": name, "namespace": ns},
            "spec": {"rules": [{"host": "www.example.com"}, {"host": host}]}})
    };
    let (ok, stderr) = create(&kubectl, &ingress("answers", "shop", "shop.example.com")).await;
    assert!(ok, "{stderr}");
    // The informer sees the first Ingress a moment after it is stored.
    let deadline = Instant::now() + WAIT;
    let mut n = 0;
    let stderr = loop {
        n += 1;
        let (ok, stderr) = create(
            &kubectl,
            &ingress("audit", &format!("copy-{n}"), "shop.example.com"),
        )
        .await;
        if !ok {
            break stderr;
        }
        assert!(
            Instant::now() < deadline,
            "a second Ingress for shop.example.com was always admitted"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        stderr.contains("unique-ingress-host: the host www.example.com is already routed by the Ingress")
            || stderr
                .contains("unique-ingress-host: the host shop.example.com is already routed by the Ingress"),
        "{stderr}"
    );

    // The calls in wink's admission metrics, as the API server made them.
    let (_, metrics) = crate::cache_support::http(&admin, "GET", "/metrics").await;
    let series = |needle: &[&str]| {
        metrics
            .lines()
            .filter(|l| {
                l.starts_with("wink_admission_requests_total{") && needle.iter().all(|n| l.contains(n))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>()
    };
    assert!(
        series(&[
            r#"plugin="unique-ingress-host""#,
            r#"door="validate""#,
            r#"result="denied""#
        ]) >= 1.0,
        "{metrics}"
    );
    assert!(
        series(&[r#"plugin="unique-ingress-host""#, r#"result="allowed""#]) >= 1.0,
        "{metrics}"
    );
    assert!(
        series(&[r#"plugin="answers""#, r#"door="mutate""#, r#"result="patched""#]) >= 1.0,
        "{metrics}"
    );
    assert!(
        series(&[r#"plugin="trap-fail""#, r#"policy="Fail""#]) >= 1.0,
        "{metrics}"
    );

    // A renewed serving certificate, trusted by the API server through the same CA.
    wink.wait_for_line("admission serving certificate renewed", WAIT);
    let (ok, stderr) = create(&kubectl, &pod("answers", "after-renewal", json!({"deny": "1"}))).await;
    assert!(!ok && stderr.contains("is labelled deny"), "{stderr}");

    // wink stopped: its Fail webhooks refuse, but not in its own namespace.
    wink.terminate(Duration::from_secs(20));
    let (ok, stderr) = create(&kubectl, &pod("answers", "stopped", json!({}))).await;
    assert!(!ok && stderr.contains("failed calling webhook"), "{stderr}");
    let (ok, stderr) = create(&kubectl, &pod(WINK_NS, "own-2", json!({}))).await;
    assert!(ok, "{stderr}");
}
