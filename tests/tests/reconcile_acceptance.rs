//! End-to-end: what a plugin's work queue promises, on the simulated API
//! server. `ttl-reaper` (no resync) deletes a ConfigMap at its expiry
//! through `requeue-after` alone; with the API server answering 503 to
//! every request for 30 s while 100 namespaces need `defaults-keeper`'s
//! ConfigMap, the retries stay within the rate limiter's bound and every key
//! converges after the server is back, with no event to wake it; 10,000
//! updates to one ConfigMap while `reconcile-probe` holds its reconcile
//! cause at most two reconciles after the held one.

use crate::cache_support::*;
use crate::plugins_act::grants;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use std::time::{Duration, Instant, SystemTime};
use wink_sim::{Sim, SimConfig};

/// The sum of a metric's samples whose labels include `labels`.
fn total(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(v)))
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            _ => 0.0,
        })
        .sum()
}

/// An RFC 3339 UTC time with whole seconds (`2026-11-23T20:00:00Z`) as a
/// time.
fn rfc3339(t: &str) -> SystemTime {
    let (date, time) = t.strip_suffix('Z').unwrap().split_once('T').unwrap();
    let d: Vec<i64> = date.split('-').map(|p| p.parse().unwrap()).collect();
    let h: Vec<i64> = time.split(':').map(|p| p.parse().unwrap()).collect();
    // Days from civil (Howard Hinnant's algorithm).
    let (y, m) = if d[1] <= 2 { (d[0] - 1, d[1]) } else { (d[0], d[1]) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d[2] - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    let secs = days * 86_400 + h[0] * 3600 + h[1] * 60 + h[2];
    SystemTime::UNIX_EPOCH + Duration::from_secs(secs as u64)
}

#[test]
fn rfc3339_reads_whole_seconds() {
    let t = rfc3339("2026-11-23T20:00:01Z");
    let secs = t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
    assert_eq!(secs, 1_795_464_001);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ttl_object_is_deleted_at_its_expiry_with_no_resync() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("reconcile_ttl_expiry", &sim);
    s.install("ttl_reaper", "ttl-reaper", None);
    let file = grants(
        &s,
        "plugins:\n  ttl-reaper:\n    writes: [{apiVersion: v1, kind: ConfigMap, verbs: [delete]}]\n",
    );
    let wink = s.run(&["--grants", &file]);
    wait_synced(&wink, "ttl-reaper");
    let cms: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    let annotated = |name: &str, ttl: &str| -> ConfigMap {
        from_json(json!({"metadata": {
            "name": name, "namespace": "default", "annotations": {"wink.dev/ttl": ttl},
        }}))
    };
    let long = cms
        .create(&PostParams::default(), &annotated("long", "1h"))
        .await
        .unwrap();
    let short = cms
        .create(&PostParams::default(), &annotated("short", "4s"))
        .await
        .unwrap();
    let stamp = serde_json::to_value(&short.metadata.creation_timestamp).unwrap();
    let created = rfc3339(stamp.as_str().unwrap());
    let expiry = created + Duration::from_secs(4);
    assert!(long.metadata.creation_timestamp.is_some());

    // Nothing changes from here: the reaper has no resync, so only the
    // requeue-after answered at the creation can bring it back at the expiry.
    let deleted_at = loop {
        if cms.get_opt("short").await.unwrap().is_none() {
            break SystemTime::now();
        }
        assert!(
            SystemTime::now() < expiry + Duration::from_secs(30),
            "default/short still there 30 s past its expiry"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let late = deleted_at
        .duration_since(expiry)
        .unwrap_or_else(|early| panic!("deleted {:?} before its expiry", early.duration()));
    // At its time, not at some later wake-up: a loaded machine delays the
    // requeue by a few seconds at most (the test's figure is not a measure
    // of precision; that is a benchmark's).
    assert!(
        late <= Duration::from_secs(10),
        "deleted {late:?} after its expiry"
    );
    wink.wait_for_line("ttl-reaper: deleted default/short (older than 4s)", WAIT);
    assert_eq!(
        sim.request_count("delete", "configmaps"),
        1,
        "one delete, at the expiry"
    );
    assert!(cms.get_opt("long").await.unwrap().is_some(), "not due yet");
    eprintln!("default/short deleted {late:?} after its expiry");
}

/// How long the API server is away in the pause test.
const PAUSE: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_api_server_costs_no_hot_loop_and_every_key_converges_after() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("reconcile_paused_server", &sim);
    s.install("defaults_keeper", "defaults-keeper", None);
    let file = grants(
        &s,
        "plugins:\n  defaults-keeper:\n    writes: [{apiVersion: v1, kind: ConfigMap, verbs: [create]}]\n",
    );
    let addr = format!("127.0.0.1:{}", free_port());
    let wink = s.run(&["--grants", &file, "--admin-addr", &addr]);
    wait_synced(&wink, "defaults-keeper");
    let informers = |sim: &Sim| {
        ["list", "watch"]
            .iter()
            .flat_map(|v| ["namespaces", "configmaps"].map(|r| sim.request_count(v, r)))
            .sum::<u64>()
    };
    let informed = informers(&sim);
    let informed_by = |sim: &Sim| {
        ["list", "watch"]
            .iter()
            .flat_map(|v| ["namespaces", "configmaps"].map(|r| (*v, r, sim.request_count(v, r))))
            .collect::<Vec<_>>()
    };
    let was_informed = informed_by(&sim);
    let creates = sim.request_count("create", "configmaps");

    // From here every request gets 503 until the pause ends; the open
    // watches stay open. 100 namespaces come, written inside the simulator:
    // their events reach wink, and every create they call for is refused.
    sim.faults().fail_next(usize::MAX, 503);
    let paused = Instant::now();
    for i in 0..100 {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("ns-{i}")}});
        sim.insert(ns).unwrap();
    }
    tokio::time::sleep(PAUSE.saturating_sub(paused.elapsed())).await;
    let tried = sim.request_count("create", "configmaps") - creates;
    sim.faults().fail_next(0, 503);
    let back = Instant::now();

    // Each key was tried, and retried no faster than the queue's limiter
    // lets it: its first try, then the bucket's burst of 100 and 10 a
    // second (a hot loop would be thousands).
    let bound = 100 + 100 + 10 * (PAUSE.as_secs() + 2);
    assert!(
        (100..=bound).contains(&tried),
        "{tried} creates while the server was away (each of 100 keys tried, at most {bound})"
    );
    let failed = wink
        .lines()
        .iter()
        .filter(|l| l.contains("reconcile failed; retried with backoff"))
        .count();
    assert!(failed >= 100, "every key's failure retried: {failed}");

    // Back: no event comes, no informer lists or watches again; the
    // backoff alone brings every key back, and each is created once.
    let cms: Api<ConfigMap> = Api::all(sim.client());
    // This test's own lists of ConfigMaps, told apart from wink's.
    let mut polls = 0;
    let converged = loop {
        let list = cms.list(&ListParams::default()).await.unwrap();
        polls += 1;
        let made = list
            .items
            .iter()
            .filter(|c| {
                c.metadata.name.as_deref() == Some("wink-defaults")
                    && c.metadata
                        .namespace
                        .as_deref()
                        .is_some_and(|n| n.starts_with("ns-"))
            })
            .count();
        if made == 100 {
            break back.elapsed();
        }
        assert!(
            back.elapsed() < Duration::from_secs(120),
            "{made} of 100 namespaces converged 120 s after the server came back"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(
        informers(&sim) - polls,
        informed,
        "no list or watch was made again: no event woke the keys ({:?})",
        (informed_by(&sim), &was_informed)
    );
    // Every create but the 100 that succeeded, and those that found the
    // ConfigMap made already (the cache behind), was refused, all of them
    // during the pause.
    let existing = wink
        .plugin_lines("defaults-keeper")
        .iter()
        .filter(|l| l.ends_with("/wink-defaults exists"))
        .count() as u64;
    let refused = sim.request_count("create", "configmaps") - creates - 100 - existing;
    assert!(
        (100..=bound).contains(&refused),
        "{refused} creates refused (each of 100 keys refused, at most {bound})"
    );
    let failed = wink
        .lines()
        .iter()
        .filter(|l| l.contains("reconcile failed; retried with backoff"))
        .count() as u64;
    let (_, text) = http(&addr, "GET", "/metrics").await;
    let retries = total(&text, "workqueue_retries_total", &[("plugin", "defaults-keeper")]);
    assert!(
        retries >= 100.0,
        "every key's retry counted: {retries} for {refused} refusals"
    );
    eprintln!(
        "paused {PAUSE:?}: {refused} creates refused (100 keys), {failed} failed reconciles, {retries} retries counted, {existing} found made, converged {converged:?} after"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_updates_during_a_slow_reconcile_cause_at_most_two_more() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("reconcile_ten_thousand", &sim);
    s.install("reconcile_probe", "reconcile-probe", None);
    let addr = format!("127.0.0.1:{}", free_port());
    // The held reconcile waits in the guest: a long deadline.
    let wink = s.run(&["--call-deadline-ms", "30000", "--admin-addr", &addr]);
    wait_synced(&wink, "reconcile-probe");
    let cms: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    cms.create(
        &PostParams::default(),
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
    let modified = || async {
        let (_, text) = http(&addr, "GET", "/metrics").await;
        total(&text, "wink_informer_watch_events_total", &[("type", "MODIFIED")])
    };
    let before = modified().await;

    // 10,000 updates, written inside the simulator, each a watch event.
    for i in 0..10_000 {
        let cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "hot", "namespace": "default", "labels": {"hold": "true"}},
            "data": {"n": i.to_string()},
        });
        sim.update("configmaps", cm).unwrap();
    }
    // Every one reached wink while the reconcile is still held.
    let deadline = Instant::now() + WAIT;
    while modified().await < before + 10_000.0 {
        if Instant::now() > deadline {
            let (_, text) = http(&addr, "GET", "/metrics").await;
            let informer: Vec<&str> = text.lines().filter(|l| l.starts_with("wink_informer")).collect();
            panic!("the updates never all arrived (from {before}): {informer:#?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(starts(&wink), 1, "held: no second reconcile of the key meanwhile");
    assert!(
        !wink
            .plugin_lines("reconcile-probe")
            .contains(&"end default/hot".to_string()),
        "the reconcile was held through the updates"
    );

    cms.create(&PostParams::default(), &config_map("default", "gate", json!({})))
        .await
        .unwrap();
    wink.wait_until("the held reconcile ended", WAIT, |w| {
        w.plugin_lines("reconcile-probe")
            .iter()
            .any(|l| l == "end default/hot")
    });
    wink.wait_until("the key reconciled again", WAIT, |w| starts(w) >= 2);
    // Quiet now: no event is pending; give a stray reconcile time to show.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = starts(&wink) - 1;
    assert!(
        (1..=2).contains(&after),
        "10,000 updates while reconciled: {after} reconciles after it (one, at most two)"
    );
    eprintln!("10,000 updates during the held reconcile: {after} reconcile(s) after it");
}
