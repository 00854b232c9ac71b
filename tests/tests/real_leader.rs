//! On the real kube-apiserver (see `envtest`): leader election on a real
//! coordination.k8s.io/v1 Lease. Two replicas: exactly one delivers; after
//! `kill -9` of the leader the standby takes the Lease once it goes
//! unrenewed, replays its cache and delivers what follows; SIGTERM of a
//! leader releases the Lease, which the API server stores with no holder.

use crate::cache_support::{Setup, WAIT, pod, replica, wait_synced};
use crate::envtest;
use crate::leader::{delivered, leads};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_leads_on_a_real_lease_and_the_standby_takes_over() {
    let Some(cp) = envtest::shared() else { return };
    let client = cp.client().await;
    let ns = cp.namespace("leader").await;
    let s = Setup::with_kubeconfig("real_leader", &cp.kubeconfig);
    s.install("pod_logger", "good", None);
    // The Lease in the test's namespace; the plugin's watch in it too.
    let config = s.plugins.join("good.json");
    std::fs::write(&config, json!({"namespace": ns}).to_string()).unwrap();
    let extra = ["--leader-elect-namespace", ns.as_str()];
    let a = replica(&s, "a", &extra);
    let b = replica(&s, "b", &extra);
    for w in [&a, &b] {
        wait_synced(w, "good");
    }
    let deadline = Instant::now() + WAIT;
    while !leads(&a) && !leads(&b) {
        assert!(Instant::now() < deadline, "no replica became the leader");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (leader, mut standby, identity) = if leads(&a) { (a, b, "a") } else { (b, a, "b") };
    let leases: Api<Lease> = Api::namespaced(client.clone(), &ns);
    let lease = leases.get("wink").await.unwrap();
    let holder = lease.spec.as_ref().and_then(|s| s.holder_identity.clone());
    assert_eq!(holder.as_deref(), Some(identity), "the Lease names the leader");

    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    pods.create(&PostParams::default(), &pod(&ns, "p1", json!({}), None))
        .await
        .unwrap();
    leader.wait_for_line("[good] OnAdd: p1", WAIT);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!delivered(&standby, "p1"), "the standby delivers nothing");

    drop(leader); // kill -9: the Lease goes unrenewed
    standby.wait_for_line("became the leader", WAIT);
    standby.wait_for_line("[good] OnAdd: p1", WAIT);
    let holder = leases
        .get("wink")
        .await
        .unwrap()
        .spec
        .and_then(|s| s.holder_identity);
    assert_ne!(holder.as_deref(), Some(identity), "the standby holds the Lease");
    pods.create(&PostParams::default(), &pod(&ns, "p2", json!({}), None))
        .await
        .unwrap();
    standby.wait_for_line("[good] OnAdd: p2", WAIT);

    // SIGTERM releases the Lease: stored with no holder.
    let status = standby.terminate(WAIT).expect("it exits");
    assert!(status.success(), "{status:?}");
    let lease = leases.get("wink").await.unwrap();
    let holder = lease.spec.and_then(|s| s.holder_identity).unwrap_or_default();
    assert!(holder.is_empty(), "released: {holder:?}");
}
