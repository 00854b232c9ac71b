//! End-to-end: a registry that dribbles bytes delays only its own
//! WinkPlugins. Three WinkPlugins pull from a scripted registry that sends
//! its manifest a byte every 250 ms (a pull lasting the whole registry
//! deadline); meanwhile another WinkPlugin from a good registry is loaded
//! and a deleted one is unloaded within seconds, and the slow ones are
//! still pulling.

use super::support::{apply, push, wait_condition, winkplugin};
use crate::cache_support::{Setup, WAIT};
use crate::common::{plugin, scratch};
use crate::kubectl_support::{env, have_kubectl};
use crate::registry_support::Registry;
use crate::registry_support::scripted::{Answer, Body, Scripted};
use serde_json::json;
use std::time::{Duration, Instant};
use wink_sim::SimConfig;

/// How long a load or an unload may take beside slow pulls (the slow
/// registry holds its pulls for the 60 s deadline).
const PROMPT: Duration = Duration::from_secs(15);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_that_dribbles_delays_only_its_own_winkplugins() {
    if !have_kubectl() {
        return;
    }
    let env = env("winkplugins_slow_registry", SimConfig::default()).await;
    let s = Setup::new("winkplugins_slow_registry", &env.sim);
    let good = Registry::start("winkplugins_slow_registry_good");
    let slow = Scripted::start(|r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/v2/") => Answer::new(200, Body::Bytes(b"{}".to_vec())),
        // No digest on the HEAD: the manifest's GET, a byte each 250 ms.
        ("HEAD", _) => Answer::new(200, Body::Bytes(Vec::new())),
        ("GET", _) => Answer::new(200, Body::Dribble(vec![b' '; 400], Duration::from_millis(250))),
        _ => Answer::new(404, Body::Bytes(Vec::new())),
    });
    let first = format!("{}/wink/first:v1", good.host());
    push(&good, &first, &plugin("pod_logger"));
    let store = scratch("winkplugins_slow_registry_store").join("store");
    let mut args = super::support::run_args(&good.host(), &store);
    args.extend(["--plain-http".to_string(), slow.host()]);
    let wink = s.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    wink.wait_for_line("watching WinkPlugins", WAIT);
    let ready = |c: &serde_json::Value| c["status"] == "True";

    apply(&env, &winkplugin("first", json!({"source": {"oci": first}}))).await;
    wait_condition(&env, "first", "Ready", ready).await;

    for i in 0..3 {
        let source = format!("{}/wink/slow{i}:v1", slow.host());
        apply(
            &env,
            &winkplugin(&format!("slow{i}"), json!({"source": {"oci": source}})),
        )
        .await;
    }
    // The slow pulls have begun.
    let deadline = Instant::now() + WAIT;
    while slow.requests.load(std::sync::atomic::Ordering::SeqCst) < 4 {
        assert!(Instant::now() < deadline, "the slow registry was never asked");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let started = Instant::now();
    let second = format!("{}/wink/second:v1", good.host());
    push(&good, &second, &plugin("pod_logger"));
    apply(&env, &winkplugin("second", json!({"source": {"oci": second}}))).await;
    wait_condition(&env, "second", "Ready", ready).await;
    let loaded = started.elapsed();
    assert!(
        loaded < PROMPT,
        "another registry's WinkPlugin took {loaded:?} to load beside slow pulls"
    );

    let started = Instant::now();
    env.ok(&["delete", "winkplugin", "first"]).await;
    wink.wait_until("first unloaded", PROMPT, |w| {
        w.lines()
            .iter()
            .any(|l| l.contains("WinkPlugin deleted: its plugin is unloaded") && l.contains("first"))
    });
    let unloaded = started.elapsed();
    assert!(
        unloaded < PROMPT,
        "a deletion's unload took {unloaded:?} beside slow pulls"
    );
    // The slow ones are still pulling: none has failed or loaded yet.
    for i in 0..3 {
        let object = super::support::get(&env, &format!("slow{i}")).await;
        assert!(
            super::support::condition(&object, "Ready").is_none_or(|c| c["status"] != "True"),
            "slow{i} should still be pulling: {object:#}"
        );
        assert!(
            super::support::condition(&object, "Pulled").is_none(),
            "slow{i} should still be pulling: {object:#}"
        );
    }
}
