//! End-to-end: a WinkPlugin's tag pinned once. v1 of a component pushed
//! under a tag is pinned and runs; v2 pushed under the same tag is not
//! taken when an edit of the config makes the controller pass over the
//! object again (the digest stays, v1 runs with the new config); a change
//! of the source to v2's digest swaps the plugin while Pods are created
//! all along, each Pod reaching exactly one version live, and v2's initial
//! replay being exactly what v1 saw.

use super::support::{apply, create_pod, push, run, wait_condition, winkplugin};
use crate::cache_support::{Setup, WAIT};
use crate::common::{plugin, scratch};
use crate::kubectl_support::{env, have_kubectl};
use crate::registry_support::Registry;
use crate::runtime_support::{Creator, synced_at};
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use serde_json::json;
use wink_sim::SimConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_tag_is_not_taken_until_the_source_changes_then_the_swap_loses_no_pod_and_doubles_none() {
    if !have_kubectl() {
        return;
    }
    let env = env("winkplugins_moved_tag", SimConfig::default()).await;
    let s = Setup::new("winkplugins_moved_tag", &env.sim);
    let reg = Registry::start("winkplugins_moved_tag_registry");
    let tag = format!("{}/wink/moving:stable", reg.host());
    // v1 prints `OnAdd:<config tag> <pod>`; v2 prints `OnAdd: <pod>`.
    let d1 = push(&reg, &tag, &plugin("pod_logger"));
    let store = scratch("winkplugins_moved_tag_store").join("store");
    let wink = run(&s, &reg.host(), &store);
    wink.wait_for_line("watching WinkPlugins", WAIT);
    let moving = |source: &str, config_tag: &str| {
        winkplugin(
            "moving",
            json!({"source": {"oci": source}, "config": {"tag": config_tag}}),
        )
    };
    let generation =
        |n: i64| move |c: &serde_json::Value| c["status"] == "True" && c["observedGeneration"] == n;

    apply(&env, &moving(&tag, "a")).await;
    let object = wait_condition(&env, "moving", "Ready", generation(1)).await;
    assert_eq!(object["status"]["digest"], d1.as_str(), "{object:#}");
    create_pod(&env.sim, "p1").await;
    wink.wait_for_line("[moving] OnAdd:a p1", WAIT);

    // The tag moves to v2; an edit of the config alone keeps v1.
    let d2 = push(&reg, &tag, &plugin("misbehave"));
    assert_ne!(d1, d2);
    apply(&env, &moving(&tag, "b")).await;
    let object = wait_condition(&env, "moving", "Ready", generation(2)).await;
    assert_eq!(object["status"]["digest"], d1.as_str(), "{object:#}");
    wink.wait_for_line("[moving] OnAdd:b p1", WAIT);
    wink.wait_for_line(
        &format!("WinkPlugin fetched winkplugin=moving reference={tag} digest={d1} from=store"),
        WAIT,
    );
    assert!(
        !wink.lines().iter().any(|l| l.contains(&d2)),
        "v2 was never fetched"
    );
    assert!(
        !wink.plugin_lines("moving").iter().any(|l| l == "OnAdd: p1"),
        "v2 never ran"
    );

    // Pods created all along while the source changes to v2's digest,
    // from after v1's second instance synced.
    wink.wait_until("v1 synced again", WAIT, |w| {
        synced_at(&w.lines(), "moving").len() == 2
    });
    let creator = Creator::start(Api::<Pod>::namespaced(env.sim.client(), "default"));
    creator.wait_created(&wink, 20);
    let pinned = format!("{}/wink/moving@{d2}", reg.host());
    apply(&env, &moving(&pinned, "b")).await;
    let object = wait_condition(&env, "moving", "Ready", generation(3)).await;
    assert_eq!(object["status"]["digest"], d2.as_str(), "{object:#}");
    wink.wait_until("v2 synced", WAIT, |w| synced_at(&w.lines(), "moving").len() == 3);
    creator.wait_created(&wink, creator.created() + 20);
    let total = creator.finish_after(20).await;
    wink.wait_for_line(&format!("[moving] OnAdd: ev-{:04}", total - 1), WAIT);

    // Each version's lines, split at its "plugin synced" into its initial
    // replay and what it got live.
    let lines = wink.lines();
    let synced = synced_at(&lines, "moving");
    assert_eq!(synced.len(), 3, "one sync per version: v1 (a), v1 (b), v2");
    let version = |prefix: &str, synced_at: usize| {
        let (mut replay, mut live) = (Vec::new(), Vec::new());
        for (i, l) in lines.iter().enumerate() {
            if let Some((_, m)) = l.split_once("[moving] ")
                && let Some(name) = m.strip_prefix(prefix)
                && !name.contains(' ')
            {
                match i < synced_at {
                    true => replay.push(name.to_string()),
                    false => live.push(name.to_string()),
                }
            }
        }
        (replay, live)
    };
    let (v1_replay, v1_live) = version("OnAdd:b ", synced[1]);
    let (v2_replay, v2_live) = version("OnAdd: ", synced[2]);
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    assert_eq!(
        sorted(v2_replay),
        sorted([v1_replay, v1_live.clone()].concat()),
        "v2's replay is what v1 got"
    );
    let expected: Vec<String> = (0..total).map(|i| format!("ev-{i:04}")).collect();
    assert_eq!(
        [v1_live.clone(), v2_live.clone()].concat(),
        expected,
        "each Pod reached exactly one version live, in order"
    );
    assert!(
        !v1_live.is_empty() && !v2_live.is_empty(),
        "both versions got Pods live: {} {}",
        v1_live.len(),
        v2_live.len()
    );
}
