//! Paced-stream benchmark: what one steady stream of events costs each
//! consumer, from the OS. A simulated API server (its own process) holds
//! 10,000 ConfigMaps of 1 KiB random payload and then updates them at a
//! steady rate (1,000 and 5,000 events/s for a fixed time, not a burst).
//! Each consumer runs in a process of its own, and is measured from
//! `/proc/PID`: CPU time per event (the scheduler's run time of every
//! thread, user and system) and context switches per event (every
//! thread's), over the paced window only:
//!   (a) kube-runtime's reflector + N closures on one task (the native peer),
//!   (b) wink's informer + N native handlers,
//!   (c) wink's informer + N metadata-only wasm plugins (`bench-counter`),
//!   (a') (a) on wink's watch client (`wink::client`), to show what reading
//!   watches in windows alone gives kube-runtime (not run by default),
//! for N = 1 and 10; and (f), the floor under all three: kube's HTTP client
//! reading the same watch stream and discarding the bytes (no decoding, no
//! cache, no handler), so what any consumer built on that client pays.
//! Then latency: the server's write to a handler's call, with and without
//! wink's watch window (`paced/latency.rs`). Then idle: each consumer
//! (N = 1) synced and left without events, its CPU and context switches a
//! second (what its timers and tickers cost). Then memory (`paced/memory.rs`):
//! resident growth per cached object for 10,000 and 100,000 objects (1 KiB
//! ConfigMaps, realistic Pods), against the objects' JSON size, the growth
//! per object added between the two sizes, and the peak during a relist of
//! everything (a 410 after compaction) against the steady state.
//! `PACED_SERVER=real` plays the cpu, latency and idle parts on a real
//! kube-apiserver and etcd (`paced/real.rs`, `KUBEBUILDER_ASSETS`): every
//! update written through its API, the consumers on its watch stream.
//! Run: `cargo bench -p wink-e2e --bench paced`.
//!
//! Environment: `PACED_SECONDS` (8), `PACED_RATES` (`1000,5000`),
//! `PACED_MANAGED_FIELDS` (`1`: objects carry them, as a real server's do),
//! `PACED_VARIANTS` (`f,a,b,c`), `PACED_REPEATS` (3),
//! `PACED_MEMORY` (`10000,100000`), `PACED_PARTS` (`cpu,latency,idle,memory`),
//! `PACED_WATCH_WINDOW_US` (2000, the daemon's `--watch-window-us`: how
//! late wink's client may read a watch under a steady stream; 0 for every
//! event as it comes).

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/envtest/mod.rs"]
mod envtest;
#[path = "../tests/kubectl_support/mod.rs"]
#[allow(dead_code)]
mod kubectl_support;
#[path = "paced/latency.rs"]
mod latency;
#[path = "paced/memory.rs"]
mod memory;
#[path = "paced/procs.rs"]
mod procs;
#[path = "paced/real.rs"]
mod real;
mod support;

use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::core::GroupVersionKind;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use procs::{Proc, context_switches, cpu_ns};
use rand::Rng;
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use wink::informer::factory::{FactoryOptions, WatchSpec};
use wink::informer::{EventHandler, SharedInformerFactory};
use wink_sim::{Sim, SimConfig};

fn env_list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn payload(rng: &mut impl Rng, bytes: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    (0..bytes)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

fn config_map(i: usize, rng: &mut impl Rng) -> Value {
    let mut o = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("cm-{i:06}"), "namespace": "default", "labels": {"app": "bench", "shard": format!("s{}", i % 16)}},
        "data": {"payload": payload(rng, 1024)}});
    if managed_fields() {
        o["metadata"]["managedFields"] = writers_managed_fields();
    }
    o
}

/// Whether objects carry `managedFields` (`PACED_MANAGED_FIELDS`, on
/// unless `0`): kube-apiserver records the writer of every create and update
/// there, so every object a real server sends has them; the simulated
/// server records them only for a write that names a `fieldManager`.
fn managed_fields() -> bool {
    std::env::var("PACED_MANAGED_FIELDS").map_or(true, |v| v != "0")
}

/// What kube-apiserver records for the paced writer's updates.
fn writers_managed_fields() -> Value {
    json!([{"manager": "paced-writer", "operation": "Update", "apiVersion": "v1",
        "time": "2026-11-24T06:00:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {".": {}, "f:payload": {}},
            "f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:shard": {}, "f:version": {}}}}}])
}

fn realistic_pod(i: usize) -> Value {
    let containers: Vec<Value> = (0..2)
        .map(|c| json!({
            "name": format!("c{c}"), "image": format!("registry.example.com/team/app-{c}:v1.{}", i % 7),
            "args": ["--port=8080", "--log-level=info"],
            "env": (0..6).map(|e| json!({"name": format!("ENV_{e}"), "value": format!("value-{e}-{i}")})).collect::<Vec<_>>(),
            "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
            "ports": [{"containerPort": 8080 + c, "protocol": "TCP"}],
            "volumeMounts": [{"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}],
            "terminationMessagePath": "/dev/termination-log", "imagePullPolicy": "IfNotPresent"}))
        .collect();
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("web-7d9f8b6c5d-{i:06}"), "namespace": "default",
            "labels": {"app": "web", "pod-template-hash": "7d9f8b6c5d"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9f8b6c5d", "uid": "3c0b8f5e-1f7a-4c7e-9a5e-2f6f1b7c9d10", "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"nodeName": format!("node-{}", i % 50), "containers": containers, "serviceAccountName": "default",
            "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
            "volumes": [{"name": "kube-api-access", "projected": {"sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}}]}}]},
        "status": {"phase": "Running", "podIP": format!("10.{}.{}.{}", i / 65536, (i / 256) % 256, i % 256), "hostIP": "172.18.0.2",
            "conditions": [{"type": "Ready", "status": "True"}, {"type": "ContainersReady", "status": "True"}],
            "containerStatuses": [{"name": "c0", "ready": true, "restartCount": 0, "image": "app-0", "imageID": "sha256:abc", "containerID": "containerd://0123456789abcdef", "started": true}]}})
}

// ---- roles -------------------------------------------------------------

/// The watch window of wink's consumers: `PACED_WATCH_WINDOW_US`, or the
/// daemon's default (`--watch-window-us`); 0 reads every event as it comes.
fn watch_window() -> Option<Duration> {
    let us: u64 = std::env::var("PACED_WATCH_WINDOW_US")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    (us > 0).then(|| Duration::from_micros(us))
}

/// The server's role: `real` with `PACED_SERVER=real` (a real
/// kube-apiserver's stream), else `sim`.
fn server_role() -> &'static str {
    if std::env::var("PACED_SERVER").is_ok_and(|v| v == "real") {
        "real"
    } else {
        "sim"
    }
}

/// A child's runtime: two workers, as the daemon's on this machine.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The simulated server's process: loads objects, then obeys stdin.
fn role_sim(kind: &str, n: usize) {
    let rt = runtime();
    let _guard = rt.enter();
    let sim = rt
        .block_on(Sim::start(SimConfig {
            history: 200_000,
            ..SimConfig::default()
        }))
        .unwrap();
    let mut rng = rand::rng();
    let resource = if kind == "pods" { "pods" } else { "configmaps" };
    let mut json_bytes = 0usize;
    for i in 0..n {
        let o = if kind == "pods" {
            realistic_pod(i)
        } else {
            config_map(i, &mut rng)
        };
        json_bytes += sim.insert(o).unwrap().to_string().len();
    }
    let dir = common::scratch(&format!("paced-sim-{}", std::process::id()));
    let kubeconfig = dir.join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).unwrap();
    println!("ready {} {}", kubeconfig.display(), json_bytes / n.max(1));
    std::io::stdout().flush().unwrap();
    let mut next = 0usize;
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["pace", rate, secs, stamp @ ..] => {
                let rate: f64 = rate.parse().unwrap();
                let total = (rate * secs.parse::<f64>().unwrap()) as usize;
                let started = Instant::now();
                for k in 0..total {
                    let due = started + Duration::from_secs_f64(k as f64 / rate);
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                    let mut o = config_map(next % n, &mut rng);
                    o["metadata"]["labels"]["version"] = json!(format!("v{k}"));
                    if stamp == ["stamp"] {
                        o["metadata"]["labels"]["sent"] = json!(latency::stamp());
                    }
                    sim.update(resource, o).unwrap();
                    next += 1;
                }
                println!("paced {total} {:.3}", started.elapsed().as_secs_f64());
            }
            ["relist"] => {
                // Held requests, closed watches, one more write, then the
                // history dropped: every resume gets 410 and relists.
                sim.faults().pause(Duration::from_secs(30));
                sim.faults().close_watches();
                let mut o = config_map(0, &mut rng);
                if kind == "pods" {
                    o = realistic_pod(0);
                }
                o["metadata"]["labels"]["relist"] = json!("yes");
                sim.update(resource, o).unwrap();
                sim.faults().compact();
                let lists = sim.request_count("list", resource) + sim.request_count("watch", resource);
                sim.faults().pause(Duration::ZERO);
                let deadline = Instant::now() + Duration::from_secs(60);
                while sim.request_count("list", resource) + sim.request_count("watch", resource) < lists + 2
                    && Instant::now() < deadline
                {
                    std::thread::sleep(Duration::from_millis(10));
                }
                println!("relisted");
            }
            _ => println!("unknown {line}"),
        }
        std::io::stdout().flush().unwrap();
    }
}

/// One of (a)'s handlers.
type Closure = Box<dyn Fn(&DynamicObject) + Send>;

/// A consumer's process: syncs, says so, then counts until told to stop.
fn role_consume(variant: &str, n: usize, kind: &str, kubeconfig: &str) {
    let rt = runtime();
    let _guard = rt.enter();
    let config = rt.block_on(async {
        let kc = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
        kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .unwrap()
    });
    // wink's consumers read watches as the daemon does; (a') is
    // kube-runtime on that same client.
    let client = match variant {
        "b" | "c" | "l" | "a'" => wink::client::client(config, watch_window()).unwrap(),
        _ => kube::Client::try_from(config).unwrap(),
    };
    let (api_version, kind_name, plural) = match kind {
        "pods" => ("v1", "Pod", "pods"),
        _ => ("v1", "ConfigMap", "configmaps"),
    };
    let count = Arc::new(AtomicU64::new(0));
    let delays = Arc::new(latency::Delays::default());
    println!("started");
    std::io::stdout().flush().unwrap();
    let mut keep: Vec<Box<dyn std::any::Any>> = Vec::new();
    match variant {
        "f" => {
            let client = client.clone();
            let path = if plural == "pods" {
                "/api/v1/pods"
            } else {
                "/api/v1/configmaps"
            };
            rt.spawn(async move {
                let list: Value = client
                    .request(
                        http::Request::get(format!("{path}?limit=1"))
                            .body(Vec::new())
                            .unwrap(),
                    )
                    .await
                    .unwrap();
                let rv = list["metadata"]["resourceVersion"].as_str().unwrap().to_string();
                let watch = format!("{path}?watch=true&allowWatchBookmarks=true&resourceVersion={rv}");
                let body = client
                    .request_stream(http::Request::get(watch).body(Vec::new()).unwrap())
                    .await
                    .unwrap();
                let mut body = std::pin::pin!(body);
                let mut buf = vec![0u8; 64 * 1024];
                while let Ok(n @ 1..) = futures::AsyncReadExt::read(&mut body, &mut buf).await {
                    std::hint::black_box(&buf[..n]);
                }
            });
            std::thread::sleep(Duration::from_millis(500));
        }
        "a" | "a'" => {
            let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", kind_name), plural);
            let api: Api<DynamicObject> = Api::all_with(client, &ar);
            let writer = reflector::store::Writer::<DynamicObject>::new(ar);
            let reader = writer.as_reader();
            let closures: Vec<Closure> = (0..n)
                .map(|_| {
                    let c = count.clone();
                    Box::new(move |o: &DynamicObject| {
                        c.fetch_add(
                            o.metadata.name.as_ref().map_or(1, |s| s.len() as u64 & 1 | 1),
                            Ordering::Relaxed,
                        );
                    }) as Closure
                })
                .collect();
            let stream = watcher(api, watcher::Config::default().streaming_lists())
                .reflect(writer)
                .applied_objects();
            rt.spawn(async move {
                let mut stream = std::pin::pin!(stream);
                while let Some(Ok(o)) = stream.next().await {
                    for f in &closures {
                        f(&o);
                    }
                }
            });
            rt.block_on(reader.wait_until_ready()).unwrap();
            keep.push(Box::new(reader));
        }
        _ => {
            let factory = SharedInformerFactory::new(client, FactoryOptions::default());
            let informer = rt
                .block_on(factory.informer_for(&WatchSpec::all(api_version, kind_name)))
                .unwrap();
            let handlers: Vec<Arc<dyn EventHandler>> = if variant == "b" {
                (0..n).map(|_| support::Native::handler()).collect()
            } else if variant == "l" {
                vec![delays.clone()]
            } else {
                support::plugins(&common::plugin("bench_counter"), n, false)
            };
            for (i, h) in handlers.into_iter().enumerate() {
                informer.add_listener(&format!("h{i}"), h, None);
            }
            while !informer.has_synced() {
                std::thread::sleep(Duration::from_millis(5));
            }
            keep.push(Box::new(factory));
        }
    }
    println!("synced");
    std::io::stdout().flush().unwrap();
    // Until stdin closes; (l) reports its delays when asked.
    for line in std::io::stdin().lock().lines() {
        if line.is_ok_and(|l| l == "report") {
            println!("{}", delays.report());
            std::io::stdout().flush().unwrap();
        }
    }
    drop(keep);
}

// ---- the orchestrator ---------------------------------------------------

fn variant_name(v: &str) -> &'static str {
    match v {
        "f" => "(f) floor: kube's client reading the watch, no decoding",
        "a" => "(a) kube-runtime reflector + closures",
        "a'" => "(a') (a) on wink's watch client",
        "b" => "(b) wink + native handlers",
        _ => "(c) wink + wasm plugins (metadata)",
    }
}

/// The median of `xs` (the middle one; the mean of the two middle ones).
fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let m = xs.len() / 2;
    if xs.len() % 2 == 1 {
        xs[m]
    } else {
        (xs[m - 1] + xs[m]) / 2.0
    }
}

/// `xs` as `a, b, c` (one decimal place more than the median shows).
fn spread(xs: &[f64]) -> String {
    xs.iter()
        .map(|x| format!("{x:.2}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One consumer's process over one paced window: (CPU µs, context switches)
/// per event.
fn paced_run(
    sim: &mut Proc,
    kubeconfig: &str,
    variant: &str,
    n: usize,
    rate: &str,
    seconds: f64,
) -> (f64, f64) {
    let mut c = Proc::consumer(variant, n, "configmaps", kubeconfig);
    c.expect("synced");
    std::thread::sleep(Duration::from_millis(500));
    let (cpu0, cs0) = (cpu_ns(c.pid()), context_switches(c.pid()));
    sim.say(&format!("pace {rate} {seconds}"));
    let paced = sim.expect("paced");
    let events: u64 = paced.split_whitespace().nth(1).unwrap().parse().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let (cpu1, cs1) = (cpu_ns(c.pid()), context_switches(c.pid()));
    let us = (cpu1 - cpu0).as_secs_f64() * 1e6 / events as f64;
    (us, (cs1 - cs0) as f64 / events as f64)
}

/// Every consumer, `PACED_REPEATS` times over (interleaved, each in a new
/// process): one run here varies by up to ±30 % with where the processes
/// land, so the table shows each figure's median and every run's value, and
/// each ratio is computed within a repeat (the same minutes) before its
/// median is taken.
fn cpu_part(seconds: f64) {
    let mut sim = Proc::spawn(&[
        "--role",
        server_role(),
        "--kind",
        "configmaps",
        "--objects",
        "10000",
    ]);
    let ready = sim.expect("ready");
    let kubeconfig = ready.split_whitespace().nth(1).unwrap().to_string();
    let repeats: usize = std::env::var("PACED_REPEATS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
        .max(1);
    let fields = if managed_fields() { "with" } else { "without" };
    println!(
        "wink's watch window (b, c, a'): {}",
        watch_window().map_or("none".to_string(), |w| format!("{} µs", w.as_micros()))
    );
    println!(
        "10,000 ConfigMaps of 1 KiB, {fields} managedFields; CPU and context switches of the consumer's process over a paced window of {seconds} s, {repeats} runs each"
    );
    println!("| rate | consumer | N | CPU µs / event (median) | runs | ctx switches / event (median) |");
    println!("|---|---|---|---|---|---|");
    let configs: Vec<(String, usize)> = env_list("PACED_VARIANTS", "f,a,b,c")
        .into_iter()
        .flat_map(|v| {
            let ns: &[usize] = if v == "f" { &[1] } else { &[1, 10] };
            ns.iter().map(move |&n| (v.clone(), n)).collect::<Vec<_>>()
        })
        .collect();
    for rate in env_list("PACED_RATES", "1000,5000") {
        // (variant, N) -> one (CPU, ctx) per repeat.
        let mut runs: std::collections::BTreeMap<(String, usize), Vec<(f64, f64)>> = Default::default();
        for _ in 0..repeats {
            for (variant, n) in &configs {
                let run = paced_run(&mut sim, &kubeconfig, variant, *n, &rate, seconds);
                runs.entry((variant.clone(), *n)).or_default().push(run);
            }
        }
        for ((variant, n), rs) in &runs {
            let us: Vec<f64> = rs.iter().map(|r| r.0).collect();
            let cs: Vec<f64> = rs.iter().map(|r| r.1).collect();
            println!(
                "| {rate}/s | {} | {n} | {:.1} | {} | {:.2} |",
                variant_name(variant),
                median(us.clone()),
                spread(&us),
                median(cs)
            );
        }
        // Per repeat, then the median.
        let per_repeat =
            |f: &dyn Fn(usize) -> Option<f64>| -> Option<Vec<f64>> { (0..repeats).map(f).collect() };
        let at = |v: &str, n: usize, i: usize| runs.get(&(v.to_string(), n)).map(|rs| rs[i].0);
        let mut summary = format!("at {rate}/s (median over repeats; each repeat's value in brackets):");
        if let Some(xs) = per_repeat(&|i| Some(at("c", 1, i)? / at("a", 1, i)?)) {
            summary += &format!(
                " (c, N=1) / (a, N=1) = {:.2} [{}];",
                median(xs.clone()),
                spread(&xs)
            );
        }
        if let Some(xs) = per_repeat(&|i| Some(at("c", 1, i)? / at("a'", 1, i)?)) {
            summary += &format!(
                " (c, N=1) / (a', N=1) = {:.2} [{}];",
                median(xs.clone()),
                spread(&xs)
            );
        }
        if let Some(xs) = per_repeat(&|i| Some(at("f", 1, i)? / at("a", 1, i)?)) {
            summary += &format!(
                " floor (f) / (a, N=1) = {:.2} [{}];",
                median(xs.clone()),
                spread(&xs)
            );
        }
        summary += " marginal CPU per (event x handler):";
        for v in ["a", "a'", "b", "c"] {
            if let Some(xs) = per_repeat(&|i| Some((at(v, 10, i)? - at(v, 1, i)?) / 9.0)) {
                summary += &format!(" {v} {:.2} µs [{}];", median(xs.clone()), spread(&xs));
            }
        }
        println!("{summary}");
    }
}

/// Each consumer (N = 1) synced and then left alone: what it costs while
/// no event comes (timers, tickers), in CPU µs and context switches a second.
fn idle_part(seconds: f64) {
    let mut sim = Proc::spawn(&[
        "--role",
        server_role(),
        "--kind",
        "configmaps",
        "--objects",
        "10000",
    ]);
    let ready = sim.expect("ready");
    let kubeconfig = ready.split_whitespace().nth(1).unwrap().to_string();
    println!("idle: each consumer synced on 10,000 ConfigMaps, then {seconds} s with no event");
    println!("| consumer | N | CPU µs / s | ctx switches / s |");
    println!("|---|---|---|---|");
    for variant in env_list("PACED_VARIANTS", "f,a,b,c") {
        let mut c = Proc::consumer(&variant, 1, "configmaps", &kubeconfig);
        c.expect("synced");
        std::thread::sleep(Duration::from_secs(1));
        let (cpu0, cs0) = (cpu_ns(c.pid()), context_switches(c.pid()));
        std::thread::sleep(Duration::from_secs_f64(seconds));
        let (cpu1, cs1) = (cpu_ns(c.pid()), context_switches(c.pid()));
        println!(
            "| {} | 1 | {:.0} | {:.1} |",
            variant_name(&variant),
            (cpu1 - cpu0).as_secs_f64() * 1e6 / seconds,
            (cs1 - cs0) as f64 / seconds
        );
    }
}

fn arg(args: &[String], name: &str) -> String {
    let i = args
        .iter()
        .position(|a| a == name)
        .unwrap_or_else(|| panic!("{name} missing"));
    args[i + 1].clone()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--role") {
        let kind = arg(&args, "--kind");
        match arg(&args, "--role").as_str() {
            "sim" => role_sim(&kind, arg(&args, "--objects").parse().unwrap()),
            "real" => real::role(&runtime(), arg(&args, "--objects").parse().unwrap(), |i| {
                config_map(i, &mut rand::rng())
            }),
            _ => role_consume(
                &arg(&args, "--variant"),
                arg(&args, "--n").parse().unwrap(),
                &kind,
                &arg(&args, "--kubeconfig"),
            ),
        }
        return;
    }
    // Plugins are built before any child needs them.
    common::plugin("bench_counter");
    let seconds: f64 = std::env::var("PACED_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8.0);
    let parts = env_list("PACED_PARTS", "cpu,latency,idle,memory");
    if parts.iter().any(|p| p == "cpu") {
        cpu_part(seconds);
    }
    if parts.iter().any(|p| p == "latency") {
        let window = watch_window().unwrap_or(Duration::from_millis(2));
        latency::part(
            seconds,
            &env_list("PACED_RATES", "1000,5000"),
            window.as_micros() as u64,
        );
    }
    if parts.iter().any(|p| p == "idle") {
        idle_part(seconds);
    }
    if parts.iter().any(|p| p == "memory") {
        memory::part();
    }
}
