//! The policy library's cost: every library policy loaded and enforcing in
//! one wink, against pod-security alone in another, both answering Pod
//! AdmissionReviews over HTTPS from their informer caches.
//!
//! The simulated API server (in this process) holds `LIBRARY_PODS` Pods
//! (10,000) in 10 namespaces, each passing PSS `restricted` and every
//! policy. The targets, each `wink run` as a child process:
//!   - `pod-security`: pod-security alone, `restricted` for enforce, audit
//!     and warn; a Pod review is one request to its webhook;
//!   - `library`: every library policy (`plugins/*`, the manual's
//!     `library/` pages), pod-security as above, allowed-registries trusting
//!     `registry.example.com/`, the others with their defaults, its
//!     webhook configurations written to the simulated server; a Pod review
//!     is what the API server does for a Pod with that configuration: one
//!     request to each validating webhook whose rules and namespace
//!     selector take it (the policies share one webhook), and, in the same
//!     run to compare, to each of those webhooks' plugins on its own path
//!     (what the API server sent when every plugin had a webhook of its
//!     own), sent at once on connections of their own, the review's
//!     latency the slowest answer's.
//!
//! The load (this process) is paced: `LIBRARY_RATE` (1,000) reviews/s for
//! `LIBRARY_SECONDS` (10) over `LIBRARY_CONNECTIONS` (8) keep-alive
//! connections per webhook, every answer checked (`allowed`). CPU per
//! review is the serving wink's utime+stime (`/proc/PID/stat`, 10 ms
//! ticks) and its threads' scheduler run time (`schedstat`) over the paced
//! window, divided by the reviews. The load generator's own CPU (this
//! process's utime+stime, its ended threads' included: its TLS clients, the reviews written and the
//! answers read, and the simulated API server, idle then) over the same
//! window is shown beside it: it shares the two cores with the serving
//! wink, as the API server of a real cluster would not.
//!
//! The background cost, of pod-security alone: from its start (compiling
//! the component, listing, a result on every Pod, the reports written)
//! until it is idle again (less than a 10 ms tick in 2 s): when, and the
//! CPU it spent; and of one Pod updated: its threads' scheduler run time
//! over the next 2 s, less that of an idle 2 s before it.
//! Run: `cargo bench -p wink-e2e --bench library` (the goal, p99 per
//! review ≤ 1 ms at 1,000/s, is for a quiet machine and the release
//! daemon: `LIBRARY_WINK_BIN=target/release/wink`); a small run to see it
//! work: `LIBRARY_PODS=500 LIBRARY_RATE=100 LIBRARY_SECONDS=2`. The
//! components are built from the workspace, or taken from
//! `LIBRARY_COMPONENTS` (a folder of `<crate>.wasm`, e.g. a copy of
//! `target/wasm32-wasip2/release` kept from another commit, to compare two
//! builds of the plugins in one sitting).

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/lang_support/mod.rs"]
mod lang_support;
#[path = "paced/procs.rs"]
#[allow(dead_code)]
mod procs;
#[path = "library/webhooks.rs"]
mod webhooks;
#[path = "admission/winks.rs"]
#[allow(dead_code)]
mod winks;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use webhooks::{one_per_plugin, pod_webhooks};
use wink_sim::{Sim, SimConfig};
use winks::Daemon;

const WAIT: Duration = Duration::from_secs(300);
const NAMESPACES: usize = 10;
/// Every library policy (the crates under `plugins/`).
const LIBRARY: [&str; 13] = [
    "pod-security",
    "disallow-latest-tag",
    "allowed-registries",
    "require-requests-limits",
    "require-probes",
    "require-labels",
    "block-service-types",
    "unique-ingress-host",
    "unique-service-selector",
    "block-wildcard-ingress-host",
    "replica-limits",
    "disallow-default-namespace",
    "require-pdb",
];
/// The policies with a webhook for Pods.
const POD_POLICIES: [&str; 6] = [
    "pod-security",
    "disallow-latest-tag",
    "allowed-registries",
    "require-requests-limits",
    "require-probes",
    "disallow-default-namespace",
];

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(bench());
}

/// A Pod every policy and PSS `restricted` allow.
fn pod(name: &str, ns: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": {"app": "web"}},
        "spec": {"securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "app", "image": "registry.example.com/app:1.0",
            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}},
            "livenessProbe": {"tcpSocket": {"port": 8080}}, "readinessProbe": {"tcpSocket": {"port": 8080}},
            "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}})
}

fn review(k: usize) -> String {
    let ns = format!("team-{}", k % NAMESPACES);
    let name = format!("new-{k}");
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": format!("uid-{k}"),
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
        "requestResource": {"group": "", "version": "v1", "resource": "pods"},
        "name": name, "namespace": ns, "operation": "CREATE",
        "userInfo": {"username": "bench", "groups": ["system:authenticated"]},
        "object": pod(&name, &ns), "oldObject": null, "dryRun": false,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}}})
    .to_string()
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

async fn connect(port: u16, ca: &str) -> Sender {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(ca.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .unwrap();
    let (sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    sender
}

/// One request to the webhook at `path`: whether it allowed review `k`.
async fn ask(sender: &mut Sender, path: &str, body: String, k: usize) -> bool {
    let request = hyper::Request::post(path)
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    sender.ready().await.unwrap();
    let response = sender.send_request(request).await.unwrap();
    let ok = response.status() == 200;
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let v: Value = serde_json::from_slice(&body).unwrap_or_default();
    ok && v["response"]["allowed"] == true && v["response"]["uid"] == format!("uid-{k}")
}

struct Run {
    latencies: Vec<Duration>,
    wrong: usize,
    elapsed: Duration,
    cpu_stat: Duration,
    cpu_sched: Duration,
    /// This process's (the load generator's) utime+stime.
    cpu_load: Duration,
}

/// Pod reviews to the target's webhooks at `rate`/s for `secs`.
async fn load(target: &Target, rate: f64, secs: f64, connections: usize) -> Run {
    let mut tasks_senders = Vec::new();
    for _ in 0..connections {
        let mut senders = Vec::new();
        for _ in &target.paths {
            senders.push(connect(target.port, &target.ca).await);
        }
        tasks_senders.push(senders);
    }
    let total = (rate * secs) as usize;
    let pid = target.pid;
    let (stat0, sched0) = (procs::cpu(pid), procs::cpu_ns(pid));
    let load0 = procs::cpu(std::process::id());
    let started = tokio::time::Instant::now() + Duration::from_millis(5);
    let paths = Arc::new(target.paths.clone());
    let tasks: Vec<_> = tasks_senders
        .into_iter()
        .enumerate()
        .map(|(c, mut senders)| {
            let paths = paths.clone();
            tokio::spawn(async move {
                let (mut out, mut wrong) = (Vec::new(), 0);
                for k in (c..total).step_by(connections) {
                    let body = review(k);
                    tokio::time::sleep_until(started + Duration::from_secs_f64(k as f64 / rate)).await;
                    let sent = Instant::now();
                    let answers = futures::future::join_all(
                        senders
                            .iter_mut()
                            .zip(paths.iter())
                            .map(|(s, p)| ask(s, p, body.clone(), k)),
                    )
                    .await;
                    out.push(sent.elapsed());
                    wrong += answers.iter().filter(|ok| !**ok).count();
                }
                (out, wrong)
            })
        })
        .collect();
    let (mut latencies, mut wrong) = (Vec::with_capacity(total), 0);
    for t in tasks {
        let (l, w) = t.await.unwrap();
        latencies.extend(l);
        wrong += w;
    }
    let elapsed = started.elapsed();
    latencies.sort();
    Run {
        latencies,
        wrong,
        elapsed,
        cpu_stat: procs::cpu(pid).saturating_sub(stat0),
        cpu_sched: procs::cpu_ns(pid).saturating_sub(sched0),
        cpu_load: procs::cpu(std::process::id()).saturating_sub(load0),
    }
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    match sorted.is_empty() {
        true => Duration::ZERO,
        false => sorted[((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1],
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

async fn ca_from(sim: &Sim, secret: &str) -> String {
    let secrets: Api<Secret> = Api::namespaced(sim.client(), "default");
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(s) = secrets.get_opt(secret).await.unwrap()
            && let Some(crt) = s.data.as_ref().and_then(|d| d.get("ca.crt"))
        {
            return String::from_utf8(crt.0.clone()).unwrap();
        }
        assert!(Instant::now() < deadline, "no CA in {secret}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The CPU `pid` spends until it spends less than one tick in `quiet`:
/// (CPU, when it went quiet).
async fn until_idle(pid: u32, since: Instant, quiet: Duration) -> (Duration, Duration) {
    let mut last = procs::cpu(pid);
    loop {
        tokio::time::sleep(quiet).await;
        let now = procs::cpu(pid);
        if now.saturating_sub(last) <= Duration::from_millis(10) {
            return (now, since.elapsed().saturating_sub(quiet));
        }
        last = now;
    }
}

struct Target {
    name: &'static str,
    /// The webhooks a Pod review is sent to (their paths).
    paths: Vec<String>,
    port: u16,
    ca: String,
    /// The serving wink's.
    pid: u32,
}

/// The component of the crate `crate_name`: from `LIBRARY_COMPONENTS`
/// when set, else built from the workspace.
fn component(crate_name: &str) -> PathBuf {
    match std::env::var_os("LIBRARY_COMPONENTS") {
        Some(dir) => common::root().join(dir).join(format!("{crate_name}.wasm")),
        None => common::plugin(crate_name),
    }
}

/// A plugin directory with `policies` and their configs.
fn plugins(dir: &Path, name: &str, policies: &[&str]) -> PathBuf {
    let out = dir.join(format!("plugins-{name}"));
    std::fs::create_dir_all(&out).unwrap();
    for p in policies {
        let crate_name = p.replace('-', "_");
        std::fs::copy(component(&crate_name), out.join(format!("{p}.wasm"))).unwrap();
        let config = match *p {
            "pod-security" => Some(
                json!({"defaults": {"enforce": "restricted", "audit": "restricted", "warn": "restricted"}}),
            ),
            "allowed-registries" => Some(json!({"registries": ["registry.example.com/"]})),
            _ => None,
        };
        if let Some(c) = config {
            std::fs::write(out.join(format!("{p}.json")), c.to_string()).unwrap();
        }
    }
    out
}

async fn bench() {
    let pods = env_num("LIBRARY_PODS", 10_000);
    let rate = env_num("LIBRARY_RATE", 1000) as f64;
    let secs = env_num("LIBRARY_SECONDS", 10) as f64;
    let connections = env_num("LIBRARY_CONNECTIONS", 8);
    let wink_bin = match std::env::var_os("LIBRARY_WINK_BIN") {
        Some(bin) => common::root().join(bin),
        None => common::wink_bin().to_path_buf(),
    };
    if std::env::var_os("LIBRARY_COMPONENTS").is_none() {
        common::plugins_dir();
    }
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    for n in 0..NAMESPACES {
        sim.insert(
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("team-{n}")}}),
        )
        .unwrap();
    }
    for i in 0..pods {
        sim.insert(pod(&format!("pod-{i:06}"), &format!("team-{}", i % NAMESPACES)))
            .unwrap();
    }
    let dir = common::scratch("bench-library");
    let kubeconfig = dir.join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).unwrap();
    let grants = dir.join("grants.yaml");
    std::fs::write(
        &grants,
        "plugins:\n  require-labels:\n    events: true\n    writes: [{apiVersion: apps/v1, kind: Deployment, verbs: [patch]}]\n",
    )
    .unwrap();

    println!(
        "\nThe policy library: {pods} Pods in {NAMESPACES} namespaces, every one passing every policy\n"
    );
    // pod-security alone: its start (every Pod's results), one update.
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let url = format!("https://{addr}");
    let started = Instant::now();
    // (Its configurations are not written: the library's are.)
    let alone = Daemon::run(
        &wink_bin,
        &plugins(&dir, "alone", &["pod-security"]),
        &kubeconfig,
        &[
            "--admission-addr",
            &addr,
            "--admission-webhook-url",
            &url,
            "--admission-configurations=false",
        ]
        .map(String::from),
    );
    alone.wait_for_line("plugin synced plugin=pod-security", WAIT);
    let synced = started.elapsed();
    let (cpu, idle_at) = until_idle(alone.pid(), started, Duration::from_secs(2)).await;
    println!(
        "pod-security on start (compiling it, listing, a result on each of {pods} Pods, the reports written): synced in {synced:.1?}, idle after {idle_at:.1?}, CPU {:.0} ms ({:.0} µs per Pod)",
        ms(cpu),
        cpu.as_secs_f64() * 1e6 / pods as f64
    );
    let before = procs::cpu_ns(alone.pid());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = procs::cpu_ns(alone.pid()).saturating_sub(before);
    let api: Api<Pod> = Api::namespaced(sim.client(), "team-0");
    let before = procs::cpu_ns(alone.pid());
    api.patch(
        "pod-000000",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}})),
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let update = procs::cpu_ns(alone.pid()).saturating_sub(before);
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "pod-security, one Pod updated (its result given and its report written): {:.0} µs of CPU (the 2 s after it {:.0} µs, an idle 2 s before {:.0} µs; scheduler run time)\n",
        us(update) - us(idle),
        us(update),
        us(idle)
    );
    let ca = ca_from(&sim, "wink-admission-ca").await;
    let mut targets = vec![Target {
        name: "pod-security",
        paths: vec!["/admission/pod-security/validate".into()],
        port,
        ca,
        pid: alone.pid(),
    }];

    // Every policy in one wink (its own CA), its configurations written.
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let url = format!("https://{addr}");
    let flags = [
        "--admission-addr",
        &addr,
        "--admission-webhook-url",
        &url,
        "--admission-ca-secret=wink-admission-ca-library",
        "--grants",
        grants.to_str().unwrap(),
    ]
    .map(String::from);
    let started = Instant::now();
    let all = Daemon::run(
        &wink_bin,
        &plugins(&dir, "library", &LIBRARY),
        &kubeconfig,
        &flags,
    );
    for p in LIBRARY {
        all.wait_for_line(&format!("plugin synced plugin={p}"), WAIT);
    }
    let (cpu, idle_at) = until_idle(all.pid(), started, Duration::from_secs(2)).await;
    println!(
        "every policy on start: idle after {idle_at:.1?}, CPU {:.0} ms\n",
        ms(cpu)
    );
    let ca = ca_from(&sim, "wink-admission-ca-library").await;
    // What the API server sends for a Pod, as wink's configuration says:
    // the shared webhook(s) whose rules and namespace selector take it;
    // and, to compare in the same run, one request per plugin in them, as
    // when each plugin had a webhook of its own.
    let shared = pod_webhooks(&sim, "team-0", &POD_POLICIES).await;
    for n in 1..NAMESPACES {
        let same = pod_webhooks(&sim, &format!("team-{n}"), &POD_POLICIES).await;
        assert_eq!(same, shared, "every team namespace is sent the same webhooks");
    }
    // (Of the shared webhook's plugins, those whose own rules take Pods.)
    let own: Vec<String> = one_per_plugin(&shared)
        .into_iter()
        .filter(|p| POD_POLICIES.iter().any(|x| p.split('/').nth(2) == Some(x)))
        .collect();
    println!("a Pod review is sent to {shared:?}, or, one webhook per plugin, to {own:?}\n");
    let mut policies = own.clone();
    policies.sort();
    let mut expected: Vec<String> = POD_POLICIES
        .iter()
        .filter(|p| **p != "disallow-default-namespace")
        .map(|p| format!("/admission/{p}/validate"))
        .collect();
    expected.sort();
    assert_eq!(policies, expected, "the policies taking Pods outside `default`");
    targets.push(Target {
        name: "library, one webhook per plugin",
        paths: own,
        port,
        ca: ca.clone(),
        pid: all.pid(),
    });
    targets.push(Target {
        name: "library, shared webhook",
        paths: shared,
        port,
        ca,
        pid: all.pid(),
    });

    println!(
        "| target | webhooks per review | reviews | wrong | achieved/s | p50 ms | p99 ms | max ms | CPU µs/review (stat) | (sched) | load generator CPU µs/review | goal p99 ≤ 1 ms at 1,000/s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for t in &targets {
        let r = load(t, rate, secs, connections).await;
        let n = r.latencies.len();
        let per = |d: Duration| d.as_secs_f64() * 1e6 / n.max(1) as f64;
        let p99 = ms(quantile(&r.latencies, 0.99));
        let goal = match (t.name, rate == 1000.0) {
            ("library, shared webhook", true) => {
                if p99 <= 1.0 {
                    "met"
                } else {
                    "missed"
                }
            }
            _ => "-",
        };
        println!(
            "| {} | {} | {n} | {} | {:.0} | {:.3} | {p99:.3} | {:.3} | {:.1} | {:.1} | {:.1} | {goal} |",
            t.name,
            t.paths.len(),
            r.wrong,
            n as f64 / r.elapsed.as_secs_f64(),
            ms(quantile(&r.latencies, 0.5)),
            ms(*r.latencies.last().unwrap_or(&Duration::ZERO)),
            per(r.cpu_stat),
            per(r.cpu_sched),
            per(r.cpu_load),
        );
    }
    for mut wink in [alone, all] {
        wink.terminate(Duration::from_secs(10));
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
