//! End-to-end: `wink dev` from the workspace, as a new user runs it. It
//! loads the examples of `plugins/` (not the test and benchmark plugins of
//! `tests/plugins/`, which are built into the same directory) with tier-up
//! on, and each example gets its initial list once: `deployment-lister`
//! prints each seeded Deployment once.

mod common;

use common::{Wink, plugins_dir, root, scratch};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(120);

#[test]
fn wink_dev_loads_the_examples_once_each_and_skips_the_test_plugins() {
    let built = plugins_dir();
    let dir = scratch("dev");
    let kubeconfig = dir.join("kubeconfig");
    let precompiled = dir.join("precompiled");
    let seed = dir.join("seed");
    std::fs::create_dir_all(&seed).unwrap();
    let deployment = |name: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  replicas: 1\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec: {{containers: [{{name: c, image: nginx}}]}}\n"
        )
    };
    std::fs::write(seed.join("web.yaml"), deployment("web")).unwrap();
    std::fs::write(seed.join("api.yaml"), deployment("api")).unwrap();
    let wink = Wink::spawn_in(
        &root(),
        &[
            "dev",
            "--churn",
            "0",
            "--kubeconfig-out",
            kubeconfig.to_str().unwrap(),
            "--precompiled",
            precompiled.to_str().unwrap(),
            "--seed",
            seed.to_str().unwrap(),
        ],
    );
    let examples = [
        "app_index",
        "deployment_lister",
        "namespace_defaults",
        "pod_logger",
        "pod_security",
        "replica_checker",
        "require_labels",
        "ttl_reaper",
    ];
    for name in examples {
        assert!(built.join(format!("{name}.wasm")).exists(), "{name} is built");
        wink.wait_for_line(&format!("plugin synced plugin={name}"), WAIT);
    }
    // Every Cranelift build cached: nothing more will be handed over.
    wink.wait_until("every Cranelift build cached", WAIT, |w| {
        w.lines()
            .iter()
            .filter(|l| l.contains("Cranelift build cached for the next load"))
            .count()
            == examples.len()
    });
    std::thread::sleep(Duration::from_millis(500));
    let lines = wink.lines();
    for skipped in [
        "bench_counter",
        "bench_query",
        "cache_probe",
        "misbehave",
        "write_probe",
    ] {
        assert!(
            built.join(format!("{skipped}.wasm")).exists(),
            "{skipped} is built"
        );
        assert!(
            !lines.iter().any(|l| l.contains(&format!("plugin={skipped}"))),
            "{skipped} is a test plugin: not loaded"
        );
    }
    let adds: Vec<String> = wink
        .plugin_lines("deployment_lister")
        .into_iter()
        .filter(|l| l.starts_with("add a deployment: "))
        .collect();
    let mut adds = adds;
    adds.sort();
    assert_eq!(
        adds,
        ["add a deployment: api", "add a deployment: web"],
        "each seeded Deployment once"
    );
}
