//! Informer benchmark against the simulated API server: one watch
//! stream of 55,000 pod events (~3.6 KiB each: 5,000 pods created with a
//! status (two writes each, as on a real server), then each
//! updated 9 times) through the real `kube_runtime::watcher`, consumed by
//!   (a) a native `kube_runtime::reflector` store with a Rust closure,
//!   (n) wink's informer (reflector, store/indexer, processor) with a native
//!       Rust handler,
//!   (b) wink with one metadata-only wasm plugin,
//!   (c) wink with ten metadata-only wasm plugins,
//!   (d) wink with one wasm plugin decoding every Pod (k8s-openapi);
//! wink's consumers read the watch through the daemon's client.
//! The events are written while the watch is held (the sim's pause), then
//! released at once, so the watch drains them as fast as the consumer takes
//! them; the writes are not timed. Reports events/s, ratios to (a), and the
//! cache bytes per object against the object's JSON size.
//! Run: `cargo bench -p wink-e2e --bench informer`.

#[path = "../tests/common/mod.rs"]
mod common;
mod support;

use support::Native;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use wink::informer::object::{CachePolicy, RawObject};
use wink::informer::reflector::Reflector;
use wink::informer::{EventHandler, SharedInformer};
use wink_sim::{Sim, SimConfig};

const PODS: usize = 5_000;
const VERSIONS: usize = 10;
const EVENTS: u64 = (PODS * VERSIONS) as u64;

fn pod_json(i: usize, v: usize) -> serde_json::Value {
    let containers: Vec<serde_json::Value> = (0..4)
        .map(|c| {
            serde_json::json!({
                "name": format!("container-{c}"), "image": format!("registry.example.com/team/app-{c}:v1.{v}"),
                "args": ["--port=8080", "--log-level=info", "--feature-gates=A=true,B=false"],
                "env": (0..10).map(|e| serde_json::json!({"name": format!("ENV_{e}"), "value": format!("value-{e}-{i}")})).collect::<Vec<_>>(),
                "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
                "ports": [{"containerPort": 8080 + c, "protocol": "TCP"}],
                "volumeMounts": [{"name": "data", "mountPath": "/var/lib/data"}, {"name": "config", "mountPath": "/etc/config"}],
            })
        })
        .collect();
    serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("pod-{i}"), "namespace": "default",
            "labels": {"app": format!("app-{}", i % 50), "tier": "backend", "bench": "yes"},
            "annotations": {"example.com/owner": "team-a", "example.com/version": format!("{v}")}},
        "spec": {"nodeName": format!("node-{}", i % 20), "containers": containers,
            "volumes": [{"name": "data", "emptyDir": {}}, {"name": "config", "configMap": {"name": "cfg"}}]},
        "status": {"phase": "Running", "podIP": format!("10.0.{}.{}", i / 250, i % 250)}
    })
}

/// A fresh sim with an empty `default` namespace and room for every event.
async fn sim() -> Sim {
    Sim::start(SimConfig {
        history: 2 * EVENTS as usize,
        bookmark_interval: Duration::from_secs(60),
        ..Default::default()
    })
    .await
    .unwrap()
}

/// Hold the watches, write every event, release them; returns the instant
/// of the release and the number of events written (a create with a status
/// is two writes, as on a real server).
fn burst(sim: &Sim) -> (Instant, u64) {
    let before = sim.current_resource_version();
    sim.faults().pause(Duration::from_secs(3600));
    for v in 0..VERSIONS {
        for i in 0..PODS {
            let p = pod_json(i, v);
            if v == 0 {
                sim.insert(p).unwrap();
            } else {
                sim.update("pods", p).unwrap();
            }
        }
    }
    let events = sim.current_resource_version() - before;
    sim.faults().pause(Duration::ZERO);
    (Instant::now(), events)
}

/// Wait until `delivered()` reaches every event; panics with the count
/// when the stream stalls for 30 s.
async fn wait_for(case: &str, sim: &Sim, events: u64, delivered: impl Fn() -> u64) {
    let (mut last, mut since) = (0, Instant::now());
    loop {
        let n = delivered();
        if n >= events {
            return;
        }
        if n != last {
            (last, since) = (n, Instant::now());
        }
        assert!(
            since.elapsed() < Duration::from_secs(30),
            "{case}: stalled at {n} of {events} events (watches of pods: {} requested, {} open; {:?})",
            sim.request_count("watch", "pods"),
            sim.open_watches("pods"),
            sim.watch_request_rvs("pods"),
        );
        tokio::time::sleep(Duration::from_micros(500)).await;
    }
}

fn api(sim: &Sim) -> (Api<DynamicObject>, ApiResource) {
    let ar = ApiResource::erase::<Pod>(&());
    (Api::namespaced_with(sim.client(), "default", &ar), ar)
}

/// (a): kube_runtime's reflector store and a closure.
async fn native_kube() -> f64 {
    let sim = sim().await;
    let (api, ar) = api(&sim);
    let writer = reflector::store::Writer::<DynamicObject>::new(ar);
    let reader = writer.as_reader();
    let seen = Arc::new(AtomicU64::new(0));
    let counter = seen.clone();
    let task = tokio::spawn(async move {
        reflector::reflector(
            writer,
            watcher::watcher(api, watcher::Config::default()).default_backoff(),
        )
        .for_each(|ev| {
            if let Ok(watcher::Event::Apply(o) | watcher::Event::Delete(o)) = ev {
                counter.fetch_add(
                    o.metadata.name.as_ref().map_or(1, |n| n.len() as u64 & 1 | 1),
                    Ordering::Relaxed,
                );
            }
            futures::future::ready(())
        })
        .await
    });
    reader.wait_until_ready().await.unwrap();
    let (start, events) = burst(&sim);
    wait_for("(a)", &sim, events, || seen.load(Ordering::Relaxed)).await;
    let rate = events as f64 / start.elapsed().as_secs_f64();
    assert_eq!(reader.len(), PODS);
    task.abort();
    rate
}

/// wink's informer delivering to `handlers`; returns events/s and cache
/// bytes per object (all, and the JSON alone as served, after stripping).
async fn wink(handlers: Vec<Arc<dyn EventHandler>>) -> (f64, (usize, usize)) {
    let sim = sim().await;
    let (_, ar) = api(&sim);
    // wink decodes into its own type, keeping each object's text, and
    // reads through the daemon's client (its default watch window).
    let client = wink::client::client(sim.kube_config(), Some(Duration::from_millis(2))).unwrap();
    let api: Api<RawObject> = Api::namespaced_with(client, "default", &ar);
    let informer = SharedInformer::new("bench");
    informer.spawn(
        watcher::watcher(api, watcher::Config::default()).default_backoff(),
        Reflector::new(ar, CachePolicy::default()),
    );
    let listeners: Vec<_> = handlers
        .into_iter()
        .enumerate()
        .map(|(i, h)| informer.add_listener(&format!("h{i}"), h, None))
        .collect();
    while !listeners.iter().all(|l| l.has_synced()) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (start, events) = burst(&sim);
    wait_for("wink", &sim, events, || {
        listeners.iter().map(|l| l.delivered()).min().unwrap_or(0)
    })
    .await;
    let rate = events as f64 / start.elapsed().as_secs_f64();
    let objects = informer.store().list(None, None);
    let json: usize = objects.iter().map(|o| o.json_len()).sum();
    let n = objects.len().max(1);
    let bytes = (informer.store().object_bytes() / n, json / n);
    informer.stop();
    (rate, bytes)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let json = {
        let mut v = pod_json(0, 0);
        v["metadata"]["uid"] = "00000000-0000-0000-0000-000000000000".into();
        v["metadata"]["resourceVersion"] = "123456".into();
        v["metadata"]["creationTimestamp"] = "2026-11-23T00:00:00Z".into();
        serde_json::to_string(&v).unwrap().len()
    };
    println!(
        "stream: {} pod events from the simulated API server ({PODS} pods created with status, then {} updates each), ~{json} B JSON/object",
        EVENTS + PODS as u64,
        VERSIONS - 1
    );
    let a1 = native_kube().await;
    let a = a1;
    let (n, cache_bytes) = wink(vec![Native::handler()]).await;
    let (b, _) = wink(support::plugins(&common::plugin("bench_counter"), 1, false)).await;
    let (c, _) = wink(support::plugins(&common::plugin("bench_counter"), 10, false)).await;
    let (d, _) = wink(support::plugins(&common::plugin("bench_counter"), 1, true)).await;
    // (a) once more: the first case also pays for the process warming up.
    let a2 = native_kube().await;
    let a = a.max(a2);
    println!("(a) ran first and last: {a1:.0} and {a2:.0} events/s; ratios use the faster");
    println!("| case | events/s | ratio to (a) |");
    println!("|---|---|---|");
    for (name, rate) in [
        ("(a) kube_runtime reflector + closure", a),
        ("(n) wink informer + native handler", n),
        ("(b) wink + 1 wasm plugin, metadata only", b),
        (
            "(c) wink + 10 wasm plugins, metadata only (each gets every event)",
            c,
        ),
        ("(d) wink + 1 wasm plugin decoding Pod", d),
    ] {
        println!("| {name} | {rate:.0} | {:.2} |", rate / a);
    }
    let (held, served) = cache_bytes;
    println!(
        "cache: {held} B/object held by wink's store (compressed JSON + metadata) vs {served} B of JSON per object as the server sent it (managedFields stripped): {:.2} x",
        held as f64 / served as f64
    );
}
