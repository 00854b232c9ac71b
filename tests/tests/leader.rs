//! End-to-end: two (or three) wink processes on one simulated server with
//! leader election. Exactly one delivers; after `kill -9` of the leader the
//! standby takes over with the cache replayed and no relist; SIGTERM hands
//! the Lease over at once; a leader cut off from its server stands down
//! before its Lease could expire.

use crate::cache_support;
use crate::common;

use cache_support::*;
use common::Wink;
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

fn leads(w: &Wink) -> bool {
    w.lines().iter().any(|l| l.contains("became the leader"))
}

fn delivered(w: &Wink, pod: &str) -> bool {
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
