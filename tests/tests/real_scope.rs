//! On the real kube-apiserver (see `envtest`; a pair of its own, since the
//! webhook configurations `wink` are cluster-wide): the worked example of
//! `docs/src/running/scope.md`, as `scope.rs` runs it on the simulated
//! server. `pod-security` scoped to the namespaces labelled
//! `enforce: "yes"` is called by the API server for those alone, reports
//! their Pods alone, and follows a namespace relabelled either way within
//! seconds.

use crate::cache_support::{Setup, WAIT, free_port, wait_synced};
use crate::envtest::{ControlPlane, Options};
use crate::report_support::violating_pod;
use crate::scope::{MOVED_WITHIN, enforce, example_grants, until_refused, until_reported, webhook_selector};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use std::time::Instant;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_selector_scopes_the_door_and_the_reports_on_a_real_server() {
    let Some(cp) = ControlPlane::start(&Options::default()) else {
        return;
    };
    let client = cp.client().await;
    let strict = cp.namespace("strict").await;
    let relaxed = cp.namespace("relaxed").await;
    for ns in [&strict, &relaxed] {
        let pod: Pod = serde_json::from_value(violating_pod(ns, "old", 1)).unwrap();
        Api::<Pod>::namespaced(client.clone(), ns)
            .create(&PostParams::default(), &pod)
            .await
            .unwrap();
    }
    enforce(&client, &strict, true).await;
    let s = Setup::with_kubeconfig("real_scope", &cp.kubeconfig);
    s.install("pod_security", "pod-security", None);
    let grants = s.plugins.parent().unwrap().join("grants.yaml");
    std::fs::write(&grants, example_grants()).unwrap();
    let port = free_port();
    let (addr, url) = (format!("127.0.0.1:{port}"), format!("https://127.0.0.1:{port}"));
    let wink = s.run(&[
        "--grants",
        grants.to_str().unwrap(),
        "--admission-addr",
        &addr,
        "--admission-webhook-url",
        &url,
        "--report-batch-ms",
        "200",
    ]);
    wait_synced(&wink, "pod-security");
    let selector = webhook_selector(&client).await.to_string();
    assert!(
        selector.contains(r#""key":"enforce","operator":"In","values":["yes"]"#),
        "{selector}"
    );
    let all = [strict.as_str(), relaxed.as_str()];
    until_refused(&client, &all, &[&strict], WAIT).await;
    until_reported(&client, &[&strict], WAIT).await;

    enforce(&client, &relaxed, true).await;
    enforce(&client, &strict, false).await;
    let moved = Instant::now();
    until_reported(&client, &[&relaxed], MOVED_WITHIN).await;
    until_refused(&client, &all, &[&relaxed], MOVED_WITHIN).await;
    eprintln!("scope moved in {:?}", moved.elapsed());
    let lines = wink.lines();
    assert!(!lines.iter().any(|l| l.contains("forbidden")), "{lines:#?}");
}
