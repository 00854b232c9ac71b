//! End-to-end: the walking skeleton. Real plugins (built for wasm32-wasip2),
//! the real `wink run` binary, the simulated API server, the real kube client.

use crate::common;

use common::{Wink, plugin, scratch};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use std::time::Duration;
use wink_sim::{Sim, SimConfig};

const WAIT: Duration = Duration::from_secs(60);

fn pod(name: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "demo"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}
    }))
    .unwrap()
}

fn on_lines(w: &Wink, plugin: &str) -> Vec<String> {
    w.plugin_lines(plugin)
        .into_iter()
        .filter(|l| l.starts_with("On"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_pod_loggers_share_one_watch_and_see_events_in_order() {
    let dir = scratch("two_pod_loggers");
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(plugin("pod_logger"), plugins.join("pod-logger.wasm")).unwrap();
    std::fs::copy(plugin("pod_logger"), plugins.join("pod-logger-second.wasm")).unwrap();
    std::fs::write(plugins.join("pod-logger-second.json"), r#"{"tag": "second"}"#).unwrap();

    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let kubeconfig = dir.join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).unwrap();
    let pods: Api<Pod> = Api::namespaced(sim.client(), "default");
    pods.create(&PostParams::default(), &pod("pod0")).await.unwrap();

    let wink = Wink::spawn(&[
        "run",
        "--plugins",
        plugins.to_str().unwrap(),
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
    ]);
    wink.wait_for_line("[pod-logger] OnAdd: pod0", WAIT);
    wink.wait_for_line("[pod-logger-second] OnAdd:second pod0", WAIT);
    wink.wait_for_line("plugin synced plugin=pod-logger-second", WAIT);

    pods.create(&PostParams::default(), &pod("pod1")).await.unwrap();
    let patch = serde_json::json!({"metadata": {"labels": {"stage": "two"}}});
    pods.patch("pod1", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    pods.delete("pod1", &DeleteParams::default()).await.unwrap();

    wink.wait_for_line("[pod-logger] OnDelete: pod1", WAIT);
    wink.wait_for_line("[pod-logger-second] OnDelete:second pod1", WAIT);
    assert_eq!(
        on_lines(&wink, "pod-logger"),
        ["OnAdd: pod0", "OnAdd: pod1", "OnUpdate: pod1", "OnDelete: pod1"]
    );
    assert_eq!(
        on_lines(&wink, "pod-logger-second"),
        [
            "OnAdd:second pod0",
            "OnAdd:second pod1",
            "OnUpdate:second pod1",
            "OnDelete:second pod1"
        ]
    );
    // One informer serves both plugins: one watch of pods, which streams
    // the initial list too (no LIST).
    assert_eq!(sim.request_count("watch", "pods"), 1, "watches of pods");
    assert_eq!(sim.request_count("list", "pods"), 0, "lists of pods");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_components_get_one_clear_error_and_the_good_plugin_runs() {
    let dir = scratch("bad_components");
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(plugin("pod_logger"), plugins.join("good.wasm")).unwrap();
    std::fs::write(plugins.join("garbage.wasm"), b"this is not wasm").unwrap();
    // A core module (wasm magic, version 1), not a component.
    std::fs::write(plugins.join("core-module.wasm"), b"\0asm\x01\0\0\0").unwrap();
    // An empty component: valid, but exports no `handler`.
    std::fs::write(plugins.join("other-world.wasm"), b"\0asm\x0d\0\x01\0").unwrap();
    // A good component whose init refuses its config.
    std::fs::copy(plugin("pod_logger"), plugins.join("bad-config.wasm")).unwrap();
    std::fs::write(plugins.join("bad-config.json"), "{ not json").unwrap();

    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let kubeconfig = dir.join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).unwrap();
    let wink = Wink::spawn(&[
        "run",
        "--plugins",
        plugins.to_str().unwrap(),
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
    ]);
    wink.wait_for_line("plugins loaded", WAIT);
    let errors: Vec<String> = wink
        .lines()
        .into_iter()
        .filter(|l| l.contains("plugin not loaded"))
        .collect();
    assert_eq!(errors.len(), 4, "one error per bad file: {errors:#?}");
    let has = |file: &str, why: &str| errors.iter().any(|l| l.contains(file) && l.contains(why));
    assert!(
        has("garbage.wasm", "not a valid WebAssembly component"),
        "{errors:#?}"
    );
    assert!(
        has("core-module.wasm", "core wasm module, not a component"),
        "{errors:#?}"
    );
    assert!(
        has(
            "other-world.wasm",
            "not a wink:plugin@0.4.0 (or @0.3.0) component"
        ),
        "{errors:#?}"
    );
    assert!(has("bad-config", "init refused: bad config"), "{errors:#?}");

    let pods: Api<Pod> = Api::namespaced(sim.client(), "default");
    pods.create(&PostParams::default(), &pod("after")).await.unwrap();
    wink.wait_for_line("[good] OnAdd: after", WAIT);
}
