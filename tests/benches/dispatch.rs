//! Host dispatch benchmark: one informer, 50,000 update events of
//! ~4 KiB pods (5,000 pods x 10 versions), delivered to
//!   (a) a native Rust handler (what a kube_runtime reflector + closure costs
//!       after the watch: store update + callback),
//!   (b) one metadata-only wasm plugin,
//!   (c) ten metadata-only wasm plugins,
//!   (d) one wasm plugin that decodes every Pod with k8s-openapi.
//! Reports events/s, ratios against (a), and cache bytes per object against
//! the object's JSON size, with the cost of caching an object plain and
//! compressed (the default). Then the host overhead per (event x plugin) alone:
//! the same updates handed straight to a handler on one thread, no queue,
//! native and wasm, in ns per delivery, with the objects in the CPU caches
//! (as when a listener delivers an object the informer just applied) and not;
//! and the same on Winch's build and on the metered engine (fuel counted).
//! Run: `cargo bench -p wink-e2e --bench dispatch`.

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/pod.rs"]
mod pod;
mod support;

use support::Native;
use wink::runtime::WinkEngine;
use wink::runtime::engine::Compiler;

use kube::api::{ApiResource, DynamicObject};
use kube::core::GroupVersionKind;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wink::informer::object::{CachePolicy, CachedObject};
use wink::informer::reflector::Delta;
use wink::informer::{EventHandler, ObjRef, SharedInformer};

const PODS: usize = 5_000;
/// How many times (a)-(c) run, interleaved (each figure is their median).
const ROUNDS: usize = 5;
const VERSIONS: usize = 10;

/// The stream cached under `policy`; the JSON size per object, and the time
/// to cache one object (serialize, locate metadata, compress if asked), µs.
fn events(policy: CachePolicy) -> (Vec<ObjRef>, usize, f64) {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Pod"), "pods");
    let mut out = Vec::with_capacity(PODS * VERSIONS);
    let mut json_bytes = 0;
    let mut caching = Duration::ZERO;
    for rv in 0..VERSIONS {
        for i in 0..PODS {
            let obj: DynamicObject = serde_json::from_value(pod::pod_json(i, rv, PODS)).unwrap();
            let start = Instant::now();
            let c = CachedObject::from_dynamic(obj, &ar, policy);
            caching += start.elapsed();
            if rv == 0 {
                json_bytes += c.json_len();
            }
            out.push(c);
        }
    }
    let per_object = caching.as_secs_f64() * 1e6 / out.len() as f64;
    (out, json_bytes / PODS, per_object)
}

/// Bytes held for a Pod shaped like a real cluster's (a coredns replica:
/// volumes, probes, tolerations, affinity, status conditions), which repeats
/// itself less than the stream's pods: (JSON bytes, held plain, held compressed).
fn real_world_pod() -> (usize, usize, usize) {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Pod"), "pods");
    let text = include_str!("support/coredns-pod.json");
    let cache = |compress| {
        let obj: DynamicObject = serde_json::from_str(text).unwrap();
        let policy = CachePolicy {
            compress,
            ..CachePolicy::default()
        };
        CachedObject::from_dynamic(obj, &ar, policy)
    };
    let (plain, packed) = (cache(false), cache(true));
    (plain.json_len(), plain.heap_bytes(), packed.heap_bytes())
}

/// Mean bytes held per object over the last version of each pod.
fn held(objects: &[ObjRef]) -> usize {
    let last = &objects[objects.len() - PODS..];
    last.iter().map(|o| o.heap_bytes()).sum::<usize>() / PODS
}

/// Runs the stream through one informer to `handlers`; returns events/s.
fn run(objects: &[ObjRef], handlers: Vec<Arc<dyn EventHandler>>) -> (f64, usize) {
    let informer = SharedInformer::new("bench");
    let listeners: Vec<_> = handlers
        .into_iter()
        .enumerate()
        .map(|(i, h)| informer.add_listener(&format!("h{i}"), h, None))
        .collect();
    informer.apply(Delta::Replace(Vec::new()));
    let start = Instant::now();
    for o in objects {
        informer.apply(Delta::Apply(o.clone()));
    }
    let want = objects.len() as u64;
    while listeners.iter().any(|l| l.delivered() < want) {
        std::thread::sleep(Duration::from_micros(200));
    }
    let secs = start.elapsed().as_secs_f64();
    let bytes = informer.store().object_bytes() / informer.store().len().max(1);
    informer.stop();
    (objects.len() as f64 / secs, bytes)
}

/// How many objects the warm direct measurement cycles through: ~600 KB of
/// objects, which stay in the CPU caches as an object just applied by the
/// informer does when its listeners deliver it.
const WARM_OBJECTS: usize = 200;

/// ns per delivery of `on_update` straight to `handler` (no queue, no thread):
/// the best of 3 passes of 50,000 deliveries. Cold: over the whole stream
/// (125 MB of objects, each delivery touches memory no cache holds). Warm:
/// over its first [`WARM_OBJECTS`] objects again and again.
fn direct(objects: &[ObjRef], handler: &dyn EventHandler, warm: bool) -> f64 {
    let set = if warm { &objects[..WARM_OBJECTS] } else { objects };
    let rounds = (objects.len() - 1) / (set.len() - 1);
    (0..3)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..rounds {
                for pair in set.windows(2) {
                    handler.on_update(&pair[0], &pair[1]);
                }
            }
            start.elapsed().as_nanos() as f64 / (rounds * (set.len() - 1)) as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let plain_policy = CachePolicy {
        compress: false,
        ..CachePolicy::default()
    };
    let (plain, _, plain_us) = events(plain_policy);
    let plain_bytes = held(&plain);
    drop(plain);
    let (objects, json_size, packed_us) = events(CachePolicy::default());
    println!(
        "stream: {} events over {PODS} pods, JSON without managedFields: {json_size} B/object",
        objects.len()
    );
    println!(
        "caching one object: {plain_us:.2} µs plain, {packed_us:.2} µs compressed ({:.2} x); bytes held: {plain_bytes} plain, {} compressed",
        packed_us / plain_us,
        held(&objects)
    );
    let (json, plain, packed) = real_world_pod();
    println!(
        "a real-world Pod (coredns): {json} B JSON, held {plain} B plain ({:.2} x), {packed} B compressed ({:.2} x)",
        plain as f64 / json as f64,
        packed as f64 / json as f64
    );
    // (a), (b) and (c) ROUNDS times over, interleaved, each figure the median
    // of its runs: one run here varies by ±20 % (the pool's threads and the
    // applying thread share two cores).
    let (mut natives, mut ones, mut tens, mut cache_bytes) = (vec![], vec![], vec![], 0);
    for _ in 0..ROUNDS {
        let (native, bytes) = run(&objects, vec![Native::handler()]);
        cache_bytes = bytes;
        natives.push(native);
        let one = support::plugins(&common::plugin("bench_counter"), 1, false);
        ones.push(run(&objects, one).0);
        let ten = support::plugins(&common::plugin("bench_counter"), 10, false);
        tens.push(run(&objects, ten).0);
    }
    let median = |mut xs: Vec<f64>| {
        xs.sort_by(f64::total_cmp);
        xs[xs.len() / 2]
    };
    let per_round: Vec<String> = ones
        .iter()
        .zip(&natives)
        .map(|(b, a)| format!("{:.2}", b / a))
        .collect();
    let (native, one, ten) = (median(natives), median(ones), median(tens));
    let (decode, _) = run(
        &objects,
        support::plugins(&common::plugin("bench_counter"), 1, true),
    );
    println!("| case | events/s | deliveries/s | deliveries/s ratio to (a) | wall time per delivery |");
    println!("|---|---|---|---|---|");
    let row = |name: &str, events: f64, plugins: f64| {
        let deliveries = events * plugins;
        println!(
            "| {name} | {events:.0} | {deliveries:.0} | {:.2} | {:.2} µs |",
            deliveries / native,
            1e6 / deliveries
        )
    };
    row("(a) native Rust handler", native, 1.0);
    row("(b) 1 wasm plugin, metadata only", one, 1.0);
    row("(c) 10 wasm plugins, metadata only", ten, 10.0);
    row("(d) 1 wasm plugin decoding Pod", decode, 1.0);
    println!(
        "(a)-(c): medians of {ROUNDS} interleaved runs; (b) / (a) in each run: {}",
        per_round.join(", ")
    );
    println!(
        "(c): every event goes to each of the 10 plugins, each with its own listener, on the delivery pool (2 cores)."
    );
    println!(
        "cache: {cache_bytes} B/object held vs {json_size} B JSON without managedFields ({:.2} x)",
        cache_bytes as f64 / json_size as f64
    );
    let meta = support::plugins(&common::plugin("bench_counter"), 1, false);
    let bare = support::plugins_with_config(&common::plugin("bench_counter"), 1, r#"{"read_name": false}"#);
    println!("direct delivery of an update, one thread, ns per delivery:");
    println!(
        "| objects | native handler reading the name | wasm plugin reading nothing | wasm plugin reading the name | host overhead per (event x plugin), bare / with the name |"
    );
    println!("|---|---|---|---|---|");
    for (warm, what) in [(true, "warm (200, in cache)"), (false, "cold (50,000, 125 MB)")] {
        let native = direct(&objects, &*Native::handler(), warm);
        // Interleaved, best of each: the two costs are measured under the
        // same conditions.
        let (mut wasm, mut bare_ns) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..3 {
            bare_ns = bare_ns.min(direct(&objects, &*bare[0], warm));
            wasm = wasm.min(direct(&objects, &*meta[0], warm));
        }
        println!(
            "| {what} | {native:.0} | {bare_ns:.0} | {wasm:.0} | {:.0} / {:.0} |",
            bare_ns - native,
            wasm - native
        );
    }
    // What tier-up's Winch build, and the metered engine of plugins under a
    // fuel cap, cost per event against the shared engine's Cranelift build.
    let component = common::plugin("bench_counter");
    println!(
        "compiled by Winch (tier-up's first build) and by the metered engine (fuel caps) against Cranelift, warm, ns per delivery:"
    );
    println!("| plugin | Cranelift | Winch | Winch / Cranelift | metered | metered / Cranelift |");
    println!("|---|---|---|---|---|---|");
    for (what, config) in [
        ("reading the name", r#"{"decode": false}"#),
        ("decoding the Pod (k8s-openapi)", r#"{"decode": true}"#),
    ] {
        let cranelift = support::plugins_with_config(&component, 1, config);
        let winch_engine = WinkEngine::with_compiler(Compiler::Winch).unwrap();
        let winch = support::plugins_on(winch_engine, &component, 1, config);
        let metered = support::plugins_on(WinkEngine::metered().unwrap(), &component, 1, config);
        let (mut c, mut w, mut m) = (f64::INFINITY, f64::INFINITY, f64::INFINITY);
        for _ in 0..3 {
            c = c.min(direct(&objects, &*cranelift[0], true));
            w = w.min(direct(&objects, &*winch[0], true));
            m = m.min(direct(&objects, &*metered[0], true));
        }
        println!(
            "| {what} | {c:.0} | {w:.0} | {:.2} | {m:.0} | {:.2} |",
            w / c,
            m / c
        );
    }
}
