//! The crate's examples, run against the simulated API server (`wink-sim`,
//! the real HTTP protocol through the real `kube` client): each example's
//! `run` does what its `main` does, and returns what it observed.

#[allow(dead_code)]
#[path = "../examples/two_handlers.rs"]
mod two_handlers;

#[allow(dead_code)]
#[path = "../examples/index_by_label.rs"]
mod index_by_label;

#[allow(dead_code)]
#[path = "../examples/lister_resync.rs"]
mod lister_resync;

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;
use wink_sim::{Sim, SimConfig};

/// How long an example may take before the test calls it hung.
const WAIT: Duration = Duration::from_secs(60);

/// `fut`, or a failure once it took longer than [`WAIT`] and more.
async fn bounded<T>(what: &str, fut: impl Future<Output = anyhow::Result<T>>) -> T {
    match tokio::time::timeout(WAIT * 2, fut).await {
        Ok(result) => result.unwrap_or_else(|e| panic!("{what} failed: {e:#}")),
        Err(_) => panic!("{what} hung"),
    }
}

async fn sim() -> Sim {
    Sim::start(SimConfig::default())
        .await
        .expect("the simulator starts")
}

/// Create a Pod `namespace/name` with `labels` directly on the server.
fn create(sim: &Sim, namespace: &str, name: &str, labels: &[(&str, &str)]) {
    let labels: serde_json::Map<String, serde_json::Value> =
        labels.iter().map(|(k, v)| (k.to_string(), (*v).into())).collect();
    let pod = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}
    });
    sim.insert(pod).expect("the pod is created");
}

/// A handler's lines before its `SYNCED` (sorted: the initial list's order
/// is the server's or the cache's) and after it (in order).
fn split_at_sync(lines: &[String]) -> (Vec<String>, Vec<String>) {
    let at = lines
        .iter()
        .position(|l| l == "SYNCED")
        .unwrap_or_else(|| panic!("never synced: {lines:?}"));
    let mut initial = lines[..at].to_vec();
    initial.sort();
    (initial, lines[at + 1..].to_vec())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_handlers_see_the_same_adds_updates_and_deletes() {
    let sim = sim().await;
    create(&sim, "default", "a", &[("app", "web")]);
    create(&sim, "default", "b", &[]);
    create(&sim, "kube-system", "elsewhere", &[]);
    let mut written = false;
    // Once both handlers have their initial list, change the server: update
    // a, delete b, create c; done when both saw c.
    let until = |seen: &two_handlers::Seen| {
        if !written && seen.iter().all(|lines| lines.iter().any(|l| l == "SYNCED")) {
            written = true;
            let mut a = serde_json::json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "a", "namespace": "default", "labels": {"app": "api"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}
            });
            a["metadata"]["annotations"] = serde_json::json!({"changed": "yes"});
            sim.update("pods", a).expect("a is updated");
            sim.delete("pods", Some("default"), "b").expect("b is deleted");
            create(&sim, "default", "c", &[]);
        }
        seen.iter()
            .all(|lines| lines.iter().any(|l| l == "ADD default/c"))
    };
    let seen = bounded(
        "two_handlers",
        two_handlers::run(sim.client(), "default", until, WAIT),
    )
    .await;
    assert!(written, "the handlers never both synced: {seen:?}");

    let (initial_1, live_1) = split_at_sync(&seen[0]);
    let (initial_2, live_2) = split_at_sync(&seen[1]);
    let adds = ["ADD default/a (initial list)", "ADD default/b (initial list)"];
    assert_eq!(initial_1, adds, "handler 1's initial list");
    assert_eq!(initial_2, adds, "handler 2's initial list");
    assert_eq!(live_1, live_2, "the handlers saw different events");
    assert_eq!(live_1.len(), 3, "handler 1: {live_1:?}");
    assert!(live_1[0].starts_with("UPDATE default/a rv "), "{live_1:?}");
    assert_eq!(live_1[1..], ["DELETE default/b", "ADD default/c"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_by_label_lists_exactly_the_labelled_pods() {
    let sim = sim().await;
    create(&sim, "default", "a", &[("app", "web"), ("tier", "front")]);
    create(&sim, "default", "b", &[("app", "web")]);
    create(&sim, "default", "c", &[("app", "db")]);
    create(&sim, "default", "unlabelled", &[]);
    create(&sim, "kube-system", "e", &[("app", "web")]);
    let keys = |ks: &[&str]| ks.iter().map(|k| k.to_string()).collect::<Vec<_>>();

    let by_app = bounded("index_by_label app", index_by_label::run(sim.client(), "app")).await;
    let expected = BTreeMap::from([
        ("db".to_string(), keys(&["default/c"])),
        (
            "web".to_string(),
            keys(&["default/a", "default/b", "kube-system/e"]),
        ),
    ]);
    assert_eq!(by_app, expected);

    let by_tier = bounded("index_by_label tier", index_by_label::run(sim.client(), "tier")).await;
    assert_eq!(
        by_tier,
        BTreeMap::from([("front".to_string(), keys(&["default/a"]))])
    );

    let by_nothing = bounded("index_by_label none", index_by_label::run(sim.client(), "absent")).await;
    assert!(by_nothing.is_empty(), "{by_nothing:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lister_resync_redelivers_every_pod_with_the_lister_up_to_date() {
    let sim = sim().await;
    create(&sim, "default", "a", &[]);
    create(&sim, "default", "b", &[]);
    create(&sim, "kube-system", "elsewhere", &[]);
    let resync = Duration::from_millis(300);
    let seen = bounded(
        "lister_resync",
        lister_resync::run(sim.client(), "default", resync, 2),
    )
    .await;

    // The initial list: one add per Pod, the lister already holding it.
    let mut added: Vec<&lister_resync::Delivery> = seen.iter().filter(|d| d.what == "ADD").collect();
    added.sort_by(|x, y| x.key.cmp(&y.key));
    let added_keys: Vec<&str> = added.iter().map(|d| d.key.as_str()).collect();
    assert_eq!(added_keys, ["default/a", "default/b"], "{seen:?}");
    assert!(
        seen[..2].iter().all(|d| d.what == "ADD"),
        "adds come first: {seen:?}"
    );
    // Nothing changed on the server: every later delivery is a resync of
    // the version added, which the lister holds.
    let mut resyncs = BTreeMap::<&str, usize>::new();
    for d in &seen {
        assert_eq!(d.lister_version.as_ref(), Some(&d.resource_version), "{d:?}");
        if d.what == "ADD" {
            continue;
        }
        assert_eq!(d.what, "RESYNC", "{seen:?}");
        let add = added
            .iter()
            .find(|a| a.key == d.key)
            .expect("a resync of a Pod added");
        assert_eq!(d.resource_version, add.resource_version, "{d:?}");
        *resyncs.entry(d.key.as_str()).or_default() += 1;
    }
    assert!(
        resyncs.len() == 2 && resyncs.values().all(|n| *n >= 2),
        "{resyncs:?}"
    );
}

/// The README shows each example as it is.
#[test]
fn the_readme_shows_each_example_verbatim() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(dir.join("README.md")).expect("the README");
    for name in ["two_handlers", "index_by_label", "lister_resync"] {
        let code = std::fs::read_to_string(dir.join(format!("examples/{name}.rs"))).expect("the example");
        let shown = format!("```rust\n{code}```\n");
        assert!(
            readme.contains(&shown),
            "README.md does not show examples/{name}.rs as it is"
        );
    }
}
