//! End-to-end: `wink run --grants FILE` reads the file again when it
//! changes. The warning about a missing grant says where it goes; a bad new
//! file keeps the grants in force and is said once; a good one is in force
//! at once: require-labels may patch, a plugin refused Secrets loads, and
//! one whose Secrets grant is withdrawn is unloaded.

use crate::cache_support;

use cache_support::*;
use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};
use wink_sim::{Sim, SimConfig};

/// Replace the grants file as an editor or a ConfigMap update does: a new
/// file renamed into place.
fn replace(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn count(lines: &[String], needle: &str) -> usize {
    lines.iter().filter(|l| l.contains(needle)).count()
}

async fn labelled(deployments: &Api<Deployment>, name: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        let d = deployments.get(name).await.unwrap();
        if d.labels().get("team").is_some() {
            return;
        }
        assert!(Instant::now() < deadline, "{name} was never labelled");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_grants_file_is_read_again_and_in_force_at_once() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("grants_reload", &sim);
    s.install("require_labels", "require-labels", None);
    let secrets = json!({"watches": [{"api_version": "v1", "kind": "Secret"}]});
    s.install("cache_probe", "secret-reader", Some(&secrets));
    let deployments: Api<Deployment> = Api::namespaced(sim.client(), "default");
    let pp = PostParams::default();
    deployments
        .create(&pp, &deployment("default", "web", 1))
        .await
        .unwrap();
    let file = s.plugins.parent().unwrap().join("grants.yaml");
    std::fs::write(&file, "plugins: {}\n").unwrap();
    let wink = s.run(&["--grants", file.to_str().unwrap()]);
    wink.wait_for_line("require-labels: default/web: missing label team", WAIT);
    let advice = format!(
        "To allow them, merge into {} (re-read when it changes)",
        file.display()
    );
    wink.wait_for_line(&advice, WAIT);
    wink.wait_for_line("plugin secret-reader asks for Secrets", WAIT);

    // A bad file: the grants in force stay, said once however often it is written.
    let bad = "plugins:\n  require-labels: {events: true}\n  require-labels: {events: false}\n";
    replace(&file, bad);
    wink.wait_for_line("grants file not re-read, the grants in force stay", WAIT);
    replace(&file, bad);
    std::fs::write(&file, bad).unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let lines = wink.lines();
    assert_eq!(
        count(&lines, "grants file not re-read, the grants in force stay"),
        1,
        "{lines:#?}"
    );
    assert_eq!(
        count(&lines, r#"duplicate entry with key "require-labels""#),
        1,
        "{lines:#?}"
    );

    // A good file is in force at once, for loaded plugins and refused ones.
    let good = format!("{REQUIRE_LABELS_GRANT}  secret-reader: {{secrets: true}}\n");
    replace(&file, &good);
    wink.wait_for_line("grants file re-read: the new grants are in force", WAIT);
    wait_synced(&wink, "secret-reader");
    deployments
        .create(&pp, &deployment("default", "api", 1))
        .await
        .unwrap();
    labelled(&deployments, "api").await;

    // Secrets withdrawn: the plugin that watches them goes.
    replace(&file, REQUIRE_LABELS_GRANT);
    wink.wait_for_line("plugin unloaded: the new grants refuse what it watches", WAIT);
    let lines = wink.lines();
    assert_eq!(
        count(&lines, "grants file re-read: the new grants are in force"),
        2,
        "{lines:#?}"
    );
    assert_eq!(
        count(&lines, &advice),
        1,
        "the advice was said at load only: {lines:#?}"
    );
}
