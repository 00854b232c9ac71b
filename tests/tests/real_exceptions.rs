//! On the real kube-apiserver (see `envtest`; a pair of its own, since the
//! webhook configurations `wink` are cluster-wide): the worked example of
//! `docs/src/running/exceptions.md`, as `exceptions.rs` runs it on the
//! simulated server. The WinkException lets one Deployment's privileged
//! Pods past `pod-security` with the warning kubectl prints, keeps their
//! Pod from the plugin (a `skip` in the reports), does nothing outside
//! `--exception-namespaces`, and stops applying once it expires; `kubectl
//! get winkexceptions` shows its columns. And an exception at one webhook
//! of a plugin with two leaves the other asked.

use crate::cache_support::{Setup, free_port, wait_synced};
use crate::envtest::{ControlPlane, Options};
use crate::exceptions::{LABEL, Namespaces, the_exceptions_life, wink_args};
use crate::exceptions_webhooks::{PROBE, one_webhook_excepted};
use crate::report_support::violating_pod;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exception_lets_one_deployments_pods_in_until_it_expires_on_a_real_server() {
    let Some(cp) = ControlPlane::start(&Options::default()) else {
        return;
    };
    let client = cp.client().await;
    let team = cp.namespace("team").await;
    let elsewhere = cp.namespace("elsewhere").await;
    let exceptions = cp.namespace("wink-exceptions").await;
    let mut old = violating_pod(&team, "legacy-batch-old", 1);
    old["metadata"]["labels"] = json!({"app": LABEL});
    let old: Pod = serde_json::from_value(old).unwrap();
    Api::<Pod>::namespaced(client.clone(), &team)
        .create(&PostParams::default(), &old)
        .await
        .unwrap();
    let s = Setup::with_kubeconfig("real_exceptions", &cp.kubeconfig);
    s.install("pod_security", "pod-security", None);
    let args = wink_args(free_port(), &exceptions);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let wink = s.run(&args);
    wait_synced(&wink, "pod-security");
    let kubeconfig = s.kubeconfig.clone();
    let life = tokio::task::spawn_blocking(move || {
        let ns = Namespaces {
            exceptions: &exceptions,
            team: &team,
            elsewhere: &elsewhere,
        };
        the_exceptions_life(&kubeconfig, &client, &ns)
    })
    .await;
    let lines = wink.lines();
    assert!(life.is_ok(), "{life:?}\n{lines:#?}");
    assert!(!lines.iter().any(|l| l.contains("forbidden")), "{lines:#?}");
}

/// An exception at `probe`'s validate alone lets the mutate patch, and one
/// at the mutate alone leaves the validate refusing (`exceptions_webhooks.rs`
/// on the simulated server).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exception_at_one_webhook_leaves_the_other_on_a_real_server() {
    let Some(cp) = ControlPlane::start(&Options::default()) else {
        return;
    };
    let team = cp.namespace("team").await;
    let exceptions = cp.namespace("wink-exceptions").await;
    let s = Setup::with_kubeconfig("real_exceptions_webhooks", &cp.kubeconfig);
    s.install("admit_probe", PROBE, None);
    let args = wink_args(free_port(), &exceptions);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let wink = s.run(&args);
    wait_synced(&wink, PROBE);
    let kubeconfig = s.kubeconfig.clone();
    let played =
        tokio::task::spawn_blocking(move || one_webhook_excepted(&kubeconfig, &exceptions, &team)).await;
    let lines = wink.lines();
    assert!(played.is_ok(), "{played:?}\n{lines:#?}");
}
