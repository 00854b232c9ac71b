//! Plugin runtime benchmark, in process: the real `PluginManager`,
//! the real directory watcher (`reload::watch`, 50 ms debounce) and an
//! informer fed by the in-process simulated API server. Measures:
//!
//! (a) reload latency of a changed 1.7 MB Rust plugin (the pod-logger
//!     component with a unique custom section appended, so nothing is cached
//!     and Cranelift compiles it): from the file's write to the first event
//!     the new version handles (the first add of its cache replay);
//! (b) the same for a component whose compiled code is in the compile cache
//!     (a new file with known bytes, through the watcher), and (b') a wink
//!     restart with an unchanged plugin: a new engine and manager on the same
//!     cache directory, from start to the first event (no watcher, no
//!     debounce; the informer is already running);
//! (c) the same for a config-only change of a running plugin;
//! (d) trap-to-recovered with 10,000 cached objects to replay: from the trap
//!     to the fresh instance's first replayed event and to the end of its
//!     replay (the default 100 ms restart backoff included);
//! (a') the same with tier-up (`--tier-up`, the default of `wink dev`): to
//!     the first event of the Winch build, and to its Cranelift build
//!     being cached for the next load (waited for before the next run, so
//!     compiles never overlap);
//! (e) for reference: Cranelift compile and cache deserialization alone.
//!
//! p50/p95 over 20 runs each. Run: `cargo bench -p wink-e2e --bench reload`.

#[path = "../tests/common/mod.rs"]
mod common;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use wink::informer::SharedInformerFactory;
use wink::informer::factory::FactoryOptions;
use wink::runtime::manager::{ManagerOptions, PluginManager};
use wink::runtime::precompiled::Precompiled;
use wink::runtime::{WinkEngine, loader, reload};
use wink_sim::{Sim, SimConfig};

const RUNS: usize = 20;
const SMALL_CACHE: usize = 100;
const BIG_CACHE: usize = 10_000;
const WAIT: Duration = Duration::from_secs(60);

/// A wait for the first log event (after registration) containing every
/// needle; records when it was emitted and its text.
struct Probe {
    needles: Vec<String>,
    hit: Option<(Instant, String)>,
}

fn probes() -> &'static Mutex<Vec<Probe>> {
    static PROBES: OnceLock<Mutex<Vec<Probe>>> = OnceLock::new();
    PROBES.get_or_init(|| Mutex::new(Vec::new()))
}

/// Collects an event's message and fields as text: `message k=v k=v `.
#[derive(Default)]
struct Text {
    message: String,
    fields: String,
}

impl Visit for Text {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }
}

/// A tracing layer that timestamps the events probes wait for, and prints
/// errors and warnings (which a clean run has none of, plugin stderr aside).
struct Capture;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Capture {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let now = Instant::now();
        let mut visited = Text::default();
        event.record(&mut visited);
        let text = format!("{}{} ", visited.message, visited.fields);
        let mut probes = probes().lock().unwrap();
        for p in probes.iter_mut() {
            if p.hit.is_none() && p.needles.iter().all(|n| text.contains(n.as_str())) {
                p.hit = Some((now, text.clone()));
            }
        }
        drop(probes);
        let verbose = std::env::var_os("RELOAD_BENCH_VERBOSE").is_some();
        if (verbose || *event.metadata().level() <= tracing::Level::WARN)
            && event.metadata().target() != "wink::plugin"
        {
            eprintln!("{}: {text}", event.metadata().level());
        }
    }
}

fn probe(needles: &[&str]) -> usize {
    let mut probes = probes().lock().unwrap();
    probes.push(Probe {
        needles: needles.iter().map(|s| s.to_string()).collect(),
        hit: None,
    });
    probes.len() - 1
}

async fn hit(p: usize) -> (Instant, String) {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(h) = probes().lock().unwrap()[p].hit.clone() {
            return h;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {:?}",
            probes().lock().unwrap()[p].needles
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// `bytes` with a custom section (id 0) appended: a different component
/// with the same behaviour.
fn with_custom_section(bytes: &[u8], payload: &str) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let b = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }
    let name = b"wink-bench";
    let mut body = Vec::new();
    leb(name.len(), &mut body);
    body.extend_from_slice(name);
    body.extend_from_slice(payload.as_bytes());
    let mut out = bytes.to_vec();
    out.push(0);
    leb(body.len(), &mut out);
    out.extend_from_slice(&body);
    out
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// "p50 X ms, p95 Y ms (min, max)" over nearest-rank percentiles.
fn summary(samples: &[Duration]) -> String {
    let mut v: Vec<f64> = samples.iter().copied().map(ms).collect();
    v.sort_by(f64::total_cmp);
    let rank = |p: f64| v[((p * v.len() as f64).ceil() as usize).max(1) - 1];
    format!(
        "| {:.1} | {:.1} | {:.1} | {:.1} |",
        rank(0.50),
        rank(0.95),
        v[0],
        v[v.len() - 1]
    )
}

fn load_ms(text: &str) -> f64 {
    text.split("load_ms=")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or(f64::NAN)
}

struct Bench {
    dir: PathBuf,
    plugins: PathBuf,
    staging: PathBuf,
}

impl Bench {
    /// Write `plugins/<file>` as an editor or a build would: the bytes to a
    /// temporary file beside the directory, then a rename into it.
    fn put(&self, file: &str, bytes: &[u8]) {
        let staged = self.staging.join(file);
        std::fs::write(&staged, bytes).unwrap();
        std::fs::rename(&staged, self.plugins.join(file)).unwrap();
    }
}

fn pod(ns: &str, name: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": "bench"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], "nodeName": "node-1"}
    })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let filter = match std::env::var_os("RELOAD_BENCH_VERBOSE") {
        Some(_) => "info,wink::runtime::reload=debug",
        None => "info",
    };
    tracing_subscriber::registry()
        .with(tracing_subscriber::EnvFilter::new(filter))
        .with(Capture)
        .init();
    let pod_logger = std::fs::read(common::plugin("pod_logger")).unwrap();
    let misbehave = std::fs::read(common::plugin("misbehave")).unwrap();
    // The largest Rust example component (k8s-openapi inside).
    let bench_counter = std::fs::read(common::plugin("bench_counter")).unwrap();
    let dir = common::root().join("target/bench-reload");
    let _ = std::fs::remove_dir_all(&dir);
    let b = Bench {
        plugins: dir.join("plugins"),
        staging: dir.join("staging"),
        dir,
    };
    std::fs::create_dir_all(&b.plugins).unwrap();
    std::fs::create_dir_all(&b.staging).unwrap();
    let nonce = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );

    let sim = Sim::start(SimConfig::default()).await.unwrap();
    for i in 0..SMALL_CACHE {
        sim.insert(pod("default", &format!("pod-{i:05}"))).unwrap();
    }
    let engine = WinkEngine::new().unwrap();
    let factory = SharedInformerFactory::new(sim.client(), FactoryOptions::default());
    let options = ManagerOptions {
        precompiled: Some(b.dir.join("cache")),
        max_restarts: u32::MAX,
        // Every crash starts a new series: the backoff stays at its first step.
        healthy_after: Duration::ZERO,
        ..Default::default()
    };
    let backoff = options.restart_backoff;
    let manager = PluginManager::new(engine.clone(), factory.clone(), options).unwrap();
    let _watcher = reload::watch(&b.plugins, manager.clone()).unwrap();
    println!(
        "cache: {SMALL_CACHE} pods for (a)-(c), {BIG_CACHE} for (d); debounce {} ms",
        reload::DEBOUNCE.as_millis()
    );

    // `default/bench-end` sorts first: every new version's first event is
    // its replay of it (pod-logger prints `OnAdd: bench-end`, bench-counter
    // `bench-done 1 1`), and nothing touches it afterwards.
    sim.insert(pod("default", "bench-end")).unwrap();

    // (a) A changed component, compiled on reload: the file is rewritten
    // with a unique custom section each time.
    let mut changed = Vec::new();
    for (plugin, bytes, config, first_event) in [
        ("pl", &pod_logger, "", "[pl] OnAdd: bench-end"),
        ("bc", &bench_counter, r#"{"decode": true}"#, "[bc] bench-done 1 "),
    ] {
        b.put(&format!("{plugin}.json"), config.as_bytes());
        let first = probe(&[first_event]);
        b.put(&format!("{plugin}.wasm"), bytes);
        hit(first).await;
        let mut latency = Vec::new();
        let mut load = Vec::new();
        for i in 0..RUNS {
            let changed_bytes = with_custom_section(bytes, &format!("{nonce}-{i}"));
            let first = probe(&[first_event]);
            let reloaded = probe(&["plugin reloaded from", &format!("plugin={plugin} ")]);
            let t0 = Instant::now();
            b.put(&format!("{plugin}.wasm"), &changed_bytes);
            let (at, _) = hit(first).await;
            let (_, text) = hit(reloaded).await;
            assert!(text.contains("cache_hit=false"), "{text}");
            latency.push(at - t0);
            load.push(Duration::from_secs_f64(load_ms(&text) / 1e3));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        changed.push((plugin, bytes.len(), latency, load));
    }
    // (a') The same with tier-up, on a second manager and directory.
    let tier = Bench {
        plugins: b.dir.join("plugins-tier"),
        staging: b.staging.clone(),
        dir: b.dir.clone(),
    };
    std::fs::create_dir_all(&tier.plugins).unwrap();
    let tier_options = ManagerOptions {
        precompiled: Some(b.dir.join("cache")),
        tier_up: true,
        ..Default::default()
    };
    let tier_manager = PluginManager::new(WinkEngine::new().unwrap(), factory.clone(), tier_options).unwrap();
    let tier_watcher = reload::watch(&tier.plugins, tier_manager.clone()).unwrap();
    let mut tiered = Vec::new();
    for (plugin, bytes, config, first_event) in [
        ("tpl", &pod_logger, "", "[tpl] OnAdd: bench-end"),
        (
            "tbc",
            &bench_counter,
            r#"{"decode": true}"#,
            "[tbc] bench-done 1 ",
        ),
    ] {
        tier.put(&format!("{plugin}.json"), config.as_bytes());
        let upgraded = probe(&[
            "Cranelift build cached for the next load",
            &format!("plugin={plugin} "),
        ]);
        tier.put(
            &format!("{plugin}.wasm"),
            &with_custom_section(bytes, &format!("{nonce}-t")),
        );
        hit(upgraded).await;
        let (mut winch, mut cranelift) = (Vec::new(), Vec::new());
        for i in 0..RUNS {
            let changed_bytes = with_custom_section(bytes, &format!("{nonce}-t{i}"));
            let first = probe(&[first_event]);
            let reloaded = probe(&[
                "plugin reloaded from",
                &format!("plugin={plugin} "),
                "compiler=Winch",
            ]);
            let upgraded = probe(&[
                "Cranelift build cached for the next load",
                &format!("plugin={plugin} "),
            ]);
            let t0 = Instant::now();
            tier.put(&format!("{plugin}.wasm"), &changed_bytes);
            let (at, _) = hit(first).await;
            hit(reloaded).await;
            let (up_at, _) = hit(upgraded).await;
            winch.push(at - t0);
            cranelift.push(up_at - t0);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tiered.push((plugin, bytes.len(), winch, cranelift));
    }
    drop(tier_watcher);
    for plugin in ["tpl", "tbc"] {
        tier_manager.unload(plugin).await;
    }

    let removed = probe(&["plugin unloaded", "plugin=bc "]);
    std::fs::remove_file(b.plugins.join("bc.wasm")).unwrap();
    hit(removed).await;

    // (b) A component whose compiled code is cached (a restart of an
    // unchanged plugin): a new plugin file with the pod-logger's bytes.
    let mut cached = Vec::new();
    let mut cached_load = Vec::new();
    for i in 0..RUNS {
        let name = format!("cached-{i}");
        let first = probe(&[&format!("[{name}] OnAdd: bench-end")]);
        let loaded = probe(&["plugin loaded from", &format!("plugin={name} ")]);
        let t0 = Instant::now();
        b.put(&format!("{name}.wasm"), &pod_logger);
        let (at, _) = hit(first).await;
        let (_, text) = hit(loaded).await;
        assert!(text.contains("cache_hit=true"), "{text}");
        cached.push(at - t0);
        cached_load.push(Duration::from_secs_f64(load_ms(&text) / 1e3));
        tokio::time::sleep(Duration::from_millis(100)).await;
        let removed = probe(&["plugin unloaded", &format!("plugin={name} ")]);
        std::fs::remove_file(b.plugins.join(format!("{name}.wasm"))).unwrap();
        hit(removed).await;
    }

    // (b') A wink restart with an unchanged plugin, without the watcher: a
    // new engine and manager on the same compile cache load a directory
    // (the informer is already running, as the API server's list is not
    // part of the plugin runtime's cost).
    let mut restart = Vec::new();
    for i in 0..RUNS {
        let name = format!("restart-{i}");
        let restart_dir = b.dir.join(&name);
        std::fs::create_dir_all(&restart_dir).unwrap();
        std::fs::write(restart_dir.join(format!("{name}.wasm")), &pod_logger).unwrap();
        let first = probe(&[&format!("[{name}] OnAdd: bench-end")]);
        let loaded = probe(&["plugin loaded from", &format!("plugin={name} ")]);
        let t0 = Instant::now();
        let options = ManagerOptions {
            precompiled: Some(b.dir.join("cache")),
            ..Default::default()
        };
        let engine = WinkEngine::new().unwrap();
        let fresh = PluginManager::new(engine, factory.clone(), options).unwrap();
        let errors = fresh.load_dir(&restart_dir).await.unwrap();
        assert!(errors.is_empty(), "{errors:?}");
        let (at, _) = hit(first).await;
        let (_, text) = hit(loaded).await;
        assert!(text.contains("cache_hit=true"), "{text}");
        restart.push(at - t0);
        fresh.unload(&name).await;
    }

    // (c) A config-only change of the running plugin.
    let mut config_only = Vec::new();
    for i in 0..RUNS {
        let first = probe(&[&format!("[pl] OnAdd:c{i} ")]);
        let t0 = Instant::now();
        std::fs::write(b.plugins.join("pl.json"), format!(r#"{{"tag": "c{i}"}}"#)).unwrap();
        let (at, _) = hit(first).await;
        config_only.push(at - t0);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let removed = probe(&["plugin unloaded", "plugin=pl"]);
    std::fs::remove_file(b.plugins.join("pl.wasm")).unwrap();
    hit(removed).await;

    // (d) Trap to recovered with 10,000 cached objects.
    for i in SMALL_CACHE..BIG_CACHE - 2 {
        sim.insert(pod("default", &format!("pod-{i:05}"))).unwrap();
    }
    sim.insert(pod("default", "bomb")).unwrap();
    b.put(
        "mb.json",
        br#"{"mode": "panic", "trigger": "bomb", "on": "update"}"#,
    );
    let synced = probe(&["plugin synced", "plugin=mb"]);
    b.put("mb.wasm", &misbehave);
    hit(synced).await;
    let pods: Api<Pod> = Api::namespaced(sim.client(), "default");
    let mut to_restarted = Vec::new();
    let mut to_first = Vec::new();
    let mut to_recovered = Vec::new();
    for i in 0..RUNS {
        let trapped = probe(&["plugin trapped", "plugin=mb"]);
        let restarted = probe(&["plugin restarted", "plugin=mb"]);
        let first = probe(&["[mb] OnAdd: "]);
        let synced = probe(&["plugin synced", "plugin=mb"]);
        let patch = serde_json::json!({"metadata": {"labels": {"round": format!("r{i}")}}});
        pods.patch("bomb", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
        let (t_trap, _) = hit(trapped).await;
        let (t_restarted, _) = hit(restarted).await;
        let (t_first, _) = hit(first).await;
        let (t_synced, _) = hit(synced).await;
        to_restarted.push(t_restarted - t_trap);
        to_first.push(t_first - t_trap);
        to_recovered.push(t_synced - t_trap);
    }
    let status = manager.status().await;
    let mb = status.iter().find(|s| s.name == "mb").unwrap();
    assert_eq!(mb.restarts as usize, RUNS);

    // (e) Compile and deserialize alone.
    let linker = loader::linker(&engine).unwrap();
    let mut compile = Vec::new();
    let mut deserialize = Vec::new();
    let cache = Precompiled::open(&b.dir.join("cache-e"), engine.engine()).unwrap();
    let path = Path::new("pod-logger.wasm");
    for i in 0..5 {
        let bytes = with_custom_section(&pod_logger, &format!("{nonce}-e{i}"));
        let t0 = Instant::now();
        let loaded = loader::load_bytes(&engine, &linker, Some(&cache), path, &bytes).unwrap();
        compile.push(t0.elapsed());
        assert!(!loaded.cache_hit);
        let t0 = Instant::now();
        let loaded = loader::load_bytes(&engine, &linker, Some(&cache), path, &bytes).unwrap();
        deserialize.push(t0.elapsed());
        assert!(loaded.cache_hit);
    }

    println!();
    println!("| case | p50 ms | p95 ms | min ms | max ms |");
    println!("|---|---|---|---|---|");
    for (plugin, size, latency, load) in &changed {
        let what = if *plugin == "pl" {
            "pod-logger"
        } else {
            "bench-counter"
        };
        println!(
            "| (a) changed {what} ({:.2} MB), write → first event (compiles) {}",
            *size as f64 / 1e6,
            summary(latency)
        );
        println!(
            "|     of which load (read + compile + init + attach) {}",
            summary(load)
        );
    }
    for (plugin, size, winch, cranelift) in &tiered {
        let what = if *plugin == "tpl" {
            "pod-logger"
        } else {
            "bench-counter"
        };
        println!(
            "| (a') changed {what} ({:.2} MB) with tier-up, write → first event (Winch) {}",
            *size as f64 / 1e6,
            summary(winch)
        );
        println!(
            "|     write → Cranelift build cached for the next load (background) {}",
            summary(cranelift)
        );
    }
    println!(
        "| (b) cached plugin (unchanged restart), write → first event {}",
        summary(&cached)
    );
    println!(
        "| (b') wink restart, unchanged plugin: new engine + manager → first event {}",
        summary(&restart)
    );
    println!(
        "|     of which load (deserialize + init + attach) {}",
        summary(&cached_load)
    );
    println!(
        "| (c) config-only change, write → first event {}",
        summary(&config_only)
    );
    println!(
        "| (d) trap → fresh instance attached ({} ms backoff incl.) {}",
        backoff.as_millis(),
        summary(&to_restarted)
    );
    println!("| (d) trap → first replayed event {}", summary(&to_first));
    println!(
        "| (d) trap → {BIG_CACHE} objects replayed (recovered) {}",
        summary(&to_recovered)
    );
    println!(
        "| (e) Cranelift compile + type-check, alone (5 runs) {}",
        summary(&compile)
    );
    println!(
        "| (e) cache hit: deserialize_file + type-check, alone (5 runs) {}",
        summary(&deserialize)
    );
    drop(_watcher);
    factory.shutdown();
    sim.shutdown().await;
}
