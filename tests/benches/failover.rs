//! Failover benchmark: two `wink run --leader-elect` replicas on one
//! simulated server with 10,000 cached ConfigMaps; the leader is killed
//! (`kill -9`) and the time until the standby's plugin handles the first
//! new event is measured, over 10 failovers (a fresh standby each time).
//! Client-go's timings by default (lease 15 s, renew deadline 10 s, retry
//! 2 s): a killed leader's Lease must expire before anyone takes over, so
//! the lease duration bounds the figure from below.
//! Run: `cargo bench -p wink-e2e --bench failover`.
//! Environment: `FAILOVER_RUNS` (default 10), `FAILOVER_OBJECTS` (default
//! 10000), `FAILOVER_LEASE_MS` (default 15000; renew deadline 2/3 of it,
//! retry period 2 s or less).

#[path = "../tests/common/mod.rs"]
mod common;

use common::{Wink, plugin, scratch};
use serde_json::json;
use std::time::{Duration, Instant};
use wink_sim::{Sim, SimConfig};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn wait(w: &Wink, needle: &str) {
    w.wait_for_line(needle, Duration::from_secs(600));
}

fn main() {
    let (runs, objects, lease) = (
        env("FAILOVER_RUNS", 10),
        env("FAILOVER_OBJECTS", 10_000),
        env("FAILOVER_LEASE_MS", 15_000),
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sim = rt.block_on(Sim::start(SimConfig::default())).unwrap();
    for i in 0..objects {
        sim.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{i:05}"), "namespace": "default"}, "data": {"k": "v".repeat(900)}}))
            .unwrap();
    }
    let dir = scratch("bench_failover");
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(plugin("pod_logger"), plugins.join("good.wasm")).unwrap();
    // A plugin that holds every ConfigMap in its cache.
    std::fs::copy(plugin("cache_probe"), plugins.join("cms.wasm")).unwrap();
    std::fs::write(
        plugins.join("cms.json"),
        json!({"watches": [{"api_version": "v1", "kind": "ConfigMap"}], "reads": [], "trigger": "none", "queries": []}).to_string(),
    )
    .unwrap();
    let kubeconfig = dir.join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).unwrap();
    let (lease_ms, renew_ms, retry_ms) = (
        lease.to_string(),
        (lease * 2 / 3).to_string(),
        lease.min(6000) / 3,
    );
    let retry_ms = retry_ms.to_string();
    let replica = |id: &str| {
        Wink::run_on(
            &plugins,
            &kubeconfig,
            &[
                "--leader-elect",
                "--leader-elect-identity",
                id,
                "--lease-duration-ms",
                &lease_ms,
                "--renew-deadline-ms",
                &renew_ms,
                "--retry-period-ms",
                &retry_ms,
                "--no-precompiled",
            ],
        )
    };
    let mut leader = replica("r0");
    wait(&leader, "plugin synced plugin=cms");
    wait(&leader, "became the leader");
    let mut times = Vec::new();
    for run in 1..=runs {
        let standby = replica(&format!("r{run}"));
        wait(&standby, "plugin synced plugin=cms");
        drop(leader); // kill -9
        let killed = Instant::now();
        let marker = format!("marker-{run}");
        sim.insert(
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": marker, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}),
        )
        .unwrap();
        wait(&standby, &format!("[good] OnAdd: {marker}"));
        let took = killed.elapsed();
        eprintln!("run {run}: {took:?}");
        times.push(took);
        leader = standby;
    }
    times.sort();
    let pct = |p: f64| times[((times.len() as f64 - 1.0) * p).round() as usize];
    println!(
        "{objects} ConfigMaps (~1 KiB) cached; lease {lease_ms} ms, renew deadline {renew_ms} ms, retry {retry_ms} ms; {runs} failovers"
    );
    println!("| leader killed -> first event handled by the new leader | p50 | p95 | min | max |");
    println!("|---|---|---|---|---|");
    println!(
        "| | {:.2} s | {:.2} s | {:.2} s | {:.2} s |",
        pct(0.5).as_secs_f64(),
        pct(0.95).as_secs_f64(),
        times[0].as_secs_f64(),
        times[times.len() - 1].as_secs_f64()
    );
    drop(leader);
    rt.block_on(sim.shutdown());
}
