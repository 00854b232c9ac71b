//! End-to-end: what the store keeps for WinkPlugins. Thirty WinkPlugins
//! on one digest share one copy of the component (every plugin file is a
//! link to the one blob); one deleted and created again under the same
//! tag, moved meanwhile, resolves the tag anew rather than taking the old
//! pin; once all are deleted, their plugin files, their pins and the
//! blobs no plugin names any more are gone.

use super::support::{apply, push, run, wait_condition, winkplugin};
use crate::cache_support::{Setup, WAIT};
use crate::common::{plugin, scratch};
use crate::kubectl_support::{Env, env, have_kubectl};
use crate::registry_support::Registry;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};
use wink_sim::SimConfig;

const N: usize = 30;

/// The names of the WinkPlugins whose Ready is True.
async fn ready(env: &Env) -> BTreeSet<String> {
    let (_, out, _) = env.run(&["get", "winkplugins", "-o", "json"]).await;
    let list: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|o| super::support::condition(o, "Ready").is_some_and(|c| c["status"] == "True"))
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
        .collect()
}

/// The (device, inode) of each file in `dir` ending in `suffix`.
fn inodes(dir: &Path, suffix: &str) -> Vec<(u64, u64)> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(suffix))
        .map(|e| {
            let m = e.metadata().unwrap();
            (m.dev(), m.ino())
        })
        .collect()
}

fn pins(store: &Path) -> Value {
    std::fs::read_to_string(store.join("pins.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(json!({}))
}

async fn wait(what: &str, mut pred: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !pred() {
        assert!(Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn winkplugins_on_one_digest_share_one_copy_a_recreated_one_resolves_its_tag_and_deleted_ones_are_collected()
 {
    if !have_kubectl() {
        return;
    }
    let env = env("winkplugins_store_sharing", SimConfig::default()).await;
    let s = Setup::new("winkplugins_store_sharing", &env.sim);
    let reg = Registry::start("winkplugins_store_sharing_registry");
    let tag = format!("{}/wink/shared:stable", reg.host());
    let d1 = push(&reg, &tag, &plugin("pod_logger"));
    let store = scratch("winkplugins_store_sharing_store").join("store");
    let wink = run(&s, &reg.host(), &store);
    wink.wait_for_line("watching WinkPlugins", WAIT);

    let items: Vec<Value> = (0..N)
        .map(|i| winkplugin(&format!("shared{i}"), json!({"source": {"oci": tag}})))
        .collect();
    apply(&env, &json!({"apiVersion": "v1", "kind": "List", "items": items})).await;
    let deadline = Instant::now() + WAIT * 4;
    while ready(&env).await.len() < N {
        assert!(Instant::now() < deadline, "not all {N} WinkPlugins became Ready");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let plugins = store.join("plugins");
    let files = inodes(&plugins, ".wasm");
    assert_eq!(files.len(), N, "one plugin file per WinkPlugin");
    let distinct: BTreeSet<_> = files.iter().collect();
    assert_eq!(distinct.len(), 1, "{N} WinkPlugins on one digest: one copy");
    let blobs = store.join("blobs/sha256");
    assert!(
        inodes(&blobs, "").contains(&files[0]),
        "the copy is the store's blob"
    );

    // Deleted, the tag moved, created again: the tag is resolved anew.
    env.ok(&["delete", "winkplugin", "shared0"]).await;
    wait("shared0's pin forgotten", || {
        pins(&store).get("winkplugin.shared0").is_none()
    })
    .await;
    let d2 = push(&reg, &tag, &plugin("misbehave"));
    assert_ne!(d1, d2);
    apply(&env, &winkplugin("shared0", json!({"source": {"oci": tag}}))).await;
    let object = wait_condition(&env, "shared0", "Ready", |c| c["status"] == "True").await;
    assert_eq!(
        object["status"]["digest"],
        d2.as_str(),
        "a WinkPlugin created anew resolves its tag: {object:#}"
    );

    // Blobs younger than the store's grace (d2's) are kept at the
    // deletion; the collection comes back for them once they may go.
    env.ok(&["delete", "winkplugins", "--all"]).await;
    wait("every plugin file removed", || {
        inodes(&plugins, ".wasm").is_empty()
    })
    .await;
    wait("every WinkPlugin pin forgotten", || {
        pins(&store)
            .as_object()
            .is_none_or(|p| !p.keys().any(|k| k.starts_with("winkplugin.")))
    })
    .await;
    wait("every blob collected", || inodes(&blobs, "").is_empty()).await;
}
