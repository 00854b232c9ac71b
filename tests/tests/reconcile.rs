//! End-to-end: a plugin's work queue and `reconcile` on the simulated API
//! server. With `defaults-keeper` (every namespace keeps the ConfigMap
//! `wink-defaults`): a deleted ConfigMap is restored; a create met by two
//! conflicts is retried with backoff, with no new event, and applied once; a
//! `requeue-after` calls back at its time; the queue's metrics appear under
//! client-go's names; only the leader reconciles, and a new leader converges
//! every key. With `reconcile-probe` (a reconcile held at will): a key added
//! many times while reconciled is reconciled once more after, never twice at
//! once; a shutdown takes no more keys and lets the running reconcile finish;
//! a Pod enqueues its controller owner and the objects whose index names it.

use crate::admin::sample;
use crate::cache_support::*;
use crate::plugins_act::grants;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams};
use serde_json::json;
use std::time::{Duration, Instant};
use wink_sim::{Sim, SimConfig};

const GRANT: &str =
    "plugins:\n  defaults-keeper:\n    writes: [{apiVersion: v1, kind: ConfigMap, verbs: [create]}]\n";

/// How many of the plugin's lines are exactly `line`.
fn count(wink: &crate::common::Wink, line: &str) -> usize {
    wink.plugin_lines("defaults-keeper")
        .iter()
        .filter(|l| l.as_str() == line)
        .count()
}

/// The value of a histogram's `_count` sample for `plugin`.
fn histogram_count(text: &str, name: &str, plugin: &str) -> Option<f64> {
    let prefix = format!("{name}_count{{plugin=\"{plugin}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
}

async fn config_map_exists(sim: &Sim, ns: &str) -> bool {
    Api::<ConfigMap>::namespaced(sim.client(), ns)
        .get_opt("wink-defaults")
        .await
        .unwrap()
        .is_some()
}

async fn until_config_map(sim: &Sim, ns: &str) {
    let deadline = Instant::now() + WAIT;
    while !config_map_exists(sim, ns).await {
        assert!(Instant::now() < deadline, "{ns}/wink-defaults never came");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_config_map_is_restored_and_a_conflicting_create_retried_without_an_event() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("reconcile_restore", &sim);
    s.install(
        "defaults_keeper",
        "defaults-keeper",
        Some(&json!({"data": {"owner": "platform"}})),
    );
    let file = grants(&s, GRANT);
    let addr = format!("127.0.0.1:{}", free_port());
    let wink = s.run(&["--grants", &file, "--admin-addr", &addr]);
    wait_synced(&wink, "defaults-keeper");

    // A new namespace gets its ConfigMap.
    namespace(&sim, "team-a").await;
    until_config_map(&sim, "team-a").await;
    let created = Api::<ConfigMap>::namespaced(sim.client(), "team-a")
        .get("wink-defaults")
        .await
        .unwrap();
    assert_eq!(created.data.unwrap()["owner"], "platform");

    // Deleted: restored, through the ConfigMap watch's mapping.
    let before = count(&wink, "defaults-keeper: team-a/wink-defaults created");
    Api::<ConfigMap>::namespaced(sim.client(), "team-a")
        .delete("wink-defaults", &DeleteParams::default())
        .await
        .unwrap();
    wink.wait_until("the ConfigMap restored", WAIT, |w| {
        count(w, "defaults-keeper: team-a/wink-defaults created") > before
    });
    until_config_map(&sim, "team-a").await;

    // The API server answers the plugin's next two creates 409 Conflict
    // (the deletion is made inside the simulator): the two that conflict
    // are retried with backoff, with no event, and the third is applied.
    let retries = |text: &str| sample(text, "workqueue_retries_total", &[("plugin", "defaults-keeper")]);
    let (_, text) = http(&addr, "GET", "/metrics").await;
    let retried_before = retries(&text).unwrap_or(0.0);
    let creates = sim.request_count("create", "configmaps");
    let created_lines = count(&wink, "defaults-keeper: team-a/wink-defaults created");
    sim.faults().fail_next_on(2, 409, "create", "configmaps");
    sim.delete("configmaps", Some("team-a"), "wink-defaults").unwrap();
    wink.wait_until("the ConfigMap restored after the conflicts", WAIT, |w| {
        count(w, "defaults-keeper: team-a/wink-defaults created") > created_lines
    });
    assert!(config_map_exists(&sim, "team-a").await);
    let failed = wink
        .lines()
        .iter()
        .filter(|l| l.contains("reconcile failed; retried with backoff") && l.contains("team-a"))
        .count();
    assert_eq!(failed, 2, "each conflict logged as retried:\n{:#?}", wink.lines());
    assert_eq!(
        sim.request_count("create", "configmaps"),
        creates + 3,
        "two conflicts, then the create applied once"
    );
    let (_, text) = http(&addr, "GET", "/metrics").await;
    assert_eq!(retries(&text), Some(retried_before + 2.0), "{text}");

    // The queue's metrics, under client-go's names.
    let (status, text) = http(&addr, "GET", "/metrics").await;
    assert_eq!(status, 200);
    let p = [("plugin", "defaults-keeper")];
    assert!(
        sample(&text, "workqueue_retries_total", &p).is_some_and(|v| v >= 1.0),
        "{text}"
    );
    assert!(
        sample(&text, "workqueue_adds_total", &p).is_some_and(|v| v >= 3.0),
        "{text}"
    );
    assert!(sample(&text, "workqueue_depth", &p).is_some(), "{text}");
    assert!(
        sample(&text, "workqueue_unfinished_work_seconds", &p).is_some(),
        "{text}"
    );
    assert!(
        sample(&text, "workqueue_longest_running_processor_seconds", &p).is_some(),
        "{text}"
    );
    for h in [
        "workqueue_work_duration_seconds",
        "workqueue_queue_duration_seconds",
    ] {
        assert!(
            histogram_count(&text, h, "defaults-keeper").is_some_and(|v| v >= 3.0),
            "{h}: {text}"
        );
    }
    let (_, debug) = get_json(&addr, "/debug/plugins").await;
    let mine = debug
        .as_array()
        .or_else(|| debug["plugins"].as_array())
        .unwrap()
        .iter()
        .find(|p| p["name"] == "defaults-keeper")
        .unwrap()
        .clone();
    assert!(mine["work_queue"]["depth"].is_u64(), "{mine}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requeue_after_calls_back_at_its_time_without_an_event() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("reconcile_requeue_after", &sim);
    s.install(
        "defaults_keeper",
        "defaults-keeper",
        Some(&json!({"recheck_ms": 1000})),
    );
    let file = grants(&s, GRANT);
    let wink = s.run(&["--grants", &file]);
    wait_synced(&wink, "defaults-keeper");
    namespace(&sim, "team-b").await;
    until_config_map(&sim, "team-b").await;
    let checked = "defaults-keeper: team-b/wink-defaults checked";
    wink.wait_until("the first check", WAIT, |w| count(w, checked) >= 1);
    let first = Instant::now();
    let at_first = count(&wink, checked);
    // Nothing changes from here: every later check is a requeue-after.
    wink.wait_until("two more checks", WAIT, |w| count(w, checked) >= at_first + 2);
    assert!(
        first.elapsed() >= Duration::from_millis(1500),
        "two checks 1 s apart came after {:?}: sooner than asked",
        first.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_added_while_reconciled_is_reconciled_once_more_after_never_at_once() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("reconcile_dirty", &sim);
    s.install("reconcile_probe", "reconcile-probe", None);
    // The held reconcile waits in the guest: a long deadline.
    let wink = s.run(&["--call-deadline-ms", "30000"]);
    wait_synced(&wink, "reconcile-probe");
    let cms: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    cms.create(
        &Default::default(),
        &config_map("default", "hot", json!({"hold": "true"})),
    )
    .await
    .unwrap();
    let starts = |w: &crate::common::Wink| {
        w.plugin_lines("reconcile-probe")
            .iter()
            .filter(|l| l.as_str() == "start default/hot")
            .count()
    };
    wink.wait_until("the held reconcile", WAIT, |w| starts(w) == 1);
    // 200 updates while the reconcile is held.
    for i in 0..200 {
        let patch = json!({"data": {"n": i.to_string()}});
        cms.patch(
            "hot",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .unwrap();
    }
    assert_eq!(starts(&wink), 1, "held: no second reconcile of the key meanwhile");
    cms.create(&Default::default(), &config_map("default", "gate", json!({})))
        .await
        .unwrap();
    wink.wait_until("the gate reconciled", WAIT, |w| {
        w.plugin_lines("reconcile-probe")
            .iter()
            .any(|l| l == "end default/gate")
    });
    wink.wait_until("the key reconciled again", WAIT, |w| starts(w) >= 2);
    // Quiet now: no event is pending; give a stray third reconcile time to show.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = starts(&wink) - 1;
    assert!(
        (1..=2).contains(&after),
        "200 adds while reconciled: {after} reconciles after it (one, at most two)"
    );
    // One worker: every start is followed by its end before the next start.
    let lines = wink.plugin_lines("reconcile-probe");
    let mut open: Option<String> = None;
    for l in &lines {
        if let Some(k) = l.strip_prefix("start ") {
            assert!(open.is_none(), "{k} started while {open:?} ran: {lines:#?}");
            open = Some(k.to_string());
        } else if let Some(k) = l.strip_prefix("end ") {
            assert_eq!(open.take().as_deref(), Some(k), "{lines:#?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_reconciles_and_a_new_leader_converges_every_key() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("reconcile_failover", &sim);
    s.install("defaults_keeper", "defaults-keeper", None);
    let file = grants(&s, GRANT);
    let a = replica(&s, "a", &["--grants", &file]);
    let b = replica(&s, "b", &["--grants", &file]);
    for w in [&a, &b] {
        wait_synced(w, "defaults-keeper");
    }
    let leads = |w: &crate::common::Wink| w.lines().iter().any(|l| l.contains("became the leader"));
    let deadline = Instant::now() + WAIT;
    while !leads(&a) && !leads(&b) {
        assert!(Instant::now() < deadline, "no replica became the leader");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (leader, standby) = if leads(&a) { (a, b) } else { (b, a) };
    namespace(&sim, "team-a").await;
    until_config_map(&sim, "team-a").await;
    leader.wait_until("the leader's create", WAIT, |w| {
        count(w, "defaults-keeper: team-a/wink-defaults created") == 1
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        standby.plugin_lines("defaults-keeper").is_empty(),
        "the standby reconciles nothing: {:#?}",
        standby.plugin_lines("defaults-keeper")
    );

    // The leader dies (kill -9); while nobody leads, a namespace comes and
    // a ConfigMap goes. The new leader converges both.
    drop(leader);
    let ns: serde_json::Value =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"}});
    sim.insert(ns).unwrap();
    sim.delete("configmaps", Some("team-a"), "wink-defaults").unwrap();
    standby.wait_for_line("became the leader", WAIT);
    until_config_map(&sim, "team-b").await;
    until_config_map(&sim, "team-a").await;
    for ns in ["team-a", "team-b"] {
        assert_eq!(
            count(&standby, &format!("defaults-keeper: {ns}/wink-defaults created")),
            1
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_takes_no_more_keys_and_lets_the_running_reconcile_finish() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("reconcile_shutdown", &sim);
    s.install("reconcile_probe", "reconcile-probe", None);
    let mut wink = s.run(&["--call-deadline-ms", "30000", "--shutdown-timeout-ms", "30000"]);
    wait_synced(&wink, "reconcile-probe");
    let cms: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    cms.create(
        &Default::default(),
        &config_map("default", "hot", json!({"hold": "true"})),
    )
    .await
    .unwrap();
    wink.wait_for_line("[reconcile-probe] start default/hot", WAIT);
    // Queued behind the held reconcile.
    cms.create(&Default::default(), &config_map("default", "queued", json!({})))
        .await
        .unwrap();
    let pid = wink.pid().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    wink.wait_for_line("shutting down", WAIT);
    assert!(
        wink.wait_exit(Duration::from_millis(500)).is_none(),
        "the running reconcile holds the shutdown"
    );
    cms.create(&Default::default(), &config_map("default", "gate", json!({})))
        .await
        .unwrap();
    let status = wink.wait_exit(WAIT).expect("it exits once the reconcile ends");
    assert!(status.success(), "{status:?}");
    let lines = wink.plugin_lines("reconcile-probe");
    assert!(lines.contains(&"end default/hot".to_string()), "{lines:#?}");
    assert!(
        !lines.iter().any(|l| l.starts_with("start default/queued")),
        "no key is taken after the shutdown began: {lines:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_enqueues_its_controller_owner_and_the_objects_indexing_it() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("reconcile_feeds", &sim);
    s.install("reconcile_probe", "reconcile-probe", None);
    let wink = s.run(&[]);
    wait_synced(&wink, "reconcile-probe");
    let cms: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    cms.create(&Default::default(), &config_map("default", "owner", json!({})))
        .await
        .unwrap();
    let indexing: ConfigMap = from_json(json!({
        "metadata": {"name": "indexing", "namespace": "default", "annotations": {"probe/pod": "default/p1"}},
    }));
    cms.create(&Default::default(), &indexing).await.unwrap();
    let starts = |w: &crate::common::Wink, key: &str| {
        let line = format!("start {key}");
        w.plugin_lines("reconcile-probe")
            .iter()
            .filter(|l| **l == line)
            .count()
    };
    wink.wait_until("both reconciled once", WAIT, |w| {
        starts(w, "default/owner") == 1 && starts(w, "default/indexing") == 1
    });
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(sim.client(), "default");
    // Owned by `owner` (controller: true): its events enqueue `owner`.
    let mut owned = pod("default", "p0", json!({}), None);
    owned.metadata.owner_references = Some(vec![from_json(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "u-owner", "controller": true,
    }))]);
    pods.create(&Default::default(), &owned).await.unwrap();
    wink.wait_until("the owner reconciled again", WAIT, |w| {
        starts(w, "default/owner") == 2
    });
    // Named by `indexing`'s annotation: its events enqueue `indexing`.
    pods.create(
        &Default::default(),
        &pod("default", "p1", json!({"probe": "yes"}), None),
    )
    .await
    .unwrap();
    wink.wait_until("the indexing ConfigMap reconciled again", WAIT, |w| {
        starts(w, "default/indexing") == 2
    });
    assert_eq!(starts(&wink, "default/owner"), 2, "p1 has no owner");
    assert!(
        !wink
            .plugin_lines("reconcile-probe")
            .iter()
            .any(|l| l.contains("default/p0") || l.contains("default/p1")),
        "a pod's own key is never enqueued: the queue is of ConfigMaps"
    );
}
