//! End-to-end: two (or three) wink processes on one simulated server with
//! leader election. Exactly one delivers; after `kill -9` of the leader the
//! standby takes over with the cache replayed and no relist; SIGTERM hands
//! the Lease over at once; a leader cut off from its server stands down
//! before its Lease could expire; a Lease held by another identity with a
//! renewal time in 2100 is taken once it goes unchanged for its lease
//! duration; SIGTERM ends a leader whose plugin waits on a write within the
//! shutdown timeout, with its Lease released.

use crate::cache_support;
use crate::common;

use cache_support::*;
use common::Wink;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, PostParams};
use serde_json::json;
use std::time::{Duration, Instant};
use wink_sim::{Sim, SimConfig};

/// A replica with the short test timings (see `cache_support::replica`).
fn replica(s: &Setup, identity: &str) -> Wink {
    cache_support::replica(s, identity, &[])
}

fn pod(name: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "i"}]}})
}

pub(crate) fn leads(w: &Wink) -> bool {
    w.lines().iter().any(|l| l.contains("became the leader"))
}

pub(crate) fn delivered(w: &Wink, pod: &str) -> bool {
    w.lines()
        .iter()
        .any(|l| l.contains(&format!("[good] OnAdd: {pod}")))
}

/// Replicas `a` and `b`, synced, as (leader, standby).
fn pair(s: &Setup) -> (Wink, Wink) {
    let a = replica(s, "a");
    let b = replica(s, "b");
    for w in [&a, &b] {
        wait_synced(w, "good");
    }
    if leader(&[&a, &b]) == 0 { (a, b) } else { (b, a) }
}

/// The first of `replicas` to lead, by index, within the test's patience.
fn leader(replicas: &[&Wink]) -> usize {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(i) = replicas.iter().position(|w| leads(w)) {
            return i;
        }
        assert!(Instant::now() < deadline, "no replica became the leader");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_delivers_and_a_standby_takes_over_without_a_relist() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("leader_failover", &sim);
    s.install("pod_logger", "good", None);
    let (leader_wink, standby) = pair(&s);
    sim.insert(pod("p1")).unwrap();
    leader_wink.wait_for_line("[good] OnAdd: p1", WAIT);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!delivered(&standby, "p1"), "the standby delivers nothing");
    assert!(!standby.lines().iter().any(|l| l.contains("became the leader")));

    // A relist would be a LIST, or a new (streaming) watch.
    let lists = sim.request_count("list", "pods");
    let watches = sim.request_count("watch", "pods");
    drop(leader_wink); // kill -9
    standby.wait_for_line("became the leader", WAIT);
    standby.wait_for_line("plugin takes over", WAIT);
    // The cache is replayed as initial adds, then live events follow.
    standby.wait_for_line("[good] OnAdd: p1", WAIT);
    sim.insert(pod("p2")).unwrap();
    standby.wait_for_line("[good] OnAdd: p2", WAIT);
    assert_eq!(
        sim.request_count("list", "pods"),
        lists,
        "a failover costs no relist"
    );
    assert_eq!(sim.request_count("watch", "pods"), watches, "nor a new watch");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_hands_the_lease_over_at_once() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("leader_sigterm", &sim);
    s.install("pod_logger", "good", None);
    let (mut leader_wink, standby) = pair(&s);
    let status = leader_wink.terminate(WAIT).expect("it exits");
    assert!(status.success(), "{status:?}");
    let stopped = Instant::now();
    assert!(
        leader_wink
            .lines()
            .iter()
            .any(|l| l.contains("leadership released"))
    );
    standby.wait_for_line("became the leader", WAIT);
    // Released, not expired: well before the 6 s lease could run out.
    let took = stopped.elapsed();
    assert!(took < Duration::from_millis(2500), "took over after {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_cut_off_from_its_server_stands_down_before_its_lease_expires() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("leader_fencing", &sim);
    s.install("pod_logger", "good", None);
    let a = replica(&s, "a");
    wait_synced(&a, "good");
    a.wait_for_line("became the leader", WAIT);
    // New requests hang (a partition); the open watch still streams.
    sim.faults().pause(Duration::from_secs(10));
    let cut = Instant::now();
    a.wait_for_line("lost the leadership", WAIT);
    let stood_down = cut.elapsed();
    // Its Lease, last renewed at most one retry period before the cut,
    // expires no sooner than 6 s - 250 ms after it.
    assert!(
        stood_down < Duration::from_millis(5750),
        "stood down after {stood_down:?}, past the lease"
    );
    sim.insert(pod("while-fenced")).unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !delivered(&a, "while-fenced"),
        "a fenced replica delivers nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_renewed_in_2100_by_another_is_taken_once_unchanged_for_its_duration() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let leases: Api<Lease> = Api::namespaced(sim.client(), "default");
    let in_2100 = "2100-01-01T00:00:00.000000Z";
    let lease: Lease = from_json(json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "wink", "namespace": "default"},
        "spec": {"holderIdentity": "someone-else", "leaseDurationSeconds": 6,
                 "acquireTime": in_2100, "renewTime": in_2100, "leaseTransitions": 4}
    }));
    leases.create(&PostParams::default(), &lease).await.unwrap();
    let s = Setup::new("leader_2100", &sim);
    s.install("pod_logger", "good", None);
    let started = Instant::now();
    let a = replica(&s, "a");
    a.wait_for_line(
        "standing by: the Lease default/wink is held by \"someone-else\"",
        WAIT,
    );
    a.wait_for_line("became the leader", WAIT);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(5),
        "a Lease renewed as far as this replica saw is not taken: {took:?}"
    );
    let spec = leases.get("wink").await.unwrap().spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("a"));
    assert_eq!(spec.lease_transitions, Some(5));
    // Said once (and once more as it goes stale), not every 250 ms retry.
    let about: Vec<String> = a
        .lines()
        .into_iter()
        .filter(|l| l.contains("someone-else"))
        .collect();
    assert!(
        about.len() <= 3 && about.iter().any(|l| l.contains("taking it over")),
        "{about:#?}"
    );
    sim.insert(pod("p1")).unwrap();
    a.wait_for_line("[good] OnAdd: p1", WAIT);
}

/// A leader whose plugin waits on a write for 1,000 s (its rate: one write
/// per 1,000 s) ends within its shutdown timeout on SIGTERM, and releases
/// its Lease on the way out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_a_leader_whose_plugin_waits_on_a_write() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("leader_sigterm_stuck_write", &sim);
    let patch = json!({"op": "patch", "api_version": "v1", "kind": "ConfigMap", "key": "default/trigger",
                       "type": "merge", "body": {"data": {"a": "b"}}, "repeat": 2});
    let config = json!({
        "writes": [{"api_version": "v1", "kind": "ConfigMap", "verbs": ["patch"]}],
        "ops": [patch],
    });
    s.install("write_probe", "probe", Some(&config));
    let grants = s.plugins.parent().unwrap().join("grants.yaml");
    let grant = "plugins:\n  probe:\n    writes: [{apiVersion: v1, kind: ConfigMap, verbs: [patch]}]\n    rate: {qps: 0.001, burst: 1}\n";
    std::fs::write(&grants, grant).unwrap();
    let extra = [
        "--grants",
        grants.to_str().unwrap(),
        "--shutdown-timeout-ms",
        "1000",
    ];
    let mut a = cache_support::replica(&s, "a", &extra);
    wait_synced(&a, "probe");
    a.wait_for_line("became the leader", WAIT);
    let trigger = json!({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "trigger", "namespace": "default"}});
    sim.insert(trigger).unwrap();
    // The first patch goes; the second waits for the rate.
    a.wait_for_line("[probe] write 0 patch: ok default/trigger", WAIT);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let status = a.terminate(Duration::from_secs(30));
    assert!(
        status.is_some(),
        "still running 30 s after SIGTERM with a 1 s shutdown timeout:\n{}",
        a.lines().join("\n")
    );
    assert!(a.lines().iter().any(|l| l.contains("exiting anyway")));
    assert!(
        a.lines().iter().any(|l| l.contains("leadership released")),
        "{}",
        a.lines().join("\n")
    );
    let leases: Api<Lease> = Api::namespaced(sim.client(), "default");
    let spec = leases.get("wink").await.unwrap().spec.unwrap();
    assert_eq!(spec.holder_identity, None, "released: {spec:?}");
}
