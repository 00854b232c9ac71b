//! End-to-end: one WinkPlugin, two wink replicas with leader election on
//! one API server. Each replica pulls the component into its own store
//! and loads it; only the leader writes the object's status; once the
//! leader stops, the other leads, and the status of an edit of the spec
//! (its observedGeneration) is written by it.

use super::support::{apply, create_pod, push, run_args, wait_condition, winkplugin};
use crate::cache_support::{self, Setup, WAIT, wait_synced};
use crate::common::{Wink, plugin, scratch};
use crate::kubectl_support::{env, have_kubectl};
use crate::registry_support::{Registry, sha256};
use serde_json::json;
use std::path::Path;
use std::time::Duration;
use wink_sim::SimConfig;

/// A replica named `identity` with the WinkPlugin controller and its own
/// store.
fn replica(s: &Setup, identity: &str, reg: &str, store: &Path) -> Wink {
    let args = run_args(reg, store);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    cache_support::replica(s, identity, &args)
}

/// The lines of `w` that say it wrote a WinkPlugin's status.
fn status_writes(w: &Wink) -> Vec<String> {
    w.lines()
        .into_iter()
        .filter(|l| l.contains("WinkPlugin status written"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_replica_pulls_and_loads_a_winkplugin_only_the_leader_writes_its_status_then_the_new_leader() {
    if !have_kubectl() {
        return;
    }
    let env = env("winkplugins_replicas", SimConfig::default()).await;
    let s = Setup::new("winkplugins_replicas", &env.sim);
    let reg = Registry::start("winkplugins_replicas_registry");
    let reference = format!("{}/wink/logger:v1", reg.host());
    let digest = push(&reg, &reference, &plugin("pod_logger"));
    let dir = scratch("winkplugins_replicas_stores");
    let (store_a, store_b) = (dir.join("a"), dir.join("b"));
    let mut a = replica(&s, "a", &reg.host(), &store_a);
    a.wait_for_line("became the leader", WAIT);
    let b = replica(&s, "b", &reg.host(), &store_b);
    for w in [&a, &b] {
        w.wait_for_line("watching WinkPlugins", WAIT);
    }
    b.wait_for_line("standing by: the Lease default/wink is held by \"a\"", WAIT);

    let logger = |tag: &str| {
        winkplugin(
            "logger",
            json!({"source": {"oci": reference}, "config": {"tag": tag}}),
        )
    };
    apply(&env, &logger("a")).await;
    // Each pulls it from the registry into its own store and loads it.
    let fetched =
        format!("WinkPlugin fetched winkplugin=logger reference={reference} digest={digest} from=registry");
    let layer = sha256(&std::fs::read(plugin("pod_logger")).unwrap());
    for (w, store) in [(&a, &store_a), (&b, &store_b)] {
        w.wait_for_line(&fetched, WAIT);
        wait_synced(w, "logger");
        let blob = store
            .join("blobs/sha256")
            .join(layer.trim_start_matches("sha256:"));
        assert!(blob.exists(), "{} holds the component", store.display());
    }
    let object = wait_condition(&env, "logger", "Ready", |c| {
        c["status"] == "True" && c["observedGeneration"] == 1
    })
    .await;
    assert_eq!(object["status"]["digest"], digest.as_str());
    a.wait_for_line(
        "WinkPlugin status written winkplugin=logger observed_generation=1 ready=True",
        WAIT,
    );
    // The leader delivers; the standby runs the plugin too and writes
    // nothing, refresh after refresh.
    create_pod(&env.sim, "p1").await;
    a.wait_for_line("[logger] OnAdd:a p1", WAIT);
    tokio::time::sleep(wink::winkplugins::REFRESH * 3 + Duration::from_millis(500)).await;
    assert_eq!(
        status_writes(&b),
        Vec::<String>::new(),
        "the standby writes no status"
    );
    assert!(
        b.plugin_lines("logger").is_empty(),
        "the standby delivers nothing"
    );

    // The leader stops: the other leads, and writes the status of an edit.
    assert!(a.terminate(WAIT).is_some_and(|s| s.success()));
    b.wait_for_line("became the leader", WAIT);
    apply(&env, &logger("b")).await;
    b.wait_for_line("[logger] OnAdd:b p1", WAIT);
    let object = wait_condition(&env, "logger", "Ready", |c| {
        c["status"] == "True" && c["observedGeneration"] == 2
    })
    .await;
    assert_eq!(object["status"]["observedGeneration"], 2, "{object:#}");
    assert_eq!(object["status"]["digest"], digest.as_str());
    b.wait_for_line(
        "WinkPlugin status written winkplugin=logger observed_generation=2 ready=True",
        WAIT,
    );
    assert!(
        !status_writes(&a)
            .iter()
            .any(|l| l.contains("observed_generation=2")),
        "the stopped leader wrote nothing of the edit"
    );
}
