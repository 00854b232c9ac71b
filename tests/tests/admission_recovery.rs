//! End-to-end: an admission call stopped at its webhook's deadline leaves
//! its instance unusable; the reviews that were waiting for that instance
//! are asked of a fresh one (or the pool's other) within their own
//! deadlines, and answered by the plugin, not refused because the instance
//! they waited for was replaced.

use crate::admin::sample;
use crate::admission::{ask, ca_pem, pod, review, run};
use crate::cache_support::*;
use serde_json::json;
use std::time::Instant;
use wink_sim::{Sim, SimConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviews_waiting_for_an_instance_stopped_at_its_deadline_are_answered_by_a_fresh_one() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("admission_recovery", &sim);
    // A Pod labelled `loop` is never answered; any other is, at once.
    s.install("admit_probe", "probe", Some(&json!({"timeout": 10})));
    let port = free_port();
    let admin = format!("127.0.0.1:{}", free_port());
    let args = ["--admission-configurations=false", "--admin-addr", &admin];
    let wink = run(&s, port, &args);
    wait_synced(&wink, "probe");
    let ca = ca_pem(&sim).await;
    let calls = async || {
        let (_, text) = http(&admin, "GET", "/metrics").await;
        sample(&text, "wink_plugin_calls_total", &[("plugin", "probe")]).unwrap_or(0.0)
    };
    let before = calls().await;

    // The looping review, asked within 1 s (its call stopped at 0.8 s).
    let looping = review("uid-loop", pod("spins", json!({"loop": "1"})));
    let (ca_loop, path) = (ca.clone(), "/admission/probe/validate?timeout=1s");
    let stopped = tokio::spawn(async move { ask(port, &ca_loop, path, &looping).await });
    // Its call has begun once counted (calls are counted as they start).
    let deadline = Instant::now() + WAIT;
    while calls().await < before + 1.0 {
        assert!(Instant::now() < deadline, "the looping call never began");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // Four reviews, taken in turn by the pool's two instances: two wait
    // for the looping one. Each may take its webhook's 8 s.
    let asks = (0..4).map(|i| {
        let r = review(&format!("uid-{i}"), pod(&format!("ok-{i}"), json!({})));
        let ca = ca.clone();
        async move { ask(port, &ca, "/admission/probe/validate", &r).await }
    });
    let answers = futures::future::join_all(asks).await;

    let r = stopped.await.unwrap();
    assert_eq!(r["allowed"], false, "Fail: {r}");
    let message = r["status"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("no answer within"), "{r}");
    for (i, r) in answers.iter().enumerate() {
        assert_eq!(
            r["allowed"],
            true,
            "review {i}: {r}\nwink said:\n{}",
            wink.lines().join("\n")
        );
        assert_eq!(r["warnings"][0], format!("admit-probe: checked ok-{i}"), "{r}");
    }
    assert!(
        wink.lines()
            .iter()
            .any(|l| l.contains("admission call stopped at its webhook's deadline")),
        "the looping call was stopped"
    );
    drop(wink);
}
