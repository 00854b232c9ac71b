//! Real `kubectl` (v1.32, /usr/bin/kubectl) against the simulated API
//! server with its control plane on, as `wink sim` and `wink dev` run it:
//! the imperative generators (protobuf bodies), server-side tables,
//! Deployments that roll out to running Pods, scaling, rolling updates,
//! garbage collection and namespace termination. Skipped (with a message)
//! only when kubectl is not installed. Through the kube client: that the
//! control plane does nothing while nothing changes, and that one change
//! costs it the same however many other Deployments there are.

use crate::kubectl_support;

use kubectl_support::{Env, have_kubectl};
use serde_json::Value;
use std::time::Duration;
use wink_sim::{ControlWork, Sim, SimConfig};

async fn env(name: &str) -> Env {
    let config = SimConfig {
        control_plane: true,
        ..Default::default()
    };
    kubectl_support::env(&format!("control-{name}"), config).await
}

fn running(pods: &[Value]) -> usize {
    pods.iter()
        .filter(|p| p["status"]["phase"] == "Running" && p["metadata"]["deletionTimestamp"].is_null())
        .count()
}

fn images(rs: &Value) -> &str {
    rs["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap_or("")
}

#[tokio::test]
async fn kubectl_imperative_creates_send_protobuf() {
    if !have_kubectl() {
        return;
    }
    let e = env("create").await;
    assert!(
        e.ok(&["create", "namespace", "x"])
            .await
            .contains("namespace/x created")
    );
    e.ok(&["create", "configmap", "c", "-n", "x", "--from-literal=a=b"])
        .await;
    e.ok(&[
        "create",
        "secret",
        "generic",
        "s",
        "-n",
        "x",
        "--from-literal=a=b",
    ])
    .await;
    e.ok(&[
        "create",
        "deployment",
        "web",
        "-n",
        "x",
        "--image=nginx",
        "--replicas=3",
    ])
    .await;
    assert_eq!(
        e.json(&["get", "namespace", "x", "-o", "json"]).await["status"]["phase"],
        "Active"
    );
    let cm = e.json(&["get", "configmap", "c", "-n", "x", "-o", "json"]).await;
    assert_eq!(cm["data"]["a"], "b");
    let secret = e.json(&["get", "secret", "s", "-n", "x", "-o", "json"]).await;
    assert_eq!(
        (secret["data"]["a"].as_str(), secret["type"].as_str()),
        (Some("Yg=="), Some("Opaque"))
    );
    let d = e
        .json(&["get", "deployment", "web", "-n", "x", "-o", "json"])
        .await;
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["image"], "nginx");
    assert_eq!(d["spec"]["selector"]["matchLabels"]["app"], "web");
    // Server-side tables: the real columns.
    let cms = e.ok(&["get", "configmaps", "-n", "x"]).await;
    assert!(
        cms.starts_with("NAME") && cms.contains("DATA") && cms.contains("AGE"),
        "{cms}"
    );
    let secrets = e.ok(&["get", "secrets", "-n", "x"]).await;
    assert!(
        secrets.contains("TYPE") && secrets.contains("Opaque"),
        "{secrets}"
    );
    let nss = e.ok(&["get", "namespaces"]).await;
    assert!(nss.contains("STATUS") && nss.contains("Active"), "{nss}");
    let nodes = e.ok(&["get", "nodes"]).await;
    assert!(
        nodes.contains("ROLES") && nodes.contains("VERSION") && nodes.contains("Ready"),
        "{nodes}"
    );
    assert_eq!(
        e.ok(&["auth", "can-i", "create", "deployments"]).await.trim(),
        "yes"
    );
}

#[tokio::test]
async fn kubectl_deployments_roll_out_scale_update_and_delete() {
    if !have_kubectl() {
        return;
    }
    let e = env("deploy").await;
    e.ok(&["create", "deployment", "web", "--image=nginx", "--replicas=3"])
        .await;
    let status = e
        .ok(&["rollout", "status", "deployment/web", "--timeout=60s"])
        .await;
    assert!(status.contains("successfully rolled out"), "{status}");
    let table = e.ok(&["get", "pods"]).await;
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]);
    let rows: Vec<&str> = table.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{table}");
    for row in rows {
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert!(cells[0].starts_with("web-"), "{row}");
        assert_eq!(cells[1..4], ["1/1", "Running", "0"], "{row}");
    }
    let wide = e.ok(&["get", "pods", "-o", "wide"]).await;
    assert!(
        wide.contains("IP") && wide.contains("NODE") && wide.contains("node-"),
        "{wide}"
    );
    let deploys = e.ok(&["get", "deployments"]).await;
    let header: Vec<&str> = deploys.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]);
    assert!(deploys.contains("3/3"), "{deploys}");
    let rss = e.ok(&["get", "replicasets"]).await;
    assert!(
        rss.starts_with("NAME") && rss.contains("DESIRED") && rss.contains("CURRENT"),
        "{rss}"
    );

    // Pods are owned by the ReplicaSet, which the Deployment owns.
    let rs = &e.items(&["get", "replicasets"]).await[0];
    let pods = e.items(&["get", "pods"]).await;
    assert!(
        pods.iter()
            .all(|p| p["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"])
    );
    assert_eq!(rs["metadata"]["ownerReferences"][0]["kind"], "Deployment");

    e.ok(&["scale", "deployment", "web", "--replicas=5"]).await;
    e.until("5 running pods", &["get", "pods"], |p| running(p) == 5)
        .await;
    e.ok(&["rollout", "status", "deployment/web", "--timeout=60s"])
        .await;

    e.ok(&["set", "image", "deployment/web", "nginx=nginx:1.27"])
        .await;
    let status = e
        .ok(&["rollout", "status", "deployment/web", "--timeout=60s"])
        .await;
    assert!(status.contains("successfully rolled out"), "{status}");
    let rss = e
        .until("the old ReplicaSet scaled down", &["get", "replicasets"], |rss| {
            rss.len() == 2
                && rss
                    .iter()
                    .any(|r| images(r) == "nginx" && r["spec"]["replicas"] == 0)
                && rss
                    .iter()
                    .any(|r| images(r) == "nginx:1.27" && r["status"]["readyReplicas"] == 5)
        })
        .await;
    let new_rs = rss.iter().find(|r| images(r) == "nginx:1.27").unwrap();
    e.until("pods of the new template", &["get", "pods"], |p| {
        running(p) == 5
            && p.iter()
                .all(|p| p["metadata"]["ownerReferences"][0]["uid"] == new_rs["metadata"]["uid"])
    })
    .await;

    // Background deletion (kubectl's default): the ReplicaSets and Pods follow.
    e.ok(&["delete", "deployment", "web"]).await;
    e.until("the ReplicaSets gone", &["get", "replicasets"], |r| r.is_empty())
        .await;
    e.until("the pods gone", &["get", "pods"], |p| p.is_empty()).await;

    // Foreground: kubectl waits until the Deployment itself is gone, which
    // is only once its dependents are.
    e.ok(&["create", "deployment", "api", "--image=nginx", "--replicas=2"])
        .await;
    e.until("api's pods", &["get", "pods"], |p| running(p) == 2).await;
    e.ok(&[
        "delete",
        "deployment",
        "api",
        "--cascade=foreground",
        "--timeout=60s",
    ])
    .await;
    assert!(e.items(&["get", "deployments"]).await.is_empty());
    assert!(e.items(&["get", "replicasets"]).await.is_empty());
    e.until("the pods gone", &["get", "pods"], |p| p.is_empty()).await;
}

#[tokio::test]
async fn kubectl_delete_namespace_terminates_then_removes_it() {
    if !have_kubectl() {
        return;
    }
    let e = env("namespace").await;
    e.ok(&["create", "namespace", "x"]).await;
    e.ok(&[
        "create",
        "deployment",
        "web",
        "-n",
        "x",
        "--image=nginx",
        "--replicas=2",
    ])
    .await;
    e.until("pods in x", &["get", "pods", "-n", "x"], |p| running(p) == 2)
        .await;
    // A finalizer of someone else's holds one object, and so the namespace.
    let held = e.dir.join("held.yaml");
    std::fs::write(
        &held,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: held, namespace: x, finalizers: [example.com/hold]}\n",
    )
    .unwrap();
    e.ok(&["create", "-f", held.to_str().unwrap()]).await;
    e.ok(&["delete", "namespace", "x", "--wait=false"]).await;
    let ns = e.json(&["get", "namespace", "x", "-o", "json"]).await;
    assert_eq!(ns["status"]["phase"], "Terminating");
    assert!(ns["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(ns["spec"]["finalizers"], serde_json::json!(["kubernetes"]));
    let table = e.ok(&["get", "namespace", "x"]).await;
    assert!(table.contains("Terminating"), "{table}");
    let (ok, _, err) = e.run(&["create", "configmap", "late", "-n", "x"]).await;
    assert!(!ok && err.contains("being terminated"), "{err}");
    e.until(
        "the contents gone but the held one",
        &["get", "all", "-n", "x"],
        |o| o.is_empty(),
    )
    .await;
    let cm = e
        .json(&["get", "configmap", "held", "-n", "x", "-o", "json"])
        .await;
    assert!(cm["metadata"]["deletionTimestamp"].is_string());
    e.ok(&[
        "patch",
        "configmap",
        "held",
        "-n",
        "x",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ])
    .await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (ok, _, err) = e.run(&["get", "namespace", "x"]).await;
        if !ok {
            assert!(err.contains("NotFound") || err.contains("not found"), "{err}");
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "namespace x still there");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The control plane's work once it has stopped changing (at most 30 s).
async fn settled(sim: &Sim) -> ControlWork {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let before = sim.control_work();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let after = sim.control_work();
        if before == after && after.rounds > 0 {
            return after;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the control plane never settled: {after:?}"
        );
    }
}

#[tokio::test]
async fn an_idle_control_plane_does_nothing_and_one_change_costs_little() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
    const N: usize = 150;
    let config = SimConfig {
        control_plane: true,
        ..Default::default()
    };
    let sim = Sim::start(config).await.unwrap();
    let deployments: Api<Deployment> = Api::default_namespaced(sim.client());
    for i in 0..N {
        let d: Deployment = serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("d{i}")},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "a"}},
                "template": {"metadata": {"labels": {"app": "a"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}))
        .unwrap();
        deployments.create(&PostParams::default(), &d).await.unwrap();
    }
    let idle = settled(&sim).await;
    let all = deployments.list(&ListParams::default()).await.unwrap().items;
    assert!(
        all.iter()
            .all(|d| d.status.as_ref().and_then(|s| s.observed_generation) == Some(1)),
        "every Deployment was reconciled"
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(sim.control_work(), idle, "nothing changed, nothing ran");
    let scale = serde_json::json!({"spec": {"replicas": 2}});
    deployments
        .patch("d1", &PatchParams::default(), &Patch::Merge(&scale))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while pods
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .count()
        < 2
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the scaled Deployment's Pods never ran"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let after = settled(&sim).await;
    let read = after.visits - idle.visits;
    assert!(
        read > 0 && read < N as u64,
        "one change read {read} objects ({N} Deployments)"
    );
}
