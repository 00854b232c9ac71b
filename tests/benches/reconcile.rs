//! Reconcile benchmark: keys reconciled per second and CPU per key of
//! wink's work queue with one plugin (`bench-reconcile`, a no-op reconciler
//! and one doing a single cache lookup of its key), against kube-runtime's
//! `Controller` running the same logic natively (its reconciler does nothing,
//! or one `Store::get`), each in a process of its own on the same simulated
//! API server (in this process), in the same run.
//!
//! Throughput: N ConfigMaps (`app=bench`) are reconciled once from the
//! initial list; once the consumer is idle, one ConfigMap `trigger` is
//! updated and maps to all N keys (the plugin's `map-to-keys`; the
//! Controller's `watches` mapper), and the N reconciles that follow are
//! timed from the first to the last (each consumer's own clock) and costed
//! from `/proc/PID/task/*/schedstat` (the trigger's delivery and mapping
//! included). The Controller runs with its defaults (reconciles of
//! different keys concurrently); wink's queue has one worker per plugin.
//!
//! Run: `cargo bench -p wink-e2e --bench reconcile`.
//! Memory: wink with M ConfigMaps cached (M = `RECONCILE_MEMORY_KEYS`,
//! 100000) and all M keys queued (its plugin's first reconcile held),
//! against the same cache with a queue of a few Namespaces: the resident
//! memory growth (`VmRSS`) per queued key (`workqueue_depth`), its name's
//! bytes included.
//!
//! Environment: `RECONCILE_KEYS` (20000), `RECONCILE_REPEATS` (3, the
//! median is shown), `RECONCILE_MEMORY_KEYS` (100000).

#[path = "../tests/common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "paced/procs.rs"]
mod procs;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use procs::{cpu_ns, quiesce, status_bytes};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, SystemTime};
use wink_sim::{Sim, SimConfig};

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn arg(args: &[String], name: &str) -> String {
    let i = args.iter().position(|a| a == name).unwrap();
    args[i + 1].clone()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--role") {
        let n: u64 = arg(&args, "--n").parse().unwrap();
        let lookup = arg(&args, "--lookup") == "true";
        return role_native(&arg(&args, "--kubeconfig"), n, lookup);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(orchestrate());
}

/// The daemon's binary: the release build (built here: a nested cargo
/// without the variables cargo set for this process).
fn wink_binary() -> PathBuf {
    common::wink_release_bin().to_path_buf()
}

/// A consumer's process and its output lines (stdout and stderr).
struct Consumer {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Consumer {
    fn spawn(bin: &Path, args: &[&str]) -> Consumer {
        let mut child = Command::new(bin)
            .args(args)
            .env("RUST_LOG", "info")
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let out: Box<dyn Read + Send> = Box::new(child.stdout.take().unwrap());
        let err: Box<dyn Read + Send> = Box::new(child.stderr.take().unwrap());
        for pipe in [out, err] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    let _ = tx.send(line);
                }
            });
        }
        Consumer { child, lines: rx }
    }

    fn native(kubeconfig: &str, n: u64, lookup: bool) -> Consumer {
        let n = n.to_string();
        let lookup = lookup.to_string();
        let args = [
            "--role",
            "native",
            "--kubeconfig",
            kubeconfig,
            "--n",
            &n,
            "--lookup",
            &lookup,
        ];
        Consumer::spawn(&std::env::current_exe().unwrap(), &args)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The next line containing `needle`.
    fn wait(&self, needle: &str) -> String {
        let mut seen = Vec::new();
        loop {
            let Ok(line) = self.lines.recv_timeout(Duration::from_secs(300)) else {
                let tail = &seen[seen.len().saturating_sub(20)..];
                panic!("no line with {needle:?}; the last ones: {tail:#?}");
            };
            if line.contains(needle) {
                return line;
            }
            seen.push(line);
        }
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The seconds of a line: the native child's last field, or wink's log
/// timestamp's time of day (`2026-11-26T03:40:07.820192Z ...`).
fn seconds(line: &str) -> f64 {
    if let Some(rest) = line
        .strip_prefix("start ")
        .or_else(|| line.strip_prefix("reconciled "))
    {
        return rest.split_whitespace().nth(1).unwrap().parse().unwrap();
    }
    let t = line.split('T').nth(1).unwrap();
    let clock: Vec<f64> = t[..15].split(':').map(|p| p.parse().unwrap()).collect();
    clock[0] * 3600.0 + clock[1] * 60.0 + clock[2]
}

/// One timed round of a consumer: keys a second and CPU per key.
struct Round {
    keys_per_second: f64,
    cpu_per_key: Duration,
}

/// The trigger ConfigMap: mapping to the N keys when `go`, else to none
/// (so a consumer's initial list of it adds nothing, and its update from
/// `go` adds nothing more).
fn trigger(go: bool, n: u64) -> Value {
    let go = if go { "yes" } else { "no" };
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "trigger", "namespace": "default",
            "labels": {"role": "trigger", "from": "0", "count": n.to_string(), "go": go}},
    })
}

/// The consumer reconciled every key once from its initial list: idle it,
/// trigger all N keys, time and cost the N reconciles.
fn round(sim: &Sim, c: &Consumer, n: u64, number: u64) -> Round {
    c.wait(&format!("reconciled {}", n * number));
    quiesce(c.pid());
    let before = cpu_ns(c.pid());
    sim.update("configmaps", trigger(true, n)).unwrap();
    let first = seconds(&c.wait(&format!("start {}", n * number + 1)));
    let last = seconds(&c.wait(&format!("reconciled {}", n * (number + 1))));
    quiesce(c.pid());
    let cpu = cpu_ns(c.pid()) - before;
    Round {
        keys_per_second: (n - 1) as f64 / (last - first),
        cpu_per_key: cpu / n as u32,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

async fn orchestrate() {
    let n = env_num("RECONCILE_KEYS", 20_000);
    let repeats = env_num("RECONCILE_REPEATS", 3).max(1);
    let memory_keys = env_num("RECONCILE_MEMORY_KEYS", 100_000);
    let wink = wink_binary();
    let component = common::plugin("bench_reconcile");
    let scratch = common::scratch("bench_reconcile");

    let sim = Sim::start(SimConfig::default()).await.unwrap();
    for i in 0..n {
        sim.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{i:06}"), "namespace": "default", "labels": {"app": "bench"}},
            "data": {"key": "value"}}))
            .unwrap();
    }
    sim.insert(trigger(false, n)).unwrap();
    let kubeconfig = scratch.join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).unwrap();
    let kc = kubeconfig.to_str().unwrap().to_string();

    println!("reconcile benchmark: {n} keys, median of {repeats} runs, each consumer in its own process");
    println!(
        "{:<34} {:>12} {:>14} {:>16}",
        "consumer", "keys/s", "CPU µs/key", "vs kube-runtime"
    );
    for lookup in [false, true] {
        let what = if lookup { "one lookup" } else { "no-op" };
        let mut results: Vec<(String, Vec<f64>, Vec<f64>)> = Vec::new();
        for variant in ["kube-runtime Controller", "wink, one plugin"] {
            let mut rates = Vec::new();
            let mut cpus = Vec::new();
            for rep in 0..repeats {
                // The consumer gone, the trigger is left as the next one's
                // list finds it.
                let round_of = |c: Consumer| {
                    let r = round(&sim, &c, n, 1);
                    drop(c);
                    sim.update("configmaps", trigger(false, n)).unwrap();
                    r
                };
                let r = if variant.starts_with("kube") {
                    round_of(Consumer::native(&kc, n, lookup))
                } else {
                    let dir = scratch.join(format!("plugins-{lookup}-{rep}"));
                    std::fs::create_dir_all(&dir).unwrap();
                    std::fs::copy(&component, dir.join("bench-reconcile.wasm")).unwrap();
                    std::fs::write(
                        dir.join("bench-reconcile.json"),
                        json!({"n": n, "lookup": lookup}).to_string(),
                    )
                    .unwrap();
                    let c = Consumer::spawn(
                        &wink,
                        &["run", "--plugins", dir.to_str().unwrap(), "--kubeconfig", &kc],
                    );
                    round_of(c)
                };
                rates.push(r.keys_per_second);
                cpus.push(r.cpu_per_key.as_nanos() as f64 / 1000.0);
            }
            results.push((format!("{variant} ({what})"), rates, cpus));
        }
        let native = median(results[0].1.clone());
        for (name, rates, cpus) in results {
            let rate = median(rates);
            println!(
                "{name:<34} {rate:>12.0} {:>14.1} {:>15.2}x",
                median(cpus),
                rate / native
            );
        }
    }
    println!("goal: wink with one plugin ≥ 0.8x kube-runtime's Controller's throughput");
    drop(sim);
    memory(&wink, &component, &scratch, memory_keys).await;
}

/// A GET of wink's `/metrics`: the value of `workqueue_depth` for the
/// bench plugin.
fn depth(addr: &str) -> u64 {
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return 0;
    };
    let req = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.lines()
        .find_map(|l| l.strip_prefix("workqueue_depth{plugin=\"bench-reconcile\"} "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

/// Resident memory of wink with M ConfigMaps cached and its plugin's queue
/// holding their M keys (its first reconcile held), against the same with
/// its queue of Namespaces (a few keys): the growth per key.
async fn memory(wink: &Path, component: &Path, scratch: &Path, m: u64) {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    for i in 0..m {
        sim.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{i:06}"), "namespace": "default", "labels": {"app": "bench"}},
            "data": {"key": "value"}}))
            .unwrap();
    }
    let kubeconfig = scratch.join("kubeconfig-memory");
    sim.write_kubeconfig(&kubeconfig).unwrap();
    let mut measured = Vec::new();
    for queue in ["Namespace", "ConfigMap"] {
        let dir = scratch.join(format!("plugins-memory-{queue}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(component, dir.join("bench-reconcile.wasm")).unwrap();
        let config = json!({"n": m, "hold_ms": 300_000, "queue": queue});
        std::fs::write(dir.join("bench-reconcile.json"), config.to_string()).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = format!("127.0.0.1:{port}");
        let c = Consumer::spawn(
            wink,
            &[
                "run",
                "--plugins",
                dir.to_str().unwrap(),
                "--kubeconfig",
                kubeconfig.to_str().unwrap(),
                "--admin-addr",
                &addr,
                "--call-deadline-ms",
                "600000",
            ],
        );
        c.wait("plugin synced plugin=bench-reconcile");
        if queue == "ConfigMap" {
            c.wait("holding");
        }
        quiesce(c.pid());
        measured.push((depth(&addr), status_bytes(c.pid(), "VmRSS")));
    }
    let ((_, empty), (queued, full)) = (measured[0], measured[1]);
    let per_key = (full as f64 - empty as f64) / queued.max(1) as f64;
    println!(
        "memory: {m} ConfigMaps cached; VmRSS {:.1} MiB with a queue of a few Namespaces, {:.1} MiB with {queued} keys queued: {per_key:.0} B per queued key (goal ≤ 200 B)",
        empty as f64 / 1048576.0,
        full as f64 / 1048576.0
    );
}

/// The native consumer: kube-runtime's `Controller` over the ConfigMaps
/// of `default` (counting those named `cm-`), the ConfigMap `role=trigger`
/// mapped to the keys it names when labelled `go=yes`; its reconciler does nothing, or one `Store::get`, and
/// counts, printing `start K T` at the first of every `n` and
/// `reconciled K T` at the last (T: seconds since the epoch).
fn role_native(kubeconfig: &str, n: u64, lookup: bool) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let kc = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .unwrap();
        let client = kube::Client::try_from(config).unwrap();
        let cms: Api<ConfigMap> = Api::namespaced(client, "default");
        let controller = Controller::new(cms.clone(), watcher::Config::default());
        let ctx = Arc::new(Ctx {
            store: controller.store(),
            count: AtomicU64::new(0),
            n,
            lookup,
        });
        controller
            .watches(
                cms,
                watcher::Config::default().labels("role=trigger"),
                |t: ConfigMap| {
                    let labels = t.metadata.labels.unwrap_or_default();
                    let number = |l: &str| labels.get(l).and_then(|v| v.parse::<u64>().ok());
                    let go = labels.get("go").is_some_and(|v| v == "yes");
                    let (from, count) = (number("from").unwrap_or(0), number("count").unwrap_or(0));
                    let count = if go { count } else { 0 };
                    (from..from + count)
                        .map(|i| ObjectRef::new(&format!("cm-{i:06}")).within("default"))
                        .collect::<Vec<_>>()
                },
            )
            .run(reconcile, |_, _: &Never, _| Action::await_change(), ctx)
            .for_each(|_| async {})
            .await;
    });
}

struct Ctx {
    store: Store<ConfigMap>,
    count: AtomicU64,
    n: u64,
    lookup: bool,
}

#[derive(Debug)]
struct Never;

impl std::fmt::Display for Never {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("never")
    }
}

impl std::error::Error for Never {}

async fn reconcile(obj: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, Never> {
    if ctx.lookup {
        std::hint::black_box(ctx.store.get(&ObjectRef::from_obj(&*obj)));
    }
    if !obj.metadata.name.as_deref().unwrap_or("").starts_with("cm-") {
        return Ok(Action::await_change());
    }
    let count = ctx.count.fetch_add(1, Ordering::Relaxed) + 1;
    let now = || {
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    if count % ctx.n == 1 || ctx.n == 1 {
        println!("start {count} {:.6}", now());
    }
    if count.is_multiple_of(ctx.n) {
        println!("reconciled {count} {:.6}", now());
    }
    Ok(Action::await_change())
}
