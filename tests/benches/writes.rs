//! Write benchmark: one plugin patching a ConfigMap on the simulated API
//! server through the `write` capability, against a native `kube::Api`
//! merge-patch loop in the same run (goal: wink >= 0.9x the native rate),
//! and the host's added latency per write call (goal: <= 20 us over the
//! HTTP round trip). Run: `cargo bench -p wink-e2e --bench writes`.
//!
//! Both sides are sequential (one write at a time, as a plugin's delivery
//! thread makes them) over a client without kube's retry layer; rate limits
//! are lifted for the plugin so the server and the path are what is timed.
//! Environment: `WRITES_BENCH_N` (default 2000 patches per run).

#[path = "../tests/common/mod.rs"]
mod common;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wink::informer::SharedInformerFactory;
use wink::informer::object::{CachePolicy, CachedObject};
use wink::runtime::capabilities::WriteAccess;
use wink::runtime::capabilities::cluster::{ClusterAccess, TokenBucket};
use wink::runtime::grants::{Mode, Permissions, Rate, Verb, WriteGrant};
use wink::runtime::instance::PluginInstance;
use wink::runtime::{Limits, WinkEngine, loader};
use wink_sim::{Sim, SimConfig};

const ROUNDS: usize = 3;

fn n() -> usize {
    std::env::var("WRITES_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

fn trigger() -> wink::informer::ObjRef {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "ConfigMap"), "configmaps");
    let obj: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "trigger", "namespace": "default", "uid": "u", "resourceVersion": "1"}
    }))
    .unwrap();
    CachedObject::from_dynamic(obj, &ar, CachePolicy::default())
}

fn main() {
    let n = n();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sim = rt.block_on(Sim::start(SimConfig::default())).unwrap();
    let mut config = sim.kube_config();
    config.default_retry = false;
    let client = {
        let _guard = rt.enter();
        kube::Client::try_from(config).unwrap()
    };
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let target: ConfigMap =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "target", "namespace": "default"}}))
            .unwrap();
    rt.block_on(api.create(&PostParams::default(), &target)).unwrap();

    let factory = {
        let _guard = rt.enter();
        SharedInformerFactory::new(client.clone(), Default::default())
    };
    let cluster = Arc::new(ClusterAccess::new(
        factory,
        Some(client),
        rt.handle().clone(),
        TokenBucket::new(1e9, u32::MAX),
    ));
    let permissions = Permissions {
        mode: Mode::Enforce,
        events: false,
        writes: vec![WriteGrant {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            verbs: vec![Verb::Patch],
            namespaces: None,
        }],
        rate: Some(Rate {
            qps: 1e9,
            burst: u32::MAX,
        }),
    };
    let engine = WinkEngine::new().unwrap();
    let linker = loader::linker(&engine).unwrap();
    let loaded = loader::load(&engine, &linker, None, &common::plugin("write_probe")).unwrap();
    let ops = serde_json::json!({"ops": [{"op": "patch", "api_version": "v1", "kind": "ConfigMap",
        "key": "default/target", "body": {"data": {"k": "v"}}, "repeat": n, "quiet": true}]});
    let limits = Limits {
        call_deadline: Duration::from_secs(600),
        ..Limits::default()
    };
    let (instance, _) = PluginInstance::start(
        "probe".into(),
        loaded.pre.clone(),
        &engine,
        ops.to_string(),
        limits,
        None,
    )
    .unwrap();
    instance
        .write_scope()
        .grant(WriteAccess::new("probe".into(), cluster, permissions));
    let trigger = trigger();
    use wink::informer::EventHandler;

    let patch = Patch::Merge(serde_json::json!({"data": {"k": "v"}}));
    let pp = PatchParams::default();
    let mut native = Vec::new();
    let mut plugin = Vec::new();
    // Warm both paths (connections, discovery).
    rt.block_on(api.patch("target", &pp, &patch)).unwrap();
    instance.on_add(&trigger, false);
    for _ in 0..ROUNDS {
        let started = Instant::now();
        rt.block_on(async {
            for _ in 0..n {
                api.patch("target", &pp, &patch).await.unwrap();
            }
        });
        native.push(started.elapsed());
        let started = Instant::now();
        instance.on_add(&trigger, false);
        plugin.push(started.elapsed());
    }
    assert_eq!(instance.traps(), 0, "the plugin trapped");
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (native, plugin) = (median(&mut native), median(&mut plugin));
    let per = |d: Duration| d.as_secs_f64() * 1e6 / n as f64;
    let rate = |d: Duration| n as f64 / d.as_secs_f64();
    println!(
        "{n} sequential merge patches of one ConfigMap on the simulated server; median of {ROUNDS} rounds"
    );
    println!("| path | writes/s | us per write |");
    println!("|---|---|---|");
    println!(
        "| native kube::Api patch loop | {:.0} | {:.1} |",
        rate(native),
        per(native)
    );
    println!(
        "| plugin through the write capability | {:.0} | {:.1} |",
        rate(plugin),
        per(plugin)
    );
    let ratio = rate(plugin) / rate(native);
    let added = per(plugin) - per(native);
    let goal = |ok: bool| if ok { "met" } else { "NOT met" };
    println!(
        "ratio plugin/native {ratio:.2} (>= 0.9: {}); host added latency {added:.1} us per write (<= 20: {})",
        goal(ratio >= 0.9),
        goal(added <= 20.0)
    );
    rt.block_on(sim.shutdown());
}
