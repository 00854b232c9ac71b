//! End-to-end: the seeds' cache examples as plugins. Real plugins
//! built for wasm32-wasip2, the real `wink run` binary, the simulated API
//! server and the real kube client: `app-index`, `deployment-lister` and
//! `replica-checker` reproduce the seeds' output. Scope, Secrets, typed errors
//! and the cache view are in `cache_scope.rs`.

use crate::cache_support;

use cache_support::*;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;
use wink_sim::{Sim, SimConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_index_prints_the_keys_sharing_the_app_label() {
    // Seed 001: LabelsIndexFunc on `app`, pods ns1/pod1 (l1) and ns2/pod2 (l2);
    // IndexKeys("app", "l1") is [ns1/pod1].
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("cache_app_index", &sim);
    s.install("app_index", "app-index", None);
    namespace(&sim, "ns1").await;
    namespace(&sim, "ns2").await;
    let ns1: Api<Pod> = Api::namespaced(sim.client(), "ns1");
    let ns2: Api<Pod> = Api::namespaced(sim.client(), "ns2");
    let pp = PostParams::default();
    ns1.create(&pp, &pod("ns1", "pod1", json!({"app": "l1"}), None))
        .await
        .unwrap();
    ns2.create(&pp, &pod("ns2", "pod2", json!({"app": "l2"}), None))
        .await
        .unwrap();

    let wink = s.run(&[]);
    wait_synced(&wink, "app-index");
    ns1.create(&pp, &pod("ns1", "pod3", json!({"app": "l1"}), None))
        .await
        .unwrap();
    ns2.create(&pp, &pod("ns2", "nolabel", json!({}), None))
        .await
        .unwrap();
    wink.wait_for_line("[app-index] add: ns2/nolabel", WAIT);
    ns1.delete("pod1", &DeleteParams::default()).await.unwrap();
    wink.wait_for_line("[app-index] delete: ns1/pod1", WAIT);

    let lines = wink.plugin_lines("app-index");
    let (initial, live) = lines.split_at(2);
    let mut initial = initial.to_vec();
    initial.sort();
    assert_eq!(
        initial,
        [
            "add: ns1/pod1 app=l1 -> [ns1/pod1]",
            "add: ns2/pod2 app=l2 -> [ns2/pod2]"
        ],
        "{lines:#?}"
    );
    assert_eq!(
        live,
        [
            "add: ns1/pod3 app=l1 -> [ns1/pod1 ns1/pod3]",
            "add: ns2/nolabel (no app label)",
            // The store is updated before the notification: pod1 is gone.
            "delete: ns1/pod1 app=l1 -> [ns1/pod3]",
        ],
        "{lines:#?}"
    );
}

/// Split deployment-lister's output into one block per event: the listing
/// printed first, then the event line.
fn lister_blocks(lines: &[String]) -> Vec<(Vec<String>, String)> {
    let mut blocks = Vec::new();
    let mut listing = Vec::new();
    for l in lines {
        if l.contains(" -> ") {
            listing.push(l.clone());
        } else if l.starts_with("add a deployment:")
            || l.starts_with("update deployment:")
            || l.starts_with("delete a deployment:")
        {
            blocks.push((std::mem::take(&mut listing), l.clone()));
        }
    }
    blocks
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployment_lister_lists_default_from_the_cache_on_every_event_and_resyncs() {
    // Seed 003: the deployment lister (resync 1 s here instead of 60 s).
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("cache_deployment_lister", &sim);
    s.install(
        "deployment_lister",
        "deployment-lister",
        Some(&json!({"resync_seconds": 1})),
    );
    namespace(&sim, "other").await;
    let default: Api<Deployment> = Api::namespaced(sim.client(), "default");
    let other: Api<Deployment> = Api::namespaced(sim.client(), "other");
    let pp = PostParams::default();
    default
        .create(&pp, &deployment("default", "d1", 1))
        .await
        .unwrap();

    let wink = s.run(&[]);
    wink.wait_for_line("[deployment-lister] add a deployment: d1", WAIT);
    default
        .create(&pp, &deployment("default", "d2", 1))
        .await
        .unwrap();
    other
        .create(&pp, &deployment("other", "elsewhere", 1))
        .await
        .unwrap();
    wink.wait_for_line("[deployment-lister] add a deployment: elsewhere", WAIT);
    // At least one resync of both after the adds.
    wink.wait_until("resyncs of d1 and d2", WAIT, |w| {
        let blocks = lister_blocks(&w.plugin_lines("deployment-lister"));
        let after_adds = blocks
            .iter()
            .skip_while(|(_, e)| e != "add a deployment: elsewhere")
            .map(|(_, e)| e.as_str())
            .collect::<Vec<_>>();
        after_adds.contains(&"update deployment: d1 d1") && after_adds.contains(&"update deployment: d2 d2")
    });
    default.delete("d1", &DeleteParams::default()).await.unwrap();
    wink.wait_for_line("[deployment-lister] delete a deployment: d1", WAIT);
    wink.wait_until("a resync after the delete", WAIT, |w| {
        lister_blocks(&w.plugin_lines("deployment-lister"))
            .iter()
            .skip_while(|(_, e)| e != "delete a deployment: d1")
            .any(|(_, e)| e == "update deployment: d2 d2")
    });

    let blocks = lister_blocks(&wink.plugin_lines("deployment-lister"));
    let block = |event: &str| -> Vec<String> {
        blocks
            .iter()
            .find(|(_, e)| e == event)
            .unwrap_or_else(|| panic!("no {event:?} in {blocks:#?}"))
            .0
            .clone()
    };
    // The cache is at least as new as the event: each event's listing
    // holds the state the event brought (later changes only came after the
    // test saw that event).
    assert_eq!(
        blocks[0],
        (vec!["1 -> d1".to_string()], "add a deployment: d1".to_string())
    );
    assert_eq!(block("add a deployment: d2"), ["1 -> d1", "2 -> d2"]);
    // A deployment in another namespace is delivered but not listed.
    assert_eq!(block("add a deployment: elsewhere"), ["1 -> d1", "2 -> d2"]);
    assert_eq!(block("delete a deployment: d1"), ["1 -> d2"]);
    // Resyncs re-deliver unchanged objects as updates (old == new), and
    // after the delete only the remaining deployments.
    let after_delete: Vec<_> = blocks
        .iter()
        .skip_while(|(_, e)| e != "delete a deployment: d1")
        .skip(1)
        .collect();
    assert!(!after_delete.is_empty());
    for (listing, event) in after_delete {
        assert!(
            event == "update deployment: d2 d2" || event == "update deployment: elsewhere elsewhere",
            "{blocks:#?}"
        );
        assert_eq!(listing, &["1 -> d2"], "{blocks:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replica_checker_counts_pods_through_owner_indexes() {
    // Seed 000: deployment -> ReplicaSet (only read) -> pods, by owner uid.
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("cache_replica_checker", &sim);
    s.install("replica_checker", "replica-checker", None);
    let view = format!("127.0.0.1:{}", free_port());
    let wink = s.run(&["--cache-view", &view]);
    wait_synced(&wink, "replica-checker");
    wink.wait_for_line("cache view listening", WAIT);

    let pp = PostParams::default();
    let deployments: Api<Deployment> = Api::namespaced(sim.client(), "default");
    let sets: Api<ReplicaSet> = Api::namespaced(sim.client(), "default");
    let pods: Api<Pod> = Api::namespaced(sim.client(), "default");
    let d = deployments
        .create(&pp, &deployment("default", "web", 2))
        .await
        .unwrap();
    let d_uid = d.metadata.uid.unwrap();
    // The deployment alone: no replica set yet, no pods.
    wink.wait_for_line("[replica-checker] deployment web: 0 pods, spec.replicas 2", WAIT);

    let rs: ReplicaSet = from_json(json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web-5d9", "namespace": "default",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": d_uid, "controller": true}]},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
    }));
    let rs = sets.create(&pp, &rs).await.unwrap();
    let rs_uid = rs.metadata.uid.unwrap();
    // ReplicaSets are a `read`: no event reaches the plugin, so wait until
    // the informer has it (pods and replica sets are separate watches).
    wait_view(&view, "/cache/apps/v1/replicasets", &["default/web-5d9"]).await;

    let owner = Some(("ReplicaSet", "web-5d9", rs_uid.as_str()));
    pods.create(&pp, &pod("default", "web-5d9-a", json!({"app": "web"}), owner))
        .await
        .unwrap();
    wink.wait_for_line("[replica-checker] deployment web: 1 pods, spec.replicas 2", WAIT);
    pods.create(&pp, &pod("default", "web-5d9-b", json!({"app": "web"}), owner))
        .await
        .unwrap();
    wink.wait_for_line("[replica-checker] deployment web: 2 pods, as specified", WAIT);
    // A pod owned by nothing is not counted and logs nothing.
    pods.create(&pp, &pod("default", "stray", json!({"app": "web"}), None))
        .await
        .unwrap();
    pods.delete("web-5d9-a", &DeleteParams::default()).await.unwrap();
    wink.wait_until("the count after the delete", WAIT, |w| {
        w.plugin_lines("replica-checker").len() >= 4
    });

    let lines = wink.plugin_lines("replica-checker");
    assert_eq!(
        lines,
        [
            "deployment web: 0 pods, spec.replicas 2",
            "deployment web: 1 pods, spec.replicas 2",
            "deployment web: 2 pods, as specified",
            "deployment web: 1 pods, spec.replicas 2",
        ]
    );
    // The mismatch is a warning, the match an info line.
    let levels: Vec<bool> = wink
        .lines()
        .iter()
        .filter(|l| l.contains("[replica-checker] deployment web"))
        .map(|l| l.contains("WARN"))
        .collect();
    assert_eq!(levels, [true, true, false, true]);
}
