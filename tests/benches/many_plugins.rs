//! Many plugins on one stream: what each further plugin costs per event,
//! with another process keeping the second core busy (as an API server on
//! the same node does), against native handlers in the same run.
//!
//! A simulated API server (its own process) holds 10,000 ConfigMaps of
//! 1 KiB, 2,000 realistic Pods, 50 Deployments and 50 Services, and writes
//! one of two streams:
//!   - burst: 20,000 updates to the ConfigMaps from 8 concurrent writers
//!     through the server's API, as fast as it takes them (a new payload
//!     each; one in four also a new label; `MANY_BURST_DIRECT=1` writes
//!     them into the server's store directly, a burst far denser in time);
//!   - paced: 1,000 events/s of Pod churn for 10 s: of every 100 events 86
//!     status-only updates, 5 label changes, 5 spec changes (generation
//!     moves), 2 creates, 2 deletes.
//!
//! The consumers, each a process of its own, one at a time:
//!   - wink: `wink run` (the release build) on a directory of N copies of
//!     the `bench-many` test plugin, each with its own config, so N
//!     different registrations (`many_plugins/set.rs`): the `mixed` set
//!     varies the kind watched (the stream's, the other stream's,
//!     Deployments, Services), the namespace, the label selector, and every
//!     other plugin filters its updates by generation, labels or one label;
//!     the `plain` set is N plugins on the stream's kind with no filter;
//!   - native: kube-runtime watchers with N handlers doing the same in one
//!     Rust process (`many_plugins/native.rs`).
//!
//! N = 1, 10, 100 (plugin 0 is the same in every set). While a stream runs
//! a spinning child process keeps a core busy. Reported per stream event,
//! over the window from before the stream to the consumer's quiescence:
//! CPU of the whole consumer process (utime+stime of `/proc/PID/stat`, and
//! the scheduler's run time of its threads beside it), wink's guest entries
//! (the `calls` of every plugin in `/debug/plugins`, summed), the marginal
//! CPU per (event x plugin) `(cpu(N) - cpu(1)) / (N - 1)` within a repeat,
//! and wink / native. Then time to synced for 100 plugins: from the spawn
//! of `wink run` to every plugin synced in `/debug/plugins`, cold (an empty
//! precompiled directory: every copy is compiled) and warm (the same
//! directory again), against the native process's time to its watches
//! synced; no spinner there.
//!
//! `MANY_SERVER=real` plays the same streams on a real kube-apiserver and
//! etcd (the `envtest` harness: `KUBEBUILDER_ASSETS`): the objects are
//! created and every event written through its API, the stream wink and
//! the native process watch is the real server's, and no spinner runs by
//! default (the API server and etcd load the other core).
//! Run: `cargo bench -p wink-e2e --bench many_plugins`.
//!
//! Environment: `MANY_PARTS` (`cpu,synced`), `MANY_STREAMS`
//! (`burst,paced`), `MANY_NS` (`1,10,100`), `MANY_PLAIN` (`10`: the N of
//! the plain set on the burst, empty for none), `MANY_CONSUMERS`
//! (`wink,native`), `MANY_REPEATS` (3), `MANY_BURST_UPDATES` (20000),
//! `MANY_WRITERS` (8), `MANY_RATE` (1000), `MANY_SECONDS` (10),
//! `MANY_SERVER` (`sim`, or `real`), `MANY_SPIN` (1, 0 with a real server; 0 for no spinner), `MANY_SYNCED_REPEATS` (3),
//! `MANY_WINK_BIN` (the daemon's binary relative to the workspace; by
//! default `target/release/wink`, built first).
//! A quick run: `MANY_REPEATS=1 MANY_NS=1,10 MANY_BURST_UPDATES=5000
//! MANY_SECONDS=3 MANY_SYNCED_REPEATS=1`.

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "many_plugins/daemon.rs"]
mod daemon;
#[path = "../tests/envtest/mod.rs"]
mod envtest;
#[path = "../tests/kubectl_support/mod.rs"]
#[allow(dead_code)]
mod kubectl_support;
#[path = "many_plugins/native.rs"]
mod native;
#[path = "paced/procs.rs"]
#[allow(dead_code)]
mod procs;
#[path = "many_plugins/report.rs"]
mod report;
#[path = "many_plugins/set.rs"]
mod set;
#[path = "many_plugins/sim.rs"]
mod sim;

use daemon::Daemon;
use procs::{Proc, cpu, cpu_ns, quiesce};
use report::{Run, Runs};
use set::Stream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn env_list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// A child's runtime: two workers, as the daemon's on this machine.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn arg(args: &[String], name: &str) -> String {
    let i = args
        .iter()
        .position(|a| a == name)
        .unwrap_or_else(|| panic!("{name} missing"));
    args[i + 1].clone()
}

/// The daemon's binary: `MANY_WINK_BIN`, else the release build (built
/// here: a nested cargo without the variables cargo set for this process,
/// as the shared harness's).
fn wink_binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("MANY_WINK_BIN") {
        return common::root().join(bin);
    }
    common::wink_release_bin().to_path_buf()
}

/// What the orchestrator keeps for every run.
struct Bench {
    sim: Proc,
    kubeconfig: String,
    scratch: PathBuf,
    component: PathBuf,
    wink: PathBuf,
    /// The precompiled directory of the CPU runs (warm after the first).
    precompiled: PathBuf,
    runs: usize,
}

impl Bench {
    /// The stream's command to the server.
    fn command(stream: Stream) -> String {
        match stream {
            Stream::Burst => format!(
                "burst {} {}",
                env_num("MANY_BURST_UPDATES", 20_000),
                env_num("MANY_WRITERS", 8)
            ),
            Stream::Paced => format!(
                "pace {} {}",
                env_num("MANY_RATE", 1000),
                env_num("MANY_SECONDS", 10)
            ),
        }
    }

    /// One consumer over one stream: synced, quiet, the stream, quiet again.
    fn run(&mut self, consumer: &str, stream: Stream, set: &str, n: usize) -> Run {
        self.runs += 1;
        let log = self.scratch.join(format!("wink-{}.log", self.runs));
        let (pid, keep): (u32, Box<dyn std::any::Any>) = if consumer == "wink" {
            let specs = set::plugins(stream, set, n);
            let dir = daemon::plugin_dir(&self.scratch.join("plugins"), &self.component, &specs);
            let mut d = Daemon::run(&self.wink, &dir, &self.kubeconfig, &self.precompiled, &log);
            d.wait_synced(n, &log);
            (d.pid(), Box::new(d))
        } else {
            let n = n.to_string();
            let mut p = Proc::spawn(&[
                "--role",
                "native",
                "--stream",
                stream.name(),
                "--set",
                set,
                "--n",
                &n,
                "--kubeconfig",
                &self.kubeconfig,
            ]);
            p.expect("synced");
            (p.pid(), Box::new(p))
        };
        let calls = |keep: &Box<dyn std::any::Any>| keep.downcast_ref::<Daemon>().map_or(0, Daemon::calls);
        quiesce(pid);
        let (cpu0, ns0, calls0) = (cpu(pid), cpu_ns(pid), calls(&keep));
        self.sim.say(&Bench::command(stream));
        let done = self.sim.expect("done");
        let words: Vec<&str> = done.split_whitespace().collect();
        let events: u64 = words[1].parse().unwrap();
        let seconds: f64 = words[2].parse().unwrap();
        quiesce(pid);
        let (cpu1, ns1, calls1) = (cpu(pid), cpu_ns(pid), calls(&keep));
        if let Ok(d) = keep.downcast::<Daemon>() {
            d.terminate();
        }
        let per_event = |d: Duration| d.as_secs_f64() * 1e6 / events as f64;
        Run {
            stat_us: per_event(cpu1 - cpu0),
            sched_us: per_event(ns1 - ns0),
            entries: (calls1 - calls0) as f64 / events as f64,
            events_per_s: events as f64 / seconds,
        }
    }
}

/// `MANY_SERVER=real`: the stream comes from a real kube-apiserver.
fn real_server() -> bool {
    std::env::var("MANY_SERVER").is_ok_and(|v| v == "real")
}

fn cpu_part(bench: &mut Bench) {
    // A real API server and etcd on this machine are the other core's load.
    let spin = env_num("MANY_SPIN", if real_server() { 0 } else { 1 });
    let spinner = (spin != 0).then(|| Proc::spawn(&["--role", "spin"]));
    let repeats = env_num("MANY_REPEATS", 3).max(1);
    let ns: Vec<usize> = env_list("MANY_NS", "1,10,100")
        .iter()
        .map(|n| n.parse().unwrap())
        .collect();
    let mut configs: Vec<(Stream, &str, usize)> = Vec::new();
    for stream in env_list("MANY_STREAMS", "burst,paced") {
        let stream = Stream::parse(&stream);
        configs.extend(ns.iter().map(|&n| (stream, "mixed", n)));
        if stream == Stream::Burst {
            for n in env_list("MANY_PLAIN", "10") {
                configs.push((stream, "plain", n.parse().unwrap()));
            }
        }
    }
    let consumers = env_list("MANY_CONSUMERS", "wink,native");
    let mut runs = Runs::default();
    for repeat in 0..repeats {
        for &(stream, set, n) in &configs {
            for consumer in &consumers {
                let run = bench.run(consumer, stream, set, n);
                eprintln!(
                    "repeat {repeat}: {} {set} N={n} {consumer}: {:.1} µs/event, {:.2} entries/event, {:.0} events/s",
                    stream.name(),
                    run.stat_us,
                    run.entries,
                    run.events_per_s
                );
                runs.add(stream, set, n, consumer, run);
            }
        }
    }
    drop(spinner);
    report::cpu_table(
        &runs,
        &configs,
        &consumers,
        repeats,
        env_num("MANY_RATE", 1000) as f64,
        match (real_server(), spin != 0) {
            (true, true) => "the real API server's stream, a spinning process beside",
            (true, false) => "the real API server's stream (it and etcd on the same 2 cores)",
            (false, true) => "a spinning process on the other core",
            (false, false) => "nothing else running",
        },
    );
}

/// Time to synced for 100 plugins, cold and warm, against the native
/// process with the same 100 registrations.
fn synced_part(bench: &mut Bench) {
    let n = 100;
    let specs = set::plugins(Stream::Paced, "mixed", n);
    let dir = daemon::plugin_dir(&bench.scratch.join("plugins-synced"), &bench.component, &specs);
    let mut rows = Vec::new();
    for repeat in 0..env_num("MANY_SYNCED_REPEATS", 3).max(1) {
        let precompiled = bench.scratch.join(format!("precompiled-cold-{repeat}"));
        let _ = std::fs::remove_dir_all(&precompiled);
        let mut times = Vec::new();
        for phase in ["cold", "warm"] {
            let log = bench.scratch.join(format!("synced-{repeat}-{phase}.log"));
            let mut d = Daemon::run(&bench.wink, &dir, &bench.kubeconfig, &precompiled, &log);
            times.push(d.wait_synced(n, &log));
            // Let the last precompiled entries reach the disk.
            quiesce(d.pid());
            d.terminate();
        }
        let started = Instant::now();
        let mut p = Proc::spawn(&[
            "--role",
            "native",
            "--stream",
            "paced",
            "--set",
            "mixed",
            "--n",
            "100",
            "--kubeconfig",
            &bench.kubeconfig,
        ]);
        p.expect("synced");
        times.push(started.elapsed());
        drop(p);
        rows.push(times);
    }
    report::synced_table(n, &set::describe(Stream::Paced, &specs), &rows);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--role") {
        match arg(&args, "--role").as_str() {
            "spin" => sim::spin(),
            "sim" => sim::role(&runtime(), Path::new(&arg(&args, "--scratch")), false),
            "real" => sim::role(&runtime(), Path::new(&arg(&args, "--scratch")), true),
            _ => native::role(
                &runtime(),
                Stream::parse(&arg(&args, "--stream")),
                &arg(&args, "--set"),
                arg(&args, "--n").parse().unwrap(),
                &arg(&args, "--kubeconfig"),
            ),
        }
        return;
    }
    let component = common::plugin("bench_many");
    let wink = wink_binary();
    let scratch = common::scratch("many-plugins");
    let role = if real_server() { "real" } else { "sim" };
    let mut sim = Proc::spawn(&["--role", role, "--scratch", scratch.to_str().unwrap()]);
    let kubeconfig = sim.expect("ready").split_whitespace().nth(1).unwrap().to_string();
    let mut bench = Bench {
        sim,
        kubeconfig,
        precompiled: scratch.join("precompiled"),
        scratch,
        component,
        wink,
        runs: 0,
    };
    let parts = env_list("MANY_PARTS", "cpu,synced");
    if parts.iter().any(|p| p == "cpu") {
        cpu_part(&mut bench);
    }
    if parts.iter().any(|p| p == "synced") {
        synced_part(&mut bench);
    }
}
