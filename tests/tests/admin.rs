//! End-to-end: the admin server as an operator, a kubelet and Prometheus
//! use it. `/healthz` answers while the informers run, from the start;
//! `/readyz` is 503 while the plugin directory loads or a plugin waits (for
//! a CRD) and 200 once every plugin is synced;
//! `/metrics`, read by a Prometheus text parser, counts what the test did
//! (events, deliveries, a crash, a write); `/debug/plugins` tells each
//! plugin's state and permissions.

use crate::cache_support;
use crate::common::Wink;
use crate::lang_support;

use cache_support::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use lang_support::{Lang, example};
use serde_json::json;
use std::time::{Duration, Instant};
use wink_sim::{Sim, SimConfig};

/// The value of one sample of `/metrics`, by name and labels.
pub(crate) fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    scrape
        .samples
        .iter()
        .find(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(v)))
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            _ => f64::NAN,
        })
}

async fn until_status(addr: &str, path: &str, want: u16) {
    let deadline = Instant::now() + WAIT;
    loop {
        let (status, _) = http(addr, "GET", path).await;
        if status == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{path} never answered {want} (last {status})"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_readiness_metrics_and_plugin_status() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("admin", &sim);
    s.install("pod_logger", "good", None);
    s.install(
        "misbehave",
        "bomb",
        Some(&json!({"mode": "panic", "trigger": "bomb", "on": "add"})),
    );
    s.install("require_labels", "require-labels", None);
    let widgets = json!([{"api_version": "example.com/v1", "kind": "Widget"}]);
    s.install(
        "cache_probe",
        "widgets",
        Some(&json!({"watches": widgets, "reads": [], "trigger": "probe", "queries": []})),
    );
    let grants = s.plugins.parent().unwrap().join("grants.yaml");
    std::fs::write(
        &grants,
        "plugins:\n  require-labels:\n    events: true\n    writes: [{apiVersion: apps/v1, kind: Deployment, verbs: [patch]}]\n",
    )
    .unwrap();
    let addr = format!("127.0.0.1:{}", free_port());
    let wink = s.run(&["--admin-addr", &addr, "--grants", grants.to_str().unwrap()]);
    wink.wait_for_line("admin server listening", WAIT);
    wink.wait_for_line("plugin waits", WAIT);
    until_status(&addr, "/healthz", 200).await;
    let (status, body) = http(&addr, "GET", "/readyz").await;
    assert_eq!(status, 503, "a plugin waits for its CRD: {body}");
    assert!(body.contains("wait for the API server"), "{body}");

    create_widget_crd(&sim).await;
    until_status(&addr, "/readyz", 200).await;

    let pods: Api<Pod> = Api::namespaced(sim.client(), "default");
    for name in ["p1", "bomb"] {
        let pod: Pod = from_json(
            json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}]}}),
        );
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
    Api::<Deployment>::namespaced(sim.client(), "default")
        .create(&PostParams::default(), &deployment("default", "web", 1))
        .await
        .unwrap();
    wink.wait_for_line("[good] OnAdd: bomb", WAIT);
    wink.wait_for_line("plugin trapped", WAIT);
    wink.wait_for_line("require-labels: default/web: missing label team", WAIT);

    let deadline = Instant::now() + WAIT;
    let text = loop {
        let (status, text) = http(&addr, "GET", "/metrics").await;
        assert_eq!(status, 200);
        let written = sample(
            &text,
            "wink_plugin_writes_total",
            &[("plugin", "require-labels"), ("code", "2xx")],
        );
        // The crash is counted once the supervisor handled the trap.
        let crashed = sample(&text, "wink_plugin_crashes_total", &[("plugin", "bomb")]);
        if written == Some(1.0) && crashed.is_some_and(|c| c >= 1.0) {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "the write and the crash are never counted:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let pod_events = sample(&text, "wink_informer_events_total", &[("informer", "v1/Pod")]).unwrap();
    assert_eq!(pod_events, 2.0, "two pods created:\n{text}");
    let good_calls = sample(&text, "wink_plugin_calls_total", &[("plugin", "good")]).unwrap();
    assert!(good_calls >= 2.0, "two adds (and on-synced):\n{text}");
    assert_eq!(
        sample(&text, "wink_plugin_crashes_total", &[("plugin", "good")]),
        Some(0.0),
        "{text}"
    );
    assert_eq!(sample(&text, "wink_plugins_waiting", &[]), Some(0.0), "{text}");
    assert_eq!(
        sample(&text, "wink_leader", &[]),
        Some(1.0),
        "no election: it leads"
    );
    let added = sample(
        &text,
        "wink_informer_watch_events_total",
        &[("informer", "v1/Pod"), ("type", "ADDED")],
    );
    assert_eq!(added, Some(2.0), "{text}");
    let adds = sample(
        &text,
        "wink_plugin_deliveries_total",
        &[("plugin", "good"), ("type", "add")],
    );
    assert_eq!(adds, Some(2.0), "{text}");
    let timed = sample(&text, "wink_plugin_handler_seconds_count", &[("plugin", "good")]).unwrap();
    assert!(timed >= 2.0, "every call is timed:\n{text}");
    let panics = sample(
        &text,
        "wink_plugin_crashes_by_kind_total",
        &[("plugin", "bomb"), ("kind", "panic")],
    );
    assert!(panics.is_some_and(|n| n >= 1.0), "{text}");
    assert_eq!(
        sample(&text, "wink_plugin_queue_depth", &[("plugin", "good")]),
        Some(0.0),
        "{text}"
    );
    assert!(
        sample(&text, "wink_process_resident_memory_bytes", &[]).unwrap() > 1e6,
        "{text}"
    );

    let (status, body) = http(&addr, "GET", "/debug/plugins").await;
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let plugins = v["plugins"].as_array().unwrap();
    let by_name = |n: &str| {
        plugins
            .iter()
            .find(|p| p["name"] == n)
            .unwrap_or_else(|| panic!("{n}: {body}"))
    };
    assert_eq!(by_name("good")["state"], "running");
    assert_eq!(by_name("good")["queue_depth"], 0);
    assert_eq!(
        by_name("require-labels")["permissions"]["writes"][0]["verbs"][0],
        "patch"
    );
    assert_eq!(by_name("require-labels")["permissions"]["events"], true);
    assert_eq!(by_name("good")["digest"].as_str().unwrap().len(), 64);
    assert_eq!(by_name("good")["memory_mib"], 64, "a Rust plugin's default cap");
    assert_eq!(
        by_name("require-labels")["declared"]["writes"][0]["verbs"][0],
        "patch"
    );
    assert_eq!(by_name("require-labels")["declared"]["events"], true);
    let last = by_name("bomb")["last_error"].as_str().unwrap_or_default();
    assert!(last.contains("unreachable"), "the last crash: {last}");
    // The cache view is served here too.
    let (status, _) = http(&addr, "GET", "/cache/core/v1/pods").await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_are_one_object_a_line_with_the_plugin_as_a_field() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("admin_json_logs", &sim);
    s.install("pod_logger", "good", None);
    let wink = s.run(&["--log-format", "json"]);
    wink.wait_for_line(r#""plugin":"good""#, WAIT);
    let pod: Pod =
        from_json(json!({"metadata": {"name": "p1"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}));
    Api::<Pod>::namespaced(sim.client(), "default")
        .create(&PostParams::default(), &pod)
        .await
        .unwrap();
    wink.wait_for_line("OnAdd: p1", WAIT);
    let lines = wink.lines();
    let objects: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let add = objects
        .iter()
        .find(|o| o["message"] == "OnAdd: p1")
        .expect("the plugin's line");
    assert_eq!(add["plugin"], "good");
    assert_eq!(add["level"], "INFO");
}

/// The admin server answers while the plugin directory still loads (a large
/// component compiles for seconds): `/healthz` says the process is alive, so
/// a kubelet's liveness probe does not restart a daemon that is only
/// starting, and `/readyz` says what it waits for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_probes_answer_while_the_plugin_directory_loads() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("admin_while_loading", &sim);
    let large = example(Lang::Python, "pod-logger");
    std::fs::copy(large, s.plugins.join("large.wasm")).unwrap();
    let cache = s.plugins.parent().unwrap().join("precompiled");
    let addr = format!("127.0.0.1:{}", free_port());
    let wink = s.run(&[
        "--admin-addr",
        &addr,
        "--tier-up",
        "--compile-cache",
        cache.to_str().unwrap(),
    ]);
    wink.wait_for_line("compiling the plugin's component", WAIT);
    // A kubelet gives a probe one second; five allow for a busy machine.
    let probe = |path: &'static str| {
        let addr = addr.clone();
        async move {
            tokio::time::timeout(Duration::from_secs(5), http(&addr, "GET", path))
                .await
                .unwrap_or_else(|_| panic!("{path} did not answer while the plugins load"))
        }
    };
    let loaded = |wink: &Wink| wink.lines().iter().any(|l| l.contains("plugins loaded"));
    assert!(
        !loaded(&wink),
        "the load ended before the probes were asked: it proves nothing"
    );
    let (health, _) = probe("/healthz").await;
    let (ready, body) = probe("/readyz").await;
    assert!(!loaded(&wink), "the probes answered only once the load had ended");
    assert_eq!(health, 200);
    assert_eq!(ready, 503, "{body}");
    assert!(body.contains("the plugin directory is loading"), "{body}");

    wait_synced(&wink, "large");
    wink.wait_for_line("plugins loaded", WAIT);
    until_status(&addr, "/readyz", 200).await;
}
