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

/// Wait for a line containing `needle` that was not there before.
fn wait_new(wink: &Wink, needle: &str, before: usize) {
    wink.wait_until(needle, WAIT, |w| {
        w.lines().iter().skip(before).any(|l| l.contains(needle))
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wink_dev_src_rebuilds_on_save_and_a_broken_edit_keeps_the_running_version() {
    let dir = scratch("dev_src");
    let krate = dir.join("crates/dev-echo");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    std::fs::write(
        krate.join("Cargo.toml"),
        format!(
            "[package]\nname = \"dev-echo\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[lib]\ncrate-type = [\"cdylib\"]\n\n[dependencies]\nwink-sdk = {{ path = \"{}\" }}\nserde_json = \"1\"\n\n[workspace]\n",
            root().join("sdk").display()
        ),
    )
    .unwrap();
    let source = std::fs::read_to_string(root().join("plugins/pod-logger/src/lib.rs")).unwrap();
    let lib = krate.join("src/lib.rs");
    std::fs::write(&lib, &source).unwrap();
    // Its build shares the repository's target directory (no dependency is
    // compiled twice).
    std::os::unix::fs::symlink(root().join("target"), krate.join("target")).unwrap();
    common::ensure_wasm_target();
    let seed = dir.join("seed");
    std::fs::create_dir_all(&seed).unwrap();
    std::fs::write(
        seed.join("pod.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata: {name: pod0, namespace: default}\nspec: {containers: [{name: c, image: nginx}]}\n",
    )
    .unwrap();
    let kubeconfig = dir.join("kubeconfig");
    let precompiled = dir.join("precompiled");
    let args = [
        "dev",
        "--src",
        "crates",
        "--churn",
        "0",
        "--seed",
        seed.to_str().unwrap(),
        "--kubeconfig-out",
        kubeconfig.to_str().unwrap(),
        "--precompiled",
        precompiled.to_str().unwrap(),
    ];
    let wink = Wink::spawn_in(&dir, &args);
    wink.wait_for_line("[dev_echo] OnAdd: pod0", WAIT);

    // A one-line change: the new version is built, loaded and replayed.
    let before = wink.lines().len();
    let saved = std::time::Instant::now();
    std::fs::write(&lib, source.replace("OnAdd:", "Added:")).unwrap();
    wait_new(&wink, "[dev_echo] Added: pod0", before);
    println!("save -> the new version handled an event: {:?}", saved.elapsed());

    // A broken edit is shown once and changes nothing.
    let before = wink.lines().len();
    let broken = format!("{}\nthis is not Rust\n", source.replace("OnAdd:", "Added:"));
    std::fs::write(&lib, &broken).unwrap();
    wait_new(
        &wink,
        "dev-echo does not build; the running version stays",
        before,
    );
    std::fs::write(&lib, &broken).unwrap();
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(&kubeconfig).unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(kube::Client::try_from(config).unwrap(), "default");
    let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "pod1"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}
    }))
    .unwrap();
    pods.create(&Default::default(), &pod).await.unwrap();
    wait_new(&wink, "[dev_echo] Added: pod1", before);
    let shown = wink
        .lines()
        .iter()
        .skip(before)
        .filter(|l| l.contains("does not build"))
        .count();
    assert_eq!(shown, 1, "the same error is shown once");
}
