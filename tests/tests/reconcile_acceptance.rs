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
            prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Gauge(v) => v,
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
async fn a_ttl_object_is_deleted_within_a_second_of_its_expiry_with_no_resync() {
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
    assert!(
        late <= Duration::from_secs(1),
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
