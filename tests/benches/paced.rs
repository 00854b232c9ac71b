//! Paced-stream benchmark: what one steady stream of events costs each
//! consumer, from the OS. A simulated API server (its own process) holds
//! 10,000 ConfigMaps of 1 KiB random payload and then updates them at a
//! steady rate (1,000 and 5,000 events/s for a fixed time, not a burst).
//! Each consumer runs in a process of its own, and is measured from
//! `/proc/PID`: CPU time (user + system) per event and context switches per
//! event (every thread's), over the paced window only:
//!   (a) kube-runtime's reflector + N closures on one task (the native peer),
//!   (b) wink's informer + N native handlers,
//!   (c) wink's informer + N metadata-only wasm plugins (`bench-counter`),
//! for N = 1 and 10. Then memory: resident growth per cached object (from
//! `/proc/PID/status`) for 10,000 and 100,000 objects (1 KiB ConfigMaps,
//! realistic Pods), against the objects' JSON size, and the peak during a
//! relist of everything (a 410 after compaction) against the steady state.
//! Run: `cargo bench -p wink-e2e --bench paced`.
//!
//! Environment: `PACED_SECONDS` (8), `PACED_RATES` (`1000,5000`),
//! `PACED_MEMORY` (`10000,100000`), `PACED_PARTS` (`cpu,memory`).

#[path = "../tests/common/mod.rs"]
mod common;
mod support;

use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::core::GroupVersionKind;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use rand::Rng;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
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
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("cm-{i:06}"), "namespace": "default", "labels": {"app": "bench", "shard": format!("s{}", i % 16)}},
        "data": {"payload": payload(rng, 1024)}})
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
            ["pace", rate, secs] => {
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
    let client = kube::Client::try_from(config).unwrap();
    let (api_version, kind_name, plural) = match kind {
        "pods" => ("v1", "Pod", "pods"),
        _ => ("v1", "ConfigMap", "configmaps"),
    };
    let count = Arc::new(AtomicU64::new(0));
    println!("started");
    std::io::stdout().flush().unwrap();
    let mut keep: Vec<Box<dyn std::any::Any>> = Vec::new();
    match variant {
        "a" => {
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
    // Until stdin closes.
    for _ in std::io::stdin().lock().lines() {}
    drop(keep);
}

// ---- the orchestrator ---------------------------------------------------

struct Proc {
    child: Child,
    stdin: ChildStdin,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl Proc {
    fn spawn(args: &[&str]) -> Proc {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Proc { child, stdin, lines }
    }

    /// A consumer process (see `role_consume`).
    fn consumer(variant: &str, n: usize, kind: &str, kubeconfig: &str) -> Proc {
        let n = n.to_string();
        Proc::spawn(&[
            "--role",
            "consume",
            "--variant",
            variant,
            "--n",
            &n,
            "--kind",
            kind,
            "--kubeconfig",
            kubeconfig,
        ])
    }

    fn expect(&mut self, prefix: &str) -> String {
        loop {
            let line = self.lines.next().expect("the child answers").unwrap();
            if line.starts_with(prefix) {
                return line;
            }
        }
    }

    fn say(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// CPU time (user + system) of a process, from `/proc/PID/stat`.
fn cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<u64> = after.split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
    // Fields 14 and 15 (utime, stime), counted from `state` as field 3.
    let ticks = f[11] + f[12];
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    Duration::from_secs_f64(ticks as f64 / hz as f64)
}

/// Context switches of every thread of a process.
fn context_switches(pid: u32) -> u64 {
    let mut total = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().flatten() {
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        for line in status.lines() {
            if line.starts_with("voluntary_ctxt_switches") || line.starts_with("nonvoluntary_ctxt_switches") {
                total += line
                    .split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    total
}

/// A field of `/proc/PID/status` in bytes (`VmRSS`, `VmHWM`).
fn status_bytes(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap_or(0)
        * 1024
}

fn variant_name(v: &str) -> &'static str {
    match v {
        "a" => "(a) kube-runtime reflector + closures",
        "b" => "(b) wink + native handlers",
        _ => "(c) wink + wasm plugins (metadata)",
    }
}

fn cpu_part(seconds: f64) {
    let mut sim = Proc::spawn(&["--role", "sim", "--kind", "configmaps", "--objects", "10000"]);
    let ready = sim.expect("ready");
    let kubeconfig = ready.split_whitespace().nth(1).unwrap().to_string();
    println!(
        "10,000 ConfigMaps of 1 KiB; CPU and context switches of the consumer's process over a paced window of {seconds} s"
    );
    println!("| rate | consumer | N | CPU µs / event | ctx switches / event | events paced |");
    println!("|---|---|---|---|---|---|");
    for rate in env_list("PACED_RATES", "1000,5000") {
        let mut per_event = std::collections::BTreeMap::new();
        for variant in ["a", "b", "c"] {
            for n in [1usize, 10] {
                let mut c = Proc::consumer(variant, n, "configmaps", &kubeconfig);
                c.expect("synced");
                std::thread::sleep(Duration::from_millis(500));
                let (cpu0, cs0) = (cpu(c.pid()), context_switches(c.pid()));
                sim.say(&format!("pace {rate} {seconds}"));
                let paced = sim.expect("paced");
                let events: u64 = paced.split_whitespace().nth(1).unwrap().parse().unwrap();
                std::thread::sleep(Duration::from_millis(500));
                let (cpu1, cs1) = (cpu(c.pid()), context_switches(c.pid()));
                let us = (cpu1 - cpu0).as_secs_f64() * 1e6 / events as f64;
                let cs = (cs1 - cs0) as f64 / events as f64;
                per_event.insert((variant, n), us);
                println!(
                    "| {rate}/s | {} | {n} | {us:.1} | {cs:.2} | {events} |",
                    variant_name(variant)
                );
            }
        }
        let marginal = |v: &str| (per_event[&(v, 10)] - per_event[&(v, 1)]) / 9.0;
        println!(
            "at {rate}/s: (c, N=1) / (a, N=1) = {:.2}; marginal CPU per (event x handler): a {:.2} µs, b {:.2} µs, c {:.2} µs",
            per_event[&("c", 1)] / per_event[&("a", 1)],
            marginal("a"),
            marginal("b"),
            marginal("c")
        );
    }
}

fn memory_part() {
    println!(
        "resident memory growth per cached object (VmRSS after synced minus before the informer), and the peak (VmHWM) during a relist of everything against the steady state"
    );
    println!(
        "| objects | kind | JSON bytes / object | consumer | RSS growth / object | relist peak / steady |"
    );
    println!("|---|---|---|---|---|---|");
    for n in env_list("PACED_MEMORY", "10000,100000") {
        for kind in ["configmaps", "pods"] {
            let mut sim = Proc::spawn(&["--role", "sim", "--kind", kind, "--objects", &n]);
            let ready = sim.expect("ready");
            let mut words = ready.split_whitespace().skip(1);
            let kubeconfig = words.next().unwrap().to_string();
            let json: u64 = words.next().unwrap().parse().unwrap();
            for variant in ["a", "b"] {
                let mut c = Proc::consumer(variant, 1, kind, &kubeconfig);
                c.expect("started");
                let before = status_bytes(c.pid(), "VmRSS");
                c.expect("synced");
                std::thread::sleep(Duration::from_millis(1000));
                let steady = status_bytes(c.pid(), "VmRSS");
                let _ = std::fs::write(format!("/proc/{}/clear_refs", c.pid()), "5");
                sim.say("relist");
                sim.expect("relisted");
                // The relist is done when the consumer's CPU goes quiet
                // (after the watcher's backoff has passed).
                std::thread::sleep(Duration::from_secs(3));
                let mut last = cpu(c.pid());
                loop {
                    std::thread::sleep(Duration::from_millis(700));
                    let now = cpu(c.pid());
                    if now - last < Duration::from_millis(20) {
                        break;
                    }
                    last = now;
                }
                let peak = status_bytes(c.pid(), "VmHWM");
                let per = (steady.saturating_sub(before)) as f64 / n.parse::<f64>().unwrap();
                println!(
                    "| {n} | {kind} | {json} | {} | {:.0} B | {:.2} |",
                    variant_name(variant),
                    per,
                    peak as f64 / steady as f64
                );
            }
        }
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
    let parts = env_list("PACED_PARTS", "cpu,memory");
    if parts.iter().any(|p| p == "cpu") {
        cpu_part(seconds);
    }
    if parts.iter().any(|p| p == "memory") {
        memory_part();
    }
}
