//! On the real kube-apiserver (see `envtest`): WinkPlugins as cluster
//! objects. wink installs the WinkPlugin CRD (which the real server
//! validates: its schema, printer columns and status subresource); a
//! WinkPlugin applied with unmodified kubectl, its component pushed to a
//! real OCI registry on loopback, is pulled, loaded and handles Pod events;
//! its status (a merge patch of the status subresource) shows Ready with
//! the digest and the observed generation, and `kubectl get winkplugins`
//! prints it through the CRD's columns; deleting it unloads it. A
//! WinkPlugin whose name holds `--` (a team plugin's plugin name, which the
//! real server accepts as an object name) is refused with `InvalidName`.

use crate::cache_support::{Setup, WAIT, pod, wait_synced};
use crate::common::{plugin, scratch};
use crate::envtest;
use crate::registry_support::{Registry, push};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_winkplugin_is_pulled_loaded_reported_ready_and_unloaded_on_delete() {
    let Some(cp) = envtest::shared() else { return };
    let client = cp.client().await;
    let ns = cp.namespace("winkplugins").await;
    let s = Setup::with_kubeconfig("real_winkplugins", &cp.kubeconfig);
    let reg = Registry::start("real_winkplugins_registry");
    let reference = format!("{}/wink/logger:v1", reg.host());
    let digest = push(&reg, &reference, &plugin("pod_logger"));
    let store = scratch("real_winkplugins_store").join("store");
    let wink = s.run(&[
        "--winkplugins",
        "install",
        "--plain-http",
        &reg.host(),
        "--oci-store",
        store.to_str().unwrap(),
    ]);
    wink.wait_for_line("watching WinkPlugins", WAIT);

    let kubectl = cp.kubectl(&scratch("real_winkplugins_kubectl"));
    let object = json!({"apiVersion": "wink.dev/v1alpha1", "kind": "WinkPlugin", "metadata": {"name": "logger"},
        "spec": {"source": {"oci": reference}, "config": {"tag": "a", "namespace": ns}}});
    let (ok, out, err) = kubectl.apply(&object.to_string()).await;
    assert!(ok, "{err}\n{out}");
    wait_synced(&wink, "logger");
    let pods: Api<Pod> = Api::namespaced(client, &ns);
    pods.create(&PostParams::default(), &pod(&ns, "p1", json!({}), None))
        .await
        .unwrap();
    wink.wait_for_line("[logger] OnAdd:a p1", WAIT);

    // The status as the real server stored it.
    let deadline = Instant::now() + WAIT;
    let stored = loop {
        let (_, out, _) = kubectl.run(&["get", "winkplugin", "logger", "-o", "json"]).await;
        let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
        let ready = v["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        if ready {
            break v;
        }
        assert!(
            Instant::now() < deadline,
            "never Ready: {v:#}\n{}",
            wink.lines().join("\n")
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(stored["status"]["digest"], digest.as_str(), "{stored:#}");
    assert_eq!(
        stored["status"]["observedGeneration"],
        stored["metadata"]["generation"]
    );
    let table = kubectl.ok(&["get", "winkplugins"]).await;
    let row = table.lines().find(|l| l.starts_with("logger ")).expect(&table);
    for cell in [reference.as_str(), digest.as_str(), "True"] {
        assert!(row.split_whitespace().any(|c| c == cell), "{cell} in {row}");
    }

    // A name holding `--` would be a team plugin's plugin name: refused.
    let clash = json!({"apiVersion": "wink.dev/v1alpha1", "kind": "WinkPlugin", "metadata": {"name": "logger--team-a"},
        "spec": {"source": {"oci": reference}, "config": {"tag": "b", "namespace": ns}}});
    let (ok, out, err) = kubectl.apply(&clash.to_string()).await;
    assert!(ok, "the real server takes the name: {err}\n{out}");
    let loaded = until_condition(&kubectl, "logger--team-a", "Loaded").await;
    assert_eq!(loaded["status"], "False", "{loaded:#}");
    assert_eq!(loaded["reason"], "InvalidName", "{loaded:#}");
    assert!(
        loaded["message"].as_str().unwrap_or("").contains("--"),
        "{loaded:#}"
    );
    assert!(
        !wink.lines().iter().any(|l| l.contains("[logger--team-a]")),
        "a refused name was loaded"
    );
    kubectl.ok(&["delete", "winkplugin", "logger--team-a"]).await;

    kubectl.ok(&["delete", "winkplugin", "logger"]).await;
    wink.wait_for_line("plugin unloaded", WAIT);
    assert!(
        !wink
            .lines()
            .iter()
            .any(|l| l.contains("forbidden") || l.contains("422 Invalid")),
        "{:#?}",
        wink.lines()
    );
}

/// The condition `kind` of the WinkPlugin `name`, once it has one.
async fn until_condition(kubectl: &envtest::Kubectl, name: &str, kind: &str) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let (_, out, _) = kubectl.run(&["get", "winkplugin", name, "-o", "json"]).await;
        let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
        let found = v["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == kind)
            .cloned();
        if let Some(c) = found {
            return c;
        }
        assert!(Instant::now() < deadline, "{name}: no {kind} condition: {v:#}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}
