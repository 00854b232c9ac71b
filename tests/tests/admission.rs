//! End-to-end: the daemon's admission webhook server (`--admission-addr`)
//! on the simulated API server, with the `admit-probe` test plugin.
//! AdmissionReviews POSTed over HTTPS (trusting the CA wink keeps in its
//! Secret) are answered allowed or denied with the plugin's code and
//! message, the uid echoed, a mutation as a JSON Patch; a malformed review
//! gets 400; a Lease is never asked about. The CA Secret is created on the
//! first start and reused on a restart. The webhook configurations `wink`
//! carry one webhook per plugin and hook with the URL, caBundle,
//! namespace exclusions and no Lease rule; the simulated API server calls
//! them on writes; they go when the plugin goes. A plugin that traps or
//! loops past its webhook's deadline gets its failure policy (Fail denies,
//! Ignore allows with a warning), and audit mode allows with a warning.

pub(crate) mod support;

use crate::cache_support::*;
use crate::kubectl_support;
use base64::Engine;
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::{configuration, configured_url, post, post_head, served_certificate};
use wink_sim::{Sim, SimConfig};

pub(crate) use support::{ask, ca_pem, pod, review, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviews_are_answered_configurations_kept_and_the_ca_reused() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("admission_reviews", &sim);
    s.install(
        "admit_probe",
        "probe",
        Some(&json!({"namespaces": "env notin (test)"})),
    );
    let port = free_port();
    let wink = run(&s, port, &[]);
    wait_synced(&wink, "probe");
    wink.wait_for_line("admission CA created and kept in its Secret", WAIT);
    let ca = ca_pem(&sim).await;

    // Allowed, with the plugin's warning and annotation; the uid echoed.
    let r = ask(
        port,
        &ca,
        "/admission/probe/validate",
        &review("uid-1", pod("ok", json!({}))),
    )
    .await;
    assert_eq!(r["uid"], "uid-1");
    assert_eq!(r["allowed"], true, "{r}");
    assert_eq!(r["warnings"], json!(["admit-probe: checked ok"]));
    assert_eq!(r["auditAnnotations"], json!({"admit-probe/seen": "ok"}));
    // Denied with the plugin's code and message.
    let r = ask(
        port,
        &ca,
        "/admission/probe/validate",
        &review("uid-2", pod("bad", json!({"deny": "1"}))),
    )
    .await;
    assert_eq!(r["uid"], "uid-2");
    assert_eq!(r["allowed"], false, "{r}");
    assert_eq!(r["status"]["code"], 422);
    assert_eq!(r["status"]["message"], "admit-probe: pod bad is labelled deny");
    // A mutation: a JSON Patch, base64.
    let r = ask(
        port,
        &ca,
        "/admission/probe/mutate",
        &review("uid-3", pod("m", json!({"a": "b"}))),
    )
    .await;
    assert_eq!(r["uid"], "uid-3");
    assert_eq!(r["allowed"], true, "{r}");
    assert_eq!(r["patchType"], "JSONPatch");
    let patch = base64::engine::general_purpose::STANDARD
        .decode(r["patch"].as_str().unwrap())
        .unwrap();
    let patch: Value = serde_json::from_slice(&patch).unwrap();
    assert!(
        patch
            .as_array()
            .unwrap()
            .iter()
            .any(|op| op["op"] == "add" && op["path"] == "/metadata/labels/probed" && op["value"] == "yes"),
        "{patch}"
    );
    // Malformed: 400 and a sentence; an unknown path: 404.
    let (status, body) = post(port, &ca, "/admission/probe/validate", "{not json").await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("malformed AdmissionReview: the body is not JSON"),
        "{body}"
    );
    let wrong = json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {}});
    let (status, body) = post(port, &ca, "/admission/probe/validate", &wrong.to_string()).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("admissionReviewVersions must be [v1]"), "{body}");
    let (status, _) = post(
        port,
        &ca,
        "/admission/probe/other",
        &review("u", pod("x", json!({}))),
    )
    .await;
    assert_eq!(status, 404);
    // A body past the cap is refused before it is read.
    let (status, body) = post_head(port, &ca, "/admission/probe/validate", 7 << 20).await;
    assert_eq!(status, 413, "{body}");
    assert!(body.contains("an admission review is at most"), "{body}");
    // A Lease is never asked about.
    let mut lease = serde_json::from_str::<Value>(&review("uid-4", pod("l", json!({"deny": "1"})))).unwrap();
    lease["request"]["resource"] =
        json!({"group": "coordination.k8s.io", "version": "v1", "resource": "leases"});
    let r = ask(port, &ca, "/admission/probe/validate", &lease.to_string()).await;
    assert_eq!(r["allowed"], true, "{r}");

    // The configurations: one webhook per hook, the URL, the CA, the
    // exclusions merged with the plugin's selector, no Lease rule.
    let ca_b64 = base64::engine::general_purpose::STANDARD.encode(ca.as_bytes());
    for (kind, hook) in [
        ("ValidatingWebhookConfiguration", "validate"),
        ("MutatingWebhookConfiguration", "mutate"),
    ] {
        let c = configuration(&sim, &wink, kind, |c| c.is_some()).await.unwrap();
        assert_eq!(c["metadata"]["labels"]["app.kubernetes.io/managed-by"], "wink");
        let hooks = c["webhooks"].as_array().unwrap();
        assert_eq!(hooks.len(), 1, "{c}");
        let w = &hooks[0];
        assert_eq!(w["name"], format!("probe.{hook}.wink.dev"));
        assert_eq!(
            w["clientConfig"]["url"],
            format!("https://127.0.0.1:{port}/admission/probe/{hook}")
        );
        assert_eq!(w["clientConfig"]["caBundle"], ca_b64);
        assert_eq!(w["sideEffects"], "None");
        assert_eq!(w["failurePolicy"], "Fail");
        assert_eq!(w["timeoutSeconds"], 5);
        assert_eq!(w["admissionReviewVersions"], json!(["v1"]));
        let rules = w["rules"].as_array().unwrap();
        assert_eq!(rules.len(), 1, "the Lease rule is dropped: {rules:?}");
        assert_eq!(rules[0]["resources"], json!(["pods"]));
        let exprs = w["namespaceSelector"]["matchExpressions"].as_array().unwrap();
        assert!(
            exprs.contains(&json!({"key": "env", "operator": "NotIn", "values": ["test"]})),
            "{exprs:?}"
        );
        assert!(
            exprs.contains(&json!({"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                   "values": ["default", "kube-system", "kube-node-lease"]})),
            "{exprs:?}"
        );
    }
    wink.wait_for_line("Leases are never matched", WAIT);

    // The simulated API server calls them on a write.
    let pods: Api<Pod> = Api::namespaced(sim.client(), "apps");
    namespace(&sim, "apps").await;
    let mut denied = pod("denied", json!({"deny": "1"}));
    denied["metadata"]["namespace"] = json!("apps");
    let err = pods
        .create(&PostParams::default(), &serde_json::from_value(denied).unwrap())
        .await
        .expect_err("denied by the plugin");
    assert!(
        err.to_string()
            .contains("admit-probe: pod denied is labelled deny"),
        "{err}"
    );
    let mut fine = pod("fine", json!({}));
    fine["metadata"]["namespace"] = json!("apps");
    let stored = pods
        .create(&PostParams::default(), &serde_json::from_value(fine).unwrap())
        .await
        .expect("allowed");
    assert_eq!(
        stored
            .metadata
            .labels
            .unwrap_or_default()
            .get("probed")
            .map(String::as_str),
        Some("yes"),
        "mutated on its way in"
    );

    // A restart reuses the CA; its new serving certificate is trusted by it.
    drop(wink);
    let wink = run(&s, port, &[]);
    wink.wait_for_line("admission CA read from its Secret", WAIT);
    wait_synced(&wink, "probe");
    assert_eq!(ca_pem(&sim).await, ca, "the CA is reused");
    let r = ask(
        port,
        &ca,
        "/admission/probe/validate",
        &review("uid-5", pod("ok", json!({}))),
    )
    .await;
    assert_eq!(r["allowed"], true, "{r}");

    // The plugin goes: so do the configurations.
    std::fs::remove_file(s.plugins.join("probe.wasm")).unwrap();
    for kind in ["ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"] {
        configuration(&sim, &wink, kind, |c| c.is_none()).await;
    }
    drop(wink);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failure_policies_and_audit_mode_answer_for_a_plugin_that_cannot() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("admission_failures", &sim);
    s.install("admit_probe", "trap-fail", Some(&json!({"behaviour": "trap"})));
    s.install(
        "admit_probe",
        "trap-ignore",
        Some(&json!({"behaviour": "trap", "failure": "ignore"})),
    );
    s.install(
        "admit_probe",
        "loop-fail",
        Some(&json!({"behaviour": "loop", "timeout": 1})),
    );
    s.install(
        "admit_probe",
        "loop-ignore",
        Some(&json!({"behaviour": "loop", "timeout": 1, "failure": "ignore"})),
    );
    s.install("admit_probe", "audited", None);
    let grants = s.plugins.parent().unwrap().join("grants.yaml");
    std::fs::write(&grants, "plugins:\n  audited:\n    mode: audit\n").unwrap();
    let port = free_port();
    // Calls may run 5 s: the webhook's own deadline (under its 1 s timeout) answers first.
    let wink = run(
        &s,
        port,
        &["--grants", grants.to_str().unwrap(), "--call-deadline-ms", "5000"],
    );
    for p in ["trap-fail", "trap-ignore", "loop-fail", "loop-ignore", "audited"] {
        wait_synced(&wink, p);
    }
    let ca = ca_pem(&sim).await;
    let bad = review("uid-f", pod("bad", json!({"deny": "1"})));

    let r = ask(port, &ca, "/admission/trap-fail/validate", &bad).await;
    assert_eq!(r["uid"], "uid-f");
    assert_eq!(r["allowed"], false, "{r}");
    let message = r["status"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("wink: plugin trap-fail gave no answer")
            && message.contains("failurePolicy Fail"),
        "{message}"
    );
    let r = ask(port, &ca, "/admission/trap-ignore/mutate", &bad).await;
    assert_eq!(r["allowed"], true, "{r}");
    assert!(r.get("patch").is_none());
    assert!(
        r["warnings"][0]
            .as_str()
            .unwrap()
            .contains("failurePolicy Ignore"),
        "{r}"
    );

    // A call stopped at the deadline leaves its instance unusable (its store
    // was cancelled mid-call): each later request still reaches a guest that
    // runs (here: loops again) on a fresh instance, more requests than the
    // pool has instances.
    for (plugin, allowed) in [("loop-fail", false), ("loop-ignore", true)] {
        for round in 0..3 {
            let started = Instant::now();
            let r = ask(port, &ca, &format!("/admission/{plugin}/validate"), &bad).await;
            let took = started.elapsed();
            assert!(
                took < Duration::from_millis(1500),
                "answered at the webhook deadline (0.8 s), not after the call's (5 s): {took:?}"
            );
            assert_eq!(r["allowed"], allowed, "{plugin}: {r}");
            let said = r["status"]["message"]
                .as_str()
                .or(r["warnings"][0].as_str())
                .unwrap_or_default();
            assert!(
                said.contains("no answer within"),
                "{plugin}, request {round}: {r}"
            );
        }
    }

    // Audit mode: a denial allowed, with a warning saying so.
    let r = ask(port, &ca, "/admission/audited/validate", &bad).await;
    assert_eq!(r["allowed"], true, "{r}");
    let warnings = r["warnings"].to_string();
    assert!(
        warnings.contains("would deny this request: admit-probe: pod bad is labelled deny"),
        "{warnings}"
    );
    let r = ask(port, &ca, "/admission/audited/mutate", &bad).await;
    assert_eq!(r["allowed"], true, "{r}");
    assert!(r.get("patch").is_none(), "audit mode changes nothing: {r}");
    drop(wink);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_certificates_are_served_and_read_again_when_they_change() {
    use wink_sim::webhook_testing::WebhookCerts;
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("admission_files", &sim);
    s.install("admit_probe", "probe", None);
    let dir = s.plugins.parent().unwrap().to_path_buf();
    let (cert, key, ca) = (dir.join("tls.crt"), dir.join("tls.key"), dir.join("ca.crt"));
    let write = |c: &WebhookCerts| {
        std::fs::write(&cert, &c.cert_pem).unwrap();
        std::fs::write(&key, &c.key_pem).unwrap();
        std::fs::write(&ca, &c.ca_pem).unwrap();
    };
    let first = WebhookCerts::generate(&["127.0.0.1"]).unwrap();
    write(&first);
    let port = free_port();
    let files = [
        cert.to_str().unwrap(),
        key.to_str().unwrap(),
        ca.to_str().unwrap(),
    ];
    let wink = run(
        &s,
        port,
        &[
            "--tls-cert-file",
            files[0],
            "--tls-key-file",
            files[1],
            "--tls-ca-file",
            files[2],
        ],
    );
    wait_synced(&wink, "probe");
    let r = ask(
        port,
        &first.ca_pem,
        "/admission/probe/validate",
        &review("uid-1", pod("ok", json!({}))),
    )
    .await;
    assert_eq!(r["allowed"], true, "{r}");
    let bundle = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem.as_bytes());
    let want = bundle(&first.ca_pem);
    configuration(&sim, &wink, "ValidatingWebhookConfiguration", |c| {
        c.is_some_and(|c| c["webhooks"][0]["clientConfig"]["caBundle"] == want.as_str())
    })
    .await;
    let secrets: Api<Secret> = Api::namespaced(sim.client(), "default");
    assert!(
        secrets.get_opt("wink-admission-ca").await.unwrap().is_none(),
        "no CA of wink's own"
    );

    // cert-manager renews: the new files are served, and trusted through the new bundle.
    let second = WebhookCerts::generate(&["127.0.0.1"]).unwrap();
    write(&second);
    wink.wait_for_line("TLS certificate file changed: now served", WAIT);
    let r = ask(
        port,
        &second.ca_pem,
        "/admission/probe/validate",
        &review("uid-2", pod("ok", json!({}))),
    )
    .await;
    assert_eq!(r["uid"], "uid-2");
    let want = bundle(&second.ca_pem);
    configuration(&sim, &wink, "ValidatingWebhookConfiguration", |c| {
        c.is_some_and(|c| c["webhooks"][0]["clientConfig"]["caBundle"] == want.as_str())
    })
    .await;
    drop(wink);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_keeps_the_configurations_and_kubectl_hears_the_plugin() {
    if !kubectl_support::have_kubectl() {
        return;
    }
    let env = kubectl_support::env("admission_leader", SimConfig::default()).await;
    let s = Setup::new("admission_leader", &env.sim);
    s.install("admit_probe", "probe", None);
    let ports = [free_port(), free_port()];
    let urls: Vec<String> = ports.iter().map(|p| format!("https://127.0.0.1:{p}")).collect();
    let addrs: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let start = |i: usize, identity: &str| {
        let args = ["--admission-addr", &addrs[i], "--admission-webhook-url", &urls[i]];
        let w = replica(&s, identity, &args);
        w.wait_for_line("admission webhook server listening", WAIT);
        w
    };
    let a = start(0, "a");
    a.wait_for_line("became the leader", WAIT);
    let b = start(1, "b");
    wait_synced(&b, "probe");
    configured_url(&env.sim, &a, &urls[0]).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        !b.lines().iter().any(|l| l.contains("webhook configuration")),
        "a standby writes no configuration"
    );
    // The standby answers too, with the same CA.
    let ca = ca_pem(&env.sim).await;
    let r = ask(
        ports[1],
        &ca,
        "/admission/probe/validate",
        &review("uid-b", pod("ok", json!({}))),
    )
    .await;
    assert_eq!(r["allowed"], true, "{r}");

    // kubectl hears the plugin's denial, its warning, and sees its mutation.
    env.ok(&["create", "namespace", "apps"]).await;
    let file = |name: &str, labels: Value| {
        let mut p = pod(name, labels);
        p["metadata"]["namespace"] = json!("apps");
        let path = env.dir.join(format!("{name}.json"));
        std::fs::write(&path, p.to_string()).unwrap();
        path.to_str().unwrap().to_string()
    };
    let denied = file("denied", json!({"deny": "1"}));
    let (ok, _, stderr) = env.run(&["create", "-f", &denied]).await;
    assert!(!ok, "denied");
    assert!(
        stderr.contains("admission webhook \"probe.validate.wink.dev\" denied the request")
            && stderr.contains("admit-probe: pod denied is labelled deny"),
        "{stderr}"
    );
    let fine = file("fine", json!({}));
    let (ok, _, stderr) = env.run(&["create", "-f", &fine]).await;
    assert!(ok, "{stderr}");
    assert!(stderr.contains("Warning: admit-probe: checked fine"), "{stderr}");
    let stored = env
        .json(&["get", "pod", "fine", "-n", "apps", "-o", "json"])
        .await;
    assert_eq!(stored["metadata"]["labels"]["probed"], "yes");

    // The leader goes: the new one points the configurations at itself.
    drop(a);
    b.wait_for_line("became the leader", WAIT);
    configured_url(&env.sim, &b, &urls[1]).await;
    let other = file("other", json!({}));
    let (ok, _, stderr) = env.run(&["create", "-f", &other]).await;
    assert!(ok, "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_serving_certificate_is_renewed_without_a_restart() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("admission_renewal", &sim);
    s.install("admit_probe", "probe", None);
    let port = free_port();
    // Valid 6 s: renewed after 4.
    let wink = run(&s, port, &["--admission-cert-validity-secs", "6"]);
    wait_synced(&wink, "probe");
    let ca = ca_pem(&sim).await;
    let first = served_certificate(port, &ca).await;
    wink.wait_for_line("admission serving certificate renewed", WAIT);
    let second = served_certificate(port, &ca).await;
    assert_ne!(first, second, "a new certificate, trusted by the same CA");
    let r = ask(
        port,
        &ca,
        "/admission/probe/validate",
        &review("uid-r", pod("ok", json!({}))),
    )
    .await;
    assert_eq!(r["allowed"], true, "{r}");
    assert_eq!(
        wink.lines()
            .iter()
            .filter(|l| l.contains("admission webhook server listening"))
            .count(),
        1,
        "no restart"
    );
}

/// Audit mode: what the plugin would have refused is a failing policy
/// result about the object (marked `process: admission review`, as
/// Kyverno's), with its uid when the request has one; a later review the
/// plugin allows clears it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_mode_reports_what_it_would_have_refused() {
    use crate::report_support::{reports, rows};
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("admission_audit_reports", &sim);
    s.install("admit_probe", "audited", None);
    let grants = s.plugins.parent().unwrap().join("grants.yaml");
    std::fs::write(&grants, "plugins:\n  audited:\n    mode: audit\n").unwrap();
    let port = free_port();
    let wink = run(
        &s,
        port,
        &["--grants", grants.to_str().unwrap(), "--report-batch-ms", "50"],
    );
    wait_synced(&wink, "audited");
    let ca = ca_pem(&sim).await;
    let fail = |name: &str| {
        (
            "default".to_string(),
            name.to_string(),
            "audited".to_string(),
            "validate".to_string(),
            "fail".to_string(),
        )
    };
    let until = |want: Vec<(String, String, String, String, String)>| {
        let sim = &sim;
        async move {
            let deadline = Instant::now() + WAIT;
            loop {
                let all = reports(sim).await;
                let mut got = rows(&all);
                got.sort();
                if got == want {
                    return all;
                }
                assert!(Instant::now() < deadline, "reports hold {got:?}, not {want:?}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };

    // A CREATE (no uid yet) and an UPDATE (with one), both denied: allowed,
    // and each a failing result.
    let r = ask(
        port,
        &ca,
        "/admission/audited/validate",
        &review("u-1", pod("new", json!({"deny": "1"}))),
    )
    .await;
    assert_eq!(r["allowed"], true, "{r}");
    let mut old = pod("old", json!({"deny": "1"}));
    old["metadata"]["uid"] = json!("uid-of-old");
    let mut update: Value = serde_json::from_str(&review("u-2", old.clone())).unwrap();
    update["request"]["operation"] = json!("UPDATE");
    update["request"]["oldObject"] = old;
    let r = ask(port, &ca, "/admission/audited/validate", &update.to_string()).await;
    assert_eq!(r["allowed"], true, "{r}");
    let all = until(vec![fail("new"), fail("old")]).await;
    let results: Vec<&Value> = all
        .iter()
        .flat_map(|r| r["results"].as_array().unwrap())
        .collect();
    for res in &results {
        assert_eq!(res["properties"]["process"], "admission review", "{res}");
        assert!(
            res["message"].as_str().unwrap().contains("is labelled deny"),
            "{res}"
        );
    }
    let uid_of = |name: &str| {
        results
            .iter()
            .find(|r| r["resources"][0]["name"] == name)
            .map(|r| r["resources"][0]["uid"].clone())
            .unwrap()
    };
    assert_eq!(uid_of("old"), json!("uid-of-old"));
    assert_eq!(
        uid_of("new").as_str().unwrap_or(""),
        "",
        "a CREATE has no uid yet"
    );

    // A dry run (`kubectl --dry-run=server`) has no side effect, as the
    // configurations' `sideEffects: None` promises: it neither adds nor clears.
    for (uid, name, labels) in [("u-d1", "dry", json!({"deny": "1"})), ("u-d2", "new", json!({}))] {
        let mut dry: Value = serde_json::from_str(&review(uid, pod(name, labels))).unwrap();
        dry["request"]["dryRun"] = json!(true);
        let r = ask(port, &ca, "/admission/audited/validate", &dry.to_string()).await;
        assert_eq!(r["allowed"], true, "{r}");
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let got: std::collections::BTreeSet<_> = rows(&reports(&sim).await).into_iter().collect();
    assert_eq!(got, [fail("new"), fail("old")].into(), "a dry run changed them");

    // Fixed: the next review allows it, and its result goes.
    let r = ask(
        port,
        &ca,
        "/admission/audited/validate",
        &review("u-3", pod("new", json!({}))),
    )
    .await;
    assert_eq!(r["allowed"], true, "{r}");
    until(vec![fail("old")]).await;
    drop(wink);
}
