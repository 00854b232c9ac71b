//! Team isolation on a real kube-apiserver: does one team's plugin that
//! burns CPU on every event slow another team's? A real kube-apiserver and
//! etcd (the `envtest` harness, `KUBEBUILDER_ASSETS`; without it the
//! benchmark says so and stops), a registry holding `cache-probe`, and wink
//! (`--winkplugins install`, the team policy in its grants file) running
//! NamespacedWinkPlugins of two teams:
//!   - team B: one `probe` watching its ConfigMaps, printing each event;
//!   - team A: `TEAMS_SPINNERS` plugins watching its ConfigMaps, each
//!     spinning `TEAMS_SPIN_MS` on every event (a busy loop well inside the
//!     call deadline, so it is never restarted).
//!
//! A writer patches team B's ConfigMaps at a steady `TEAMS_RATE` per
//! second for `TEAMS_SECONDS`, and, in the cases with team A, team A's at
//! the same rate. Team B's event-to-handler latency is the time from the
//! patch being sent to the line its plugin prints for the event being read
//! from wink's output (both on this process's clock). Three cases, in turn
//! in each repeat, each with a fresh wink:
//!   - alone: team B only;
//!   - spinning: team A's spinners too, no CPU share;
//!   - capped: the same with `teams.limits.cpu: TEAMS_CPU`.
//!
//! Reported per repeat and case: events, writes not seen (none expected),
//! B's p50 and p99, the p99 over the same repeat's alone case, wink's CPU
//! (cores, from /proc over the writing window) and the time team A was held
//! back (`wink_team_throttled_seconds_total`).
//! Run: `KUBEBUILDER_ASSETS=... cargo bench --workspace --bench teams` (the
//! release build); `cargo test --workspace --bench teams` runs it on the
//! debug build. Environment: `TEAMS_REPEATS` (3), `TEAMS_SECONDS` (10),
//! `TEAMS_RATE` (20), `TEAMS_SPINNERS` (2), `TEAMS_SPIN_MS` (50),
//! `TEAMS_CPU` (0.25).

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/debian_support/mod.rs"]
mod debian_support;
#[path = "../tests/envtest/mod.rs"]
mod envtest;
#[path = "../tests/kubectl_support/mod.rs"]
#[allow(dead_code)]
mod kubectl_support;
#[path = "../tests/registry_support/mod.rs"]
mod registry_support;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;
use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// ConfigMaps per team the writer goes round.
const KEYS: usize = 20;

fn env_num<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize]
}

/// wink, its output lines read as they come, each with when it was read.
struct Daemon {
    child: Child,
    lines: Arc<Mutex<Vec<(Instant, String)>>>,
}

impl Daemon {
    fn start(dir: &Path, args: &[&str]) -> Daemon {
        let bin = match cfg!(debug_assertions) {
            true => common::wink_bin(),
            false => common::wink_release_bin(),
        };
        let mut child = Command::new(bin)
            .current_dir(dir)
            .args(args)
            .env("RUST_LOG", "info")
            .env_remove("KUBECONFIG")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn wink");
        let lines = Arc::new(Mutex::new(Vec::new()));
        for out in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let lines = lines.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    lines.lock().unwrap().push((Instant::now(), line));
                }
            });
        }
        Daemon { child, lines }
    }

    fn wait_for(&self, needle: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !self.lines.lock().unwrap().iter().any(|(_, l)| l.contains(needle)) {
            if Instant::now() > deadline {
                let all = self.lines.lock().unwrap();
                let tail: Vec<&str> = all.iter().rev().take(40).map(|(_, l)| l.as_str()).collect();
                panic!("no line with {needle:?}; the last lines:\n{}", tail.join("\n"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// CPU seconds used so far (user + system), from /proc.
    fn cpu_seconds(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<f64> = after.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        // Fields 14 and 15 (utime, stime) are the 12th and 13th after the
        // command; the state (field 3) is not a number and is skipped.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        (f.get(10).unwrap_or(&0.0) + f.get(11).unwrap_or(&0.0)) / ticks
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn nwp_api(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    let ar = ApiResource {
        group: "wink.dev".into(),
        version: "v1alpha1".into(),
        api_version: "wink.dev/v1alpha1".into(),
        kind: "NamespacedWinkPlugin".into(),
        plural: "namespacedwinkplugins".into(),
    };
    Api::namespaced_with(client.clone(), ns, &ar)
}

/// A NamespacedWinkPlugin `name` of `cache-probe` in `ns`.
fn probe(ns: &str, name: &str, reference: &str, spin_ms: u64) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "wink.dev/v1alpha1", "kind": "NamespacedWinkPlugin",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"source": {"oci": reference},
                 "config": {"name": format!("{name}--{ns}"), "log_events": true, "spin_ms": spin_ms,
                            "watches": [{"api_version": "v1", "kind": "ConfigMap"}]}}}))
    .unwrap()
}

/// Patch `ns`'s ConfigMaps round robin at `rate` per second for `seconds`:
/// when each patch was sent, by key.
async fn write(client: kube::Client, ns: String, rate: f64, seconds: f64) -> Vec<(String, Instant)> {
    let api: Api<ConfigMap> = Api::namespaced(client, &ns);
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    let mut sent = Vec::new();
    let mut n = 0u64;
    while Instant::now() < end {
        tick.tick().await;
        let name = format!("cm-{}", n as usize % KEYS);
        let patch = json!({"data": {"n": n.to_string()}});
        let at = Instant::now();
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
        sent.push((format!("{ns}/{name}"), at));
        n += 1;
    }
    sent
}

/// One case's figures.
struct Figures {
    events: usize,
    missing: usize,
    p50: f64,
    p99: f64,
    cores: f64,
    held: f64,
}

struct Bench {
    client: kube::Client,
    kubeconfig: String,
    reference: String,
    registry: String,
    a: String,
    b: String,
    seconds: f64,
    rate: f64,
    spinners: usize,
    spin_ms: u64,
}

impl Bench {
    /// Run one case: team A's spinners (or none), under a CPU share (or none).
    async fn case(&self, name: &str, spinning: bool, cpu: Option<f64>) -> Figures {
        let dir = common::scratch(&format!("bench_teams_{name}"));
        let limits = cpu.map_or(String::new(), |c| format!("  limits: {{cpu: {c}}}\n"));
        let grants = dir.join("grants.yaml");
        std::fs::write(
            &grants,
            format!(
                "teams:\n  namespaces: [{}, {}]\n  registries: [\"{}/teams\"]\n{limits}",
                self.a, self.b, self.registry
            ),
        )
        .unwrap();
        // Team A's spinners go before wink starts (the CRD is there from
        // the first case on), so that it never loads them.
        let a = nwp_api(&self.client, &self.a);
        if !spinning {
            for i in 0..self.spinners {
                let _ = a.delete(&format!("spin-{i}"), &DeleteParams::default()).await;
            }
        }
        let admin = format!("127.0.0.1:{}", envtest::free_port());
        let store = dir.join("store");
        let plugins = dir.join("plugins");
        std::fs::create_dir_all(&plugins).unwrap();
        let wink = Daemon::start(
            &dir,
            &[
                "run",
                "--plugins",
                plugins.to_str().unwrap(),
                "--kubeconfig",
                &self.kubeconfig,
                "--winkplugins",
                "install",
                "--plain-http",
                &self.registry,
                "--oci-store",
                store.to_str().unwrap(),
                "--grants",
                grants.to_str().unwrap(),
                "--admin-addr",
                &admin,
            ],
        );
        let wait = Duration::from_secs(180);
        wink.wait_for("watching NamespacedWinkPlugins", wait);
        let b = nwp_api(&self.client, &self.b);
        if b.get_opt("probe").await.unwrap().is_none() {
            b.create(
                &PostParams::default(),
                &probe(&self.b, "probe", &self.reference, 0),
            )
            .await
            .unwrap();
        }
        for i in (0..self.spinners).filter(|_| spinning) {
            let name = format!("spin-{i}");
            if a.get_opt(&name).await.unwrap().is_none() {
                a.create(
                    &PostParams::default(),
                    &probe(&self.a, &name, &self.reference, self.spin_ms),
                )
                .await
                .unwrap();
            }
        }
        wink.wait_for(&format!("[probe--{}] synced", self.b), wait);
        if spinning {
            for i in 0..self.spinners {
                wink.wait_for(&format!("[spin-{i}--{}] synced", self.a), wait);
            }
        }
        // The initial lists' spinning done with.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let cpu_before = wink.cpu_seconds();
        let started = Instant::now();
        let other = spinning.then(|| {
            tokio::spawn(write(
                self.client.clone(),
                self.a.clone(),
                self.rate,
                self.seconds,
            ))
        });
        let sent = write(self.client.clone(), self.b.clone(), self.rate, self.seconds).await;
        if let Some(o) = other {
            o.await.unwrap();
        }
        let cores = (wink.cpu_seconds() - cpu_before) / started.elapsed().as_secs_f64();
        // Late events of B arrive within this.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let held = metric(
            &admin,
            &format!("wink_team_throttled_seconds_total{{team=\"{}\"}}", self.a),
        )
        .await;
        let mut pending: HashMap<String, VecDeque<Instant>> = HashMap::new();
        for (key, at) in &sent {
            pending.entry(key.clone()).or_default().push_back(*at);
        }
        let tag = format!("[probe--{}] event update ", self.b);
        let mut latencies = Vec::new();
        for (read, line) in wink.lines.lock().unwrap().iter() {
            let Some((_, rest)) = line.split_once(&tag) else {
                continue;
            };
            let key = rest.split_whitespace().next().unwrap_or("");
            if let Some(at) = pending.get_mut(key).and_then(|q| q.pop_front()) {
                latencies.push(read.saturating_duration_since(at).as_secs_f64() * 1e3);
            }
        }
        latencies.sort_by(f64::total_cmp);
        Figures {
            events: latencies.len(),
            missing: pending.values().map(VecDeque::len).sum(),
            p50: quantile(&latencies, 0.5),
            p99: quantile(&latencies, 0.99),
            cores,
            held,
        }
    }
}

/// The value of the series `series` of wink's metrics (0 when absent).
async fn metric(addr: &str, series: &str) -> f64 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
        return f64::NAN;
    };
    let req = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    String::from_utf8_lossy(&out)
        .lines()
        .find(|l| l.starts_with(series))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0.0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let Some(cp) = envtest::ControlPlane::start(&envtest::Options::default()) else {
        return;
    };
    let repeats: usize = env_num("TEAMS_REPEATS", 3);
    let cpu: f64 = env_num("TEAMS_CPU", 0.25);
    let client = cp.client().await;
    let reg = registry_support::Registry::start("bench_teams_registry");
    let reference = format!("{}/teams/probe:v1", reg.host());
    registry_support::push(&reg, &reference, &common::plugin("cache_probe"));
    let (a, b) = ("team-a".to_string(), "team-b".to_string());
    for ns in [&a, &b] {
        let obj: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &obj)
            .await
            .unwrap();
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        for i in 0..KEYS {
            let cm: ConfigMap =
                serde_json::from_value(json!({"metadata": {"name": format!("cm-{i}")}})).unwrap();
            cms.create(&PostParams::default(), &cm).await.unwrap();
        }
    }
    let bench = Bench {
        client,
        kubeconfig: cp.kubeconfig.to_str().unwrap().to_string(),
        reference,
        registry: reg.host(),
        a,
        b,
        seconds: env_num("TEAMS_SECONDS", 10.0),
        rate: env_num("TEAMS_RATE", 20.0),
        spinners: env_num("TEAMS_SPINNERS", 2),
        spin_ms: env_num("TEAMS_SPIN_MS", 50),
    };
    println!(
        "team isolation on a real kube-apiserver ({} build): team B's ConfigMaps patched at {}/s for {} s; \
         team A: {} plugins spinning {} ms per event of its ConfigMaps, patched at {}/s; capped: teams.limits.cpu {cpu}; {repeats} repeats",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        bench.rate,
        bench.seconds,
        bench.spinners,
        bench.spin_ms,
        bench.rate,
    );
    println!(
        "| repeat | case | B events | not seen | B p50 ms | B p99 ms | p99 / alone | wink CPU (cores) | A held back s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for repeat in 0..repeats {
        let mut alone = f64::NAN;
        for (name, spinning, share) in [
            ("alone", false, None),
            ("spinning", true, None),
            ("capped", true, Some(cpu)),
        ] {
            let f = bench.case(name, spinning, share).await;
            if name == "alone" {
                alone = f.p99;
            }
            println!(
                "| {repeat} | {name} | {} | {} | {:.1} | {:.1} | {:.2} | {:.2} | {:.1} |",
                f.events,
                f.missing,
                f.p50,
                f.p99,
                f.p99 / alone,
                f.cores,
                f.held
            );
        }
    }
    drop(reg);
}
