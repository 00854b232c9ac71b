//! End-to-end: a plugin flooding its own work queue. `queue-flood` adds
//! 10,000 keys of 500 bytes (due in an hour) per ConfigMap event: past the
//! queue's 8 MiB of keys its adds are refused, the plugin is told, the
//! refusals are counted in `wink_workqueue_refused_total` and said in the
//! log once; the daemon's RSS stops growing with the events. A reload whose
//! config changes the queue's resource starts from an empty queue.

use crate::admin::sample;
use crate::admin_limits::status_bytes;
use crate::cache_support::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;
use wink_sim::{Sim, SimConfig};

const PLUGIN: &str = "queue-flood";
const KEYS: u64 = 10_000;

/// The plugin's `flood NAME: ...` line for `name`, once it came.
fn flood_line(wink: &crate::common::Wink, name: &str) -> String {
    let prefix = format!("flood {name}: ");
    wink.wait_until(&format!("{name} flooded"), WAIT, |w| {
        lines_starting(w, PLUGIN, &prefix).len() == 1
    });
    lines_starting(wink, PLUGIN, &prefix).remove(0)
}

/// (added, refused) of a `flood NAME: added A refused R...` line.
fn counts(line: &str) -> (u64, u64) {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = |w: &str| {
        let i = words.iter().position(|x| *x == w).unwrap();
        words[i + 1].trim_end_matches(':').parse().unwrap()
    };
    (at("added"), at("refused"))
}

/// Create the ConfigMap `name`, and once the plugin flooded, delete it (so
/// a reloaded instance, replayed the cache, does not flood again).
async fn flood(sim: &Sim, wink: &crate::common::Wink, name: &str) -> (u64, u64) {
    let api = Api::<ConfigMap>::namespaced(sim.client(), "default");
    api.create(&PostParams::default(), &config_map("default", name, json!({})))
        .await
        .unwrap();
    let line = flood_line(wink, name);
    api.delete(name, &Default::default()).await.unwrap();
    counts(&line)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_flooding_its_queue_is_refused_past_the_cap_and_a_reload_empties_it() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("hostile_queue", &sim);
    s.install("queue_flood", PLUGIN, Some(&json!({"keys": KEYS})));
    let addr = format!("127.0.0.1:{}", free_port());
    let wink = s.run(&["--admin-addr", &addr]);
    wait_synced(&wink, PLUGIN);

    // 8 MiB of 500-byte keys: 16,777 keys, reached in the second event.
    let cap = (8u64 << 20) / 500;
    let mut added = 0;
    let mut refused = 0;
    let mut rss_full = 0;
    for i in 0..12 {
        let (a, r) = flood(&sim, &wink, &format!("flood-{i}")).await;
        assert_eq!(a + r, KEYS);
        added += a;
        refused += r;
        if i == 2 {
            rss_full = status_bytes(wink.pid(), "VmRSS");
        }
    }
    // (A key of a ConfigMap the host enqueued may still be held.)
    assert!(
        (cap - 3..=cap).contains(&added),
        "the queue took keys up to its byte cap ({cap}), then none: {added}"
    );
    assert_eq!(refused, 12 * KEYS - added);
    let rss_end = status_bytes(wink.pid(), "VmRSS");
    // Nine more events of 10,000 keys held would be ~60 MB.
    assert!(
        rss_end < rss_full + (16 << 20),
        "RSS grew from {rss_full} to {rss_end} bytes with the queue full"
    );
    let line = flood_line(&wink, "flood-5");
    assert!(
        line.contains("the work queue is full"),
        "the plugin is told: {line}"
    );

    let (_, text) = http(&addr, "GET", "/metrics").await;
    let p = [("plugin", PLUGIN)];
    assert_eq!(
        sample(&text, "wink_workqueue_refused_total", &p),
        Some(refused as f64),
        "{text}"
    );
    let said = wink
        .lines()
        .iter()
        .filter(|l| l.contains("the plugin's key refused"))
        .count();
    assert_eq!(said, 1, "said once (then at most once a minute)");

    // A reload that changes what the plugin reconciles: its new queue is
    // empty, and takes keys again.
    std::fs::write(
        s.plugins.join(format!("{PLUGIN}.json")),
        json!({"kind": "Service", "keys": KEYS}).to_string(),
    )
    .unwrap();
    wink.wait_for_line("plugin reloaded from", WAIT);
    wait_until_waiting(&addr, 0).await;
    let (a, r) = flood(&sim, &wink, "flood-after-reload").await;
    assert_eq!((a, r), (KEYS, 0), "the new queue took every key");
}

/// Wait until the plugin's queue holds `n` keys waiting for their delay.
async fn wait_until_waiting(addr: &str, n: u64) {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let (_, body) = http(addr, "GET", "/debug/plugins").await;
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let waiting = v["plugins"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == PLUGIN)
            .and_then(|p| p["work_queue"]["waiting"].as_u64());
        if waiting == Some(n) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "waiting {waiting:?}: {body}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
