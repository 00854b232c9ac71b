//! End-to-end: wink comes up whatever its API server is doing. Started
//! before its server, it waits and loads its plugins within a few seconds of
//! the server answering; a plugin watching a kind the server does not serve
//! yet loads once its CRD is created, its component compiled once across
//! its retries; a mistyped plugin directory is an
//! error at start, not a new empty directory.

use crate::cache_support;
use crate::common;

use cache_support::*;
use common::{Wink, scratch};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use serde_json::json;
use std::time::Duration;
use wink_sim::{Sim, SimConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn started_before_its_api_server_it_loads_when_the_server_answers() {
    // A server that was there (its kubeconfig is written), then is not.
    let first = Sim::start(SimConfig::default()).await.unwrap();
    let port = first.port();
    let s = Setup::new("start_before_server", &first);
    s.install("pod_logger", "good", None);
    first.shutdown().await;

    let wink = s.run(&[]);
    wink.wait_for_line("plugin waits: the API server is unavailable", WAIT);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let sim = Sim::start(SimConfig {
        port,
        ..SimConfig::default()
    })
    .await
    .unwrap();
    wait_synced(&wink, "good");
    let pods: Api<Pod> = Api::namespaced(sim.client(), "default");
    let pod: Pod =
        from_json(json!({"metadata": {"name": "p1"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    wink.wait_for_line("[good] OnAdd: p1", WAIT);
    let waits = wink.lines().iter().filter(|l| l.contains("plugin waits")).count();
    assert_eq!(waits, 1, "said once per reason, not once per attempt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_watching_a_kind_not_served_yet_loads_once_its_crd_exists() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("start_crd_later", &sim);
    let watch = json!([{"api_version": "example.com/v1", "kind": "Widget"}]);
    s.install(
        "cache_probe",
        "widgets",
        Some(&json!({"watches": watch, "reads": [], "trigger": "probe", "queries": []})),
    );
    let wink = s.run(&[]);
    wink.wait_for_line(
        "plugin waits: the API server does not serve a resource it watches (yet)",
        WAIT,
    );
    create_widget_crd(&sim).await;
    wait_synced(&wink, "widgets");
    let ar =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("example.com", "v1", "Widget"), "widgets");
    let widgets: Api<DynamicObject> = Api::namespaced_with(sim.client(), "default", &ar);
    widgets
        .create(&PostParams::default(), &DynamicObject::new("probe", &ar))
        .await
        .unwrap();
    wink.wait_for_line("[widgets] probe done", WAIT);
}

/// The counter `name` on wink's `/metrics` at `addr`.
async fn counter(addr: &str, name: &str) -> f64 {
    let (status, text) = http(addr, "GET", "/metrics").await;
    assert_eq!(status, 200, "{text}");
    crate::admin::sample(&text, name, &[]).unwrap_or_else(|| panic!("no {name} in {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_waiting_for_its_crd_is_compiled_once_across_its_retries() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("start_crd_compiled_once", &sim);
    let watch = json!([{"api_version": "example.com/v1", "kind": "Widget"}]);
    s.install(
        "cache_probe",
        "widgets",
        Some(&json!({"watches": watch, "reads": [], "trigger": "probe", "queries": []})),
    );
    // No precompiled directory: a load that is not handed a kept component
    // compiles, and says so.
    let addr = format!("127.0.0.1:{}", free_port());
    let wink = s.run(&["--no-precompiled", "--admin-addr", &addr]);
    wink.wait_for_line("plugin waits", WAIT);
    wink.wait_for_line("admin server listening", WAIT);
    // Three retries: 0.8 + 1.6 + 3.2 s of backoff.
    let deadline = std::time::Instant::now() + WAIT;
    while counter(&addr, "wink_plugin_load_retries_total").await < 3.0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the plugin was not tried again 3 times"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let compiled = |wink: &Wink| {
        wink.lines()
            .iter()
            .filter(|l| l.contains("compiling the plugin's component"))
            .count()
    };
    assert_eq!(compiled(&wink), 1, "compiled once, not at each retry");
    assert_eq!(counter(&addr, "wink_plugin_compilations_total").await, 1.0);

    // The load that succeeds once the CRD exists takes the same component.
    create_widget_crd(&sim).await;
    wait_synced(&wink, "widgets");
    assert_eq!(compiled(&wink), 1, "the successful load compiled nothing");
    assert_eq!(counter(&addr, "wink_plugin_compilations_total").await, 1.0);
    assert_eq!(counter(&addr, "wink_plugins_waiting").await, 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_plugin_directory_is_an_error_at_start() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let dir = scratch("start_missing_dir");
    let kubeconfig = dir.join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).unwrap();
    let missing = dir.join("no-such-dir");
    let mut wink = Wink::run_on(&missing, &kubeconfig, &[]);
    let status = wink.wait_exit(WAIT).expect("the start ends");
    assert!(!status.success());
    wink.wait_for_line("does not exist", WAIT);
    assert!(!missing.exists(), "not created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_lists_by_default_and_paged_lists_where_the_server_refuses_them() {
    for watch_list in [true, false] {
        let sim = Sim::start(SimConfig {
            watch_list,
            ..SimConfig::default()
        })
        .await
        .unwrap();
        let s = Setup::new(&format!("start_watch_list_{watch_list}"), &sim);
        s.install("pod_logger", "good", None);
        let pods: Api<Pod> = Api::namespaced(sim.client(), "default");
        let pod: Pod = from_json(
            json!({"metadata": {"name": "p0"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}),
        );
        pods.create(&PostParams::default(), &pod).await.unwrap();
        let wink = s.run(&[]);
        wink.wait_for_line("[good] OnAdd: p0", WAIT);
        let fell_back = wink
            .lines()
            .iter()
            .any(|l| l.contains("falling back to paged LIST+WATCH"));
        let lists = sim.request_count("list", "pods");
        if watch_list {
            assert!(!fell_back);
            assert_eq!(lists, 0, "the initial list streamed");
        } else {
            assert!(fell_back, "said once it fell back");
            assert!(lists >= 1, "paged LIST instead");
        }
    }
}

/// A daemon-wide `--cosign-key` that is no key ends the start with an
/// error naming the file, rather than leaving the daemon running without
/// its WinkPlugins after one warning.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cosign_key_that_is_no_key_ends_the_start() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("start_bad_cosign_key", &sim);
    s.install("pod_logger", "good", None);
    let key = s.plugins.parent().unwrap().join("garbage.pub");
    std::fs::write(&key, "not a key").unwrap();
    let mut wink = s.run(&["--cosign-key", key.to_str().unwrap()]);
    let status = wink.wait_exit(WAIT).expect("the start ends");
    assert!(!status.success(), "{status:?}");
    assert!(
        wink.lines().iter().any(|l| l.contains("garbage.pub")),
        "{:#?}",
        wink.lines()
    );
}
