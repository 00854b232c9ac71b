//! Plugins in Python and JavaScript against the Rust one, per language:
//!
//! - events/s through one informer to one plugin, and µs per event handed
//!   straight to it (one thread, no queue), for a plugin that reads only
//!   metadata (the name and a label) and for one that parses the whole Pod;
//! - cold load (compile + link) with Winch and with Cranelift;
//! - restart from the compile cache: the precompiled component read back
//!   (median of 5), and a new instance started (instantiate + `init`);
//! - memory per instance: resident memory added by each of 8 instances
//!   after init and 200 events, and the linear memory it grew to.
//!
//! The Python and JavaScript plugins (`tests/lang/*/bench`) are built from
//! source as the end-to-end test builds them (tools from PyPI and npm into
//! `target/lang-tools`); the JavaScript one also with `wink-build --plain`
//! (componentize-js's bindings and interpreter as it generates them).
//! Run: `cargo bench -p wink-e2e --bench languages`.

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/lang_support/mod.rs"]
mod lang_support;
#[path = "support/pod.rs"]
mod pod;

use kube::api::{ApiResource, DynamicObject};
use kube::core::GroupVersionKind;
use lang_support::{Lang, components};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wink::informer::object::{CachePolicy, CachedObject};
use wink::informer::reflector::Delta;
use wink::informer::{EventHandler, ObjRef, SharedInformer};
use wink::runtime::engine::Compiler;
use wink::runtime::precompiled::Precompiled;
use wink::runtime::{Limits, PluginInstance, WinkEngine, loader};

const PODS: usize = 500;
const VERSIONS: usize = 4;

fn events() -> Vec<ObjRef> {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Pod"), "pods");
    (0..VERSIONS)
        .flat_map(|rv| (0..PODS).map(move |i| (i, rv)))
        .map(|(i, rv)| {
            let obj: DynamicObject = serde_json::from_value(pod::pod_json(i, rv, PODS)).unwrap();
            CachedObject::from_dynamic(obj, &ar, CachePolicy::default())
        })
        .collect()
}

/// events/s of the stream through one informer to `handler`.
fn through_informer(objects: &[ObjRef], handler: Arc<dyn EventHandler>) -> f64 {
    let informer = SharedInformer::new("bench");
    let listener = informer.add_listener("h", handler, None);
    informer.apply(Delta::Replace(Vec::new()));
    let start = Instant::now();
    for o in objects {
        informer.apply(Delta::Apply(o.clone()));
    }
    while listener.delivered() < objects.len() as u64 {
        std::thread::sleep(Duration::from_micros(200));
    }
    let secs = start.elapsed().as_secs_f64();
    informer.stop();
    objects.len() as f64 / secs
}

/// µs per `on_update` handed straight to `handler`: the best of 3 passes
/// over the first 200 objects (warm).
fn direct(objects: &[ObjRef], handler: &dyn EventHandler) -> f64 {
    let set = &objects[..200];
    (0..3)
        .map(|_| {
            let start = Instant::now();
            for pair in set.windows(2) {
                handler.on_update(&pair[0], &pair[1]);
            }
            start.elapsed().as_secs_f64() * 1e6 / (set.len() - 1) as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn start(engine: &WinkEngine, pre: &loader::LoadedComponent, config: &str, i: usize) -> Arc<PluginInstance> {
    PluginInstance::start(
        format!("bench-{i}").into(),
        pre.pre.clone(),
        engine,
        config.to_string(),
        Limits::default(),
        None,
    )
    .unwrap()
    .0
}

/// Resident memory of this process, bytes.
fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

struct Row {
    lang: &'static str,
    meta_eps: f64,
    parse_eps: f64,
    meta_us: f64,
    parse_us: f64,
    winch_ms: f64,
    cranelift_ms: f64,
    cached_load_ms: f64,
    instance_ms: f64,
    rss_mib: f64,
    size_mib: f64,
    entry_mib: f64,
    read_ms: f64,
    hash_ms: f64,
    floor_us: [f64; 2],
}

fn measure(lang: &'static str, component: &Path, meta: &str, parse: &str, objects: &[ObjRef]) -> Row {
    let size_mib = std::fs::metadata(component).unwrap().len() as f64 / (1 << 20) as f64;
    let winch = WinkEngine::with_compiler(Compiler::Winch).unwrap();
    let winch_linker = loader::linker(&winch).unwrap();
    let t = Instant::now();
    loader::load(&winch, &winch_linker, None, component).unwrap();
    let winch_ms = t.elapsed().as_secs_f64() * 1e3;

    let engine = WinkEngine::new().unwrap();
    let linker = loader::linker(&engine).unwrap();
    let t = Instant::now();
    let loaded = loader::load(&engine, &linker, None, component).unwrap();
    let cranelift_ms = t.elapsed().as_secs_f64() * 1e3;

    // The compile cache: filled once, then read back as a restart does.
    let dir = common::root().join("target/lang-tools/bench-cache").join(lang);
    let _ = std::fs::remove_dir_all(&dir);
    let cache = Precompiled::open(&dir, engine.engine()).unwrap();
    loader::load(&engine, &linker, Some(&cache), component).unwrap();
    // The median of 5 cached loads, as a restart of wink does them.
    let mut loads: Vec<(f64, loader::LoadedComponent)> = (0..5)
        .map(|_| {
            let t = Instant::now();
            let loaded = loader::load(&engine, &linker, Some(&cache), component).unwrap();
            assert!(loaded.cache_hit, "the second load is answered from the cache");
            (t.elapsed().as_secs_f64() * 1e3, loaded)
        })
        .collect();
    loads.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (cached_load_ms, reloaded) = loads.swap_remove(2);
    // Where the cached load's time goes: reading the component and its
    // digest (which keys the cache); the rest is checking the entry
    // against its seal, mapping it and linking.
    let entry_mib = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .map(|p| std::fs::metadata(p).unwrap().len() as f64 / (1 << 20) as f64)
        .unwrap();
    let t = Instant::now();
    let bytes = std::fs::read(component).unwrap();
    let read_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let _ = loader::digest(&bytes);
    let hash_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let first = start(&engine, &reloaded, meta, 0);
    let instance_ms = t.elapsed().as_secs_f64() * 1e3;
    drop(first);

    let meta_eps = through_informer(objects, start(&engine, &loaded, meta, 1));
    let parse_eps = through_informer(objects, start(&engine, &loaded, parse, 2));
    let meta_us = direct(objects, &*start(&engine, &loaded, meta, 3));
    let floor_us = match lang {
        "Rust" => [meta_us, meta_us],
        _ => [r#"{"mode": "bare"}"#, r#"{"mode": "none"}"#]
            .map(|config| direct(objects, &*start(&engine, &loaded, config, 5))),
    };
    let parse_us = direct(objects, &*start(&engine, &loaded, parse, 4));

    // Memory: 8 instances, each after init and 200 events.
    let before = rss();
    let instances: Vec<_> = (0..8)
        .map(|i| {
            let inst = start(&engine, &loaded, parse, 10 + i);
            for o in &objects[..200] {
                inst.on_add(o, true);
            }
            inst
        })
        .collect();
    let rss_mib = (rss().saturating_sub(before)) as f64 / 8.0 / (1 << 20) as f64;
    drop(instances);
    Row {
        lang,
        meta_eps,
        parse_eps,
        meta_us,
        parse_us,
        winch_ms,
        cranelift_ms,
        cached_load_ms,
        instance_ms,
        rss_mib,
        size_mib,
        entry_mib,
        read_ms,
        hash_ms,
        floor_us,
    }
}

fn main() {
    let objects = events();
    let built: Vec<PathBuf> = components(&[
        (Lang::Python, "tests/lang/python/bench"),
        (Lang::Js, "tests/lang/js/bench"),
    ]);
    // The same JavaScript plugin built as componentize-js generates it
    // (`wink-build --plain`): what the SDK's build changes are worth.
    let plain = built[1].with_file_name("bench_plain.wasm");
    let status = lang_support::build_command(Lang::Js, &common::root().join("tests/lang/js/bench"), &plain)
        .arg("--plain")
        .status()
        .unwrap();
    assert!(status.success(), "building {}", plain.display());
    let rust = common::plugin("bench_counter");
    // The Python and JavaScript plugins take their mode from the same config.
    let (meta, parse) = (r#"{"mode": "meta"}"#, r#"{"mode": "parse"}"#);
    let rows = [
        measure(
            "Rust",
            &rust,
            r#"{"decode": false}"#,
            r#"{"decode": true}"#,
            &objects,
        ),
        measure("Python", &built[0], meta, parse, &objects),
        measure("JavaScript", &built[1], meta, parse, &objects),
        measure("JavaScript (--plain)", &plain, meta, parse, &objects),
    ];
    println!(
        "{} update events of ~4 KiB Pods ({PODS} pods x {VERSIONS} versions); Cranelift unless said; parse: Rust k8s-openapi, Python json.loads, JS JSON.parse",
        objects.len()
    );
    println!(
        "| plugin | component | events/s metadata | events/s parse | µs/event metadata (direct) | µs/event parse (direct) | cold load Winch | cold load Cranelift | restart: cached load + new instance | RSS per instance |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {:.1} MiB | {:.0} | {:.0} | {:.1} | {:.1} | {:.0} ms | {:.0} ms | {:.1} ms + {:.1} ms | {:.1} MiB |",
            r.lang,
            r.size_mib,
            r.meta_eps,
            r.parse_eps,
            r.meta_us,
            r.parse_us,
            r.winch_ms,
            r.cranelift_ms,
            r.cached_load_ms,
            r.instance_ms,
            r.rss_mib
        );
    }
    println!("µs per update event handed straight to the plugin, where the metadata case goes:");
    println!(
        "| plugin | export returns at once (no SDK) | through the SDK, reading nothing | name + one label |"
    );
    println!("|---|---|---|---|");
    for r in rows.iter().filter(|r| r.lang != "Rust") {
        println!(
            "| {} | {:.1} | {:.1} | {:.1} |",
            r.lang, r.floor_us[0], r.floor_us[1], r.meta_us
        );
    }
    println!("restart from the compile cache, where the cached load goes:");
    println!(
        "| plugin | precompiled entry | reading the component | its digest (BLAKE3) | the rest: entry checked against its seal, mapped, linked |"
    );
    println!("|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {:.1} MiB | {:.1} ms | {:.1} ms | {:.1} ms |",
            r.lang,
            r.entry_mib,
            r.read_ms,
            r.hash_ms,
            (r.cached_load_ms - r.read_ms - r.hash_ms).max(0.0)
        );
    }
}
