//! End-to-end: what the controller writes of a WinkPlugin's status, and
//! when. The status on the object is the one computed, no more: a
//! `lastError` is gone once the plugin recovers; `digest` and `language`
//! name the version that runs, none before one runs and the running one
//! after a later pull fails. A busy plugin's call counts alone are not written
//! each refresh (they wait [`COUNTERS_REFRESH`]), while a condition that
//! changes is written at once, with the counts of that moment.
//!
//! [`COUNTERS_REFRESH`]: wink::winkplugins::COUNTERS_REFRESH

use super::support::{apply, create_pod, get, push, run_args, wait_condition, winkplugin};
use crate::cache_support::{Setup, WAIT};
use crate::common::{plugin, scratch};
use crate::kubectl_support::{env, have_kubectl};
use crate::registry_support::Registry;
use serde_json::{Value, json};
use std::time::Duration;
use wink_sim::{Sim, SimConfig};

/// A digest no registry has.
const MISSING: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recovered_winkplugin_keeps_no_last_error_and_a_failed_pull_the_running_digest() {
    if !have_kubectl() {
        return;
    }
    let env = env("winkplugins_stale_status", SimConfig::default()).await;
    let s = Setup::new("winkplugins_stale_status", &env.sim);
    let reg = Registry::start("winkplugins_stale_status_registry");
    let reference = format!("{}/wink/logger:v1", reg.host());
    let digest = push(&reg, &reference, &plugin("pod_logger"));
    let missing = format!("{}/wink/logger@{MISSING}", reg.host());
    let store = scratch("winkplugins_stale_status_store").join("store");
    let wink = s.run(
        &run_args(&reg.host(), &store)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    wink.wait_for_line("watching WinkPlugins", WAIT);
    let flaky = |source: &str| winkplugin("flaky", json!({"source": {"oci": source}}));
    let at = |n: i64| move |c: &Value| c["observedGeneration"] == n;

    // A digest the registry does not have: not pulled, with why.
    apply(&env, &flaky(&missing)).await;
    let object = wait_condition(&env, "flaky", "Pulled", |c| c["status"] == "False" && at(1)(c)).await;
    assert!(object["status"]["lastError"].is_string(), "{object:#}");
    let status = object["status"].as_object().unwrap();
    for field in ["digest", "componentDigest", "language"] {
        assert!(
            !status.contains_key(field),
            "nothing runs: no {field}: {object:#}"
        );
    }

    // Fixed: ready, and the error is gone from the object.
    apply(&env, &flaky(&reference)).await;
    let object = wait_condition(&env, "flaky", "Ready", |c| c["status"] == "True" && at(2)(c)).await;
    assert_eq!(object["status"]["digest"], digest.as_str(), "{object:#}");
    assert_eq!(object["status"]["lastError"], Value::Null, "{object:#}");
    assert!(
        !object["status"].as_object().unwrap().contains_key("lastError"),
        "{object:#}"
    );

    let running = object["status"].clone();
    assert_eq!(running["language"], "rust", "{object:#}");

    // A later pull that fails: the error again, and the version that still
    // runs is the one the status names.
    apply(&env, &flaky(&missing)).await;
    let object = wait_condition(&env, "flaky", "Pulled", |c| c["status"] == "False" && at(3)(c)).await;
    assert!(object["status"]["lastError"].is_string(), "{object:#}");
    for field in ["digest", "componentDigest", "language"] {
        assert_eq!(object["status"][field], running[field], "{field}: {object:#}");
    }
    create_pod(&env.sim, "still-running").await;
    wink.wait_until("the running version handles a new Pod", WAIT, |w| {
        w.plugin_lines("flaky")
            .iter()
            .any(|l| l.contains("still-running"))
    });
    // What kubectl shows is what the API server stores.
    assert_eq!(get(&env, "flaky").await["status"], object["status"]);
}

/// The writes of WinkPlugin statuses the API server has received.
fn status_writes(sim: &Sim) -> u64 {
    sim.request_count("patch", "winkplugins/status") + sim.request_count("update", "winkplugins/status")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_winkplugins_counts_are_not_written_each_refresh_and_its_quarantine_is_written_at_once() {
    if !have_kubectl() {
        return;
    }
    let env = env("winkplugins_status_load", SimConfig::default()).await;
    let s = Setup::new("winkplugins_status_load", &env.sim);
    let reg = Registry::start("winkplugins_status_load_registry");
    let reference = format!("{}/wink/misbehave:v1", reg.host());
    push(&reg, &reference, &plugin("misbehave"));
    let store = scratch("winkplugins_status_load_store").join("store");
    let mut args = run_args(&reg.host(), &store);
    args.extend(["--max-restarts", "1"].map(String::from));
    let wink = s.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    wink.wait_for_line("watching WinkPlugins", WAIT);
    let config = json!({"mode": "panic", "trigger": "bomb", "on": "add"});
    apply(
        &env,
        &winkplugin("busy", json!({"source": {"oci": reference}, "config": config})),
    )
    .await;
    wait_condition(&env, "busy", "Ready", |c| c["status"] == "True").await;

    // A Pod every 100 ms for 5 s: the plugin's calls grow refresh after
    // refresh, and nothing else about it changes.
    let before = status_writes(&env.sim);
    const PODS: usize = 50;
    for i in 0..PODS {
        create_pod(&env.sim, &format!("p{i:02}")).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    wink.wait_for_line(&format!("[busy] OnAdd: p{:02}", PODS - 1), WAIT);
    tokio::time::sleep(wink::winkplugins::REFRESH * 2).await;
    let written = status_writes(&env.sim) - before;
    assert!(
        written <= 2,
        "{written} status writes while only the call counts changed, over {} refreshes",
        PODS / 10
    );

    // It crashes and is quarantined: written without waiting for the
    // counts' period, with the counts of then.
    create_pod(&env.sim, "bomb").await;
    let object = wait_condition(&env, "busy", "Quarantined", |c| c["status"] == "True").await;
    assert_eq!(object["status"]["ready"], "False", "{object:#}");
    assert!(
        object["status"]["crashes"].as_u64().is_some_and(|n| n >= 1),
        "{object:#}"
    );
    assert!(status_writes(&env.sim) > before + written);
}
