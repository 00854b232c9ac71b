//! Admission round-trip benchmark: wink answering AdmissionReviews from its
//! informer cache against a native Rust webhook answering the same from a
//! kube-runtime reflector store, both over HTTPS (hyper + tokio-rustls).
//!
//! The simulated API server (in this process) holds 100,000 Pods across
//! 100 namespaces (`app` labels `a0`..`a9`, 100 Pods each per namespace).
//! The targets, each a process of its own:
//!   - wink (`target/debug/wink`, as the other benchmarks that run the
//!     daemon) with the `service-selector-guard` example plugin, its webhook
//!     server on `--admission-addr`: each request decodes the Service and
//!     lists the Pods of its namespace matching its selector from the cache;
//!   - wink-python, wink-js (with `ADMISSION_PLUGINS`): the same, each a wink
//!     of its own loading the Python or TypeScript translation of the
//!     example (`plugins/python/service-selector-guard`,
//!     `plugins/js/service-selector-guard`), built from source as the
//!     languages benchmark builds them (the tools from PyPI and npm into
//!     `target/lang-tools` when missing); each has a CA Secret of its own
//!     and leaves the webhook configurations to the Rust plugin's wink;
//!   - native: this benchmark's own binary re-executed
//!     (`ADMISSION_BENCH_ROLE=native`): a kube-runtime reflector of Pods and
//!     hyper's HTTP/1.1 server on wink's own TLS configuration
//!     (`wink::admission::server::tls_config`), answering with the first Pod
//!     of the namespace that matches (`Store::find`: kube's store has no
//!     index, so a Service selecting nothing scans every cached Pod);
//!   - indexed: the same process, which also keeps the Pods of each
//!     namespace from the reflector's events (the index a kube-runtime
//!     webhook would add) and looks only at the request's namespace.
//!
//! The load generator (this process) POSTs AdmissionReviews of Services over
//! keep-alive connections (`ADMISSION_CONNECTIONS`, 8), paced (each
//! connection sends at its due times, open loop), half of them selecting
//! Pods (allowed) and half selecting none (denied); every answer is checked.
//! Latency runs from a request's send to its answer's last byte.
//! CPU per request is the serving process's utime+stime from
//! `/proc/PID/stat` (10 ms ticks) over the paced window, and the
//! scheduler's run time of its live threads (`schedstat`, ns) beside it.
//! The first wink's resident memory is read synced without
//! `--admission-addr`, synced with it, and after the load.
//! Run: `cargo bench -p wink-e2e --bench admission`; the three languages:
//! `ADMISSION_PLUGINS=rust,python,js ADMISSION_RATES=100 cargo bench -p
//! wink-e2e --bench admission`.
//!
//! Environment: `ADMISSION_SECONDS` (10), `ADMISSION_RATES` (`100,1000`),
//! `ADMISSION_REPEATS` (3), `ADMISSION_PODS` (100000),
//! `ADMISSION_CONNECTIONS` (8), `ADMISSION_TARGETS` (`wink,native,indexed`;
//! `wink` is every wink of `ADMISSION_PLUGINS`), `ADMISSION_PLUGINS` (`rust`;
//! any of `rust,python,js`: which service-selector-guard each wink target
//! loads, in that order),
//! `ADMISSION_WINK_BIN` (the daemon's binary, relative to the workspace:
//! `target/release/wink` once built; else `target/debug/wink`).

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/lang_support/mod.rs"]
mod lang_support;
#[path = "admission/native.rs"]
mod native;
#[path = "paced/procs.rs"]
#[allow(dead_code)]
mod procs;
#[path = "admission/winks.rs"]
mod winks;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wink_sim::{Sim, SimConfig};
use winks::Daemon;

const WAIT: Duration = Duration::from_secs(300);
const NAMESPACES: usize = 100;
const APPS: usize = 10;
const NATIVE_CA: &str = "bench-native-ca";

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn main() {
    if std::env::var("ADMISSION_BENCH_ROLE").as_deref() == Ok("native") {
        let args: Vec<String> = std::env::args().collect();
        runtime().block_on(native::native(
            &args[1],
            args[2].parse().unwrap(),
            args[3] == "indexed",
        ));
        return;
    }
    runtime().block_on(bench());
}

// ---- the load generator ------------------------------------------------

fn review(k: usize) -> (String, bool) {
    let allowed = k.is_multiple_of(2);
    let app = if allowed {
        format!("a{}", (k / 2) % APPS)
    } else {
        "none".into()
    };
    let ns = format!("ns-{}", (k / 3) % NAMESPACES);
    let body = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": format!("uid-{k}"),
        "kind": {"group": "", "version": "v1", "kind": "Service"},
        "resource": {"group": "", "version": "v1", "resource": "services"},
        "requestKind": {"group": "", "version": "v1", "kind": "Service"},
        "requestResource": {"group": "", "version": "v1", "resource": "services"},
        "name": format!("svc-{k}"), "namespace": ns, "operation": "CREATE",
        "userInfo": {"username": "bench", "groups": ["system:authenticated"]},
        "object": {"apiVersion": "v1", "kind": "Service", "metadata": {"name": format!("svc-{k}"), "namespace": ns},
                   "spec": {"selector": {"app": app}, "ports": [{"port": 80, "protocol": "TCP"}]}},
        "oldObject": null, "dryRun": false,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
    }})
    .to_string();
    (body, allowed)
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

async fn connect(port: u16, ca: &str) -> Sender {
    let mut roots = rustls::RootCertStore::empty();
    {
        use rustls::pki_types::pem::PemObject;
        for cert in rustls::pki_types::CertificateDer::pem_slice_iter(ca.as_bytes()) {
            roots.add(cert.unwrap()).unwrap();
        }
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
        .expect("a TLS handshake trusting the CA");
    let (sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    sender
}

/// One request: its latency, and whether the answer was the expected one.
async fn ask(sender: &mut Sender, path: &str, body: String, allowed: bool, uid: usize) -> (Duration, bool) {
    let request = hyper::Request::post(path)
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let sent = Instant::now();
    sender.ready().await.unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let took = sent.elapsed();
    let v: Value = serde_json::from_slice(&body).unwrap_or_default();
    let ok =
        status == 200 && v["response"]["allowed"] == allowed && v["response"]["uid"] == format!("uid-{uid}");
    (took, ok)
}

struct Run {
    latencies: Vec<Duration>,
    wrong: usize,
    elapsed: Duration,
    cpu_stat: Duration,
    cpu_sched: Duration,
}

/// `rate` requests/s for `secs` over `connections` keep-alive connections.
async fn load(port: u16, ca: &str, path: &str, pid: u32, rate: f64, secs: f64, connections: usize) -> Run {
    let mut senders = Vec::new();
    for _ in 0..connections {
        senders.push(connect(port, ca).await);
    }
    // Warm each connection.
    for (c, s) in senders.iter_mut().enumerate() {
        let (body, allowed) = review(c);
        ask(s, path, body, allowed, c).await;
    }
    let total = (rate * secs) as usize;
    let (stat0, sched0) = (procs::cpu(pid), procs::cpu_ns(pid));
    let started = tokio::time::Instant::now() + Duration::from_millis(5);
    let tasks: Vec<_> = senders
        .into_iter()
        .enumerate()
        .map(|(c, mut sender)| {
            let path = path.to_string();
            tokio::spawn(async move {
                let mut out = Vec::new();
                let mut wrong = 0;
                for k in (c..total).step_by(connections) {
                    let (body, allowed) = review(k);
                    tokio::time::sleep_until(started + Duration::from_secs_f64(k as f64 / rate)).await;
                    let (took, ok) = ask(&mut sender, &path, body, allowed, k).await;
                    out.push(took);
                    wrong += usize::from(!ok);
                }
                (out, wrong)
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(total);
    let mut wrong = 0;
    for t in tasks {
        let (l, w) = t.await.unwrap();
        latencies.extend(l);
        wrong += w;
    }
    let elapsed = started.elapsed();
    let (stat1, sched1) = (procs::cpu(pid), procs::cpu_ns(pid));
    latencies.sort();
    Run {
        latencies,
        wrong,
        elapsed,
        cpu_stat: stat1.saturating_sub(stat0),
        cpu_sched: sched1.saturating_sub(sched0),
    }
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1]
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

fn rss_mib(pid: u32) -> f64 {
    procs::status_bytes(pid, "VmRSS") as f64 / (1024.0 * 1024.0)
}

// ---- the benchmark -----------------------------------------------------

async fn bench() {
    let secs = env_num("ADMISSION_SECONDS", 10) as f64;
    let repeats = env_num("ADMISSION_REPEATS", 3);
    let pods = env_num("ADMISSION_PODS", 100_000);
    let connections = env_num("ADMISSION_CONNECTIONS", 8);
    let rates: Vec<f64> = std::env::var("ADMISSION_RATES")
        .unwrap_or_else(|_| "100,1000".into())
        .split(',')
        .filter_map(|r| r.trim().parse().ok())
        .collect();
    // Built before anything is timed.
    let guards = winks::guards();
    let wink_bin = winks::wink_binary();

    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let t = Instant::now();
    for n in 0..NAMESPACES {
        let _ = sim.insert(
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("ns-{n}")}}),
        );
    }
    for i in 0..pods {
        let ns = i % NAMESPACES;
        let app = (i / NAMESPACES) % APPS;
        sim.insert(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("pod-{i:06}"), "namespace": format!("ns-{ns}"),
                "labels": {"app": format!("a{app}"), "tier": "web", "shard": format!("s{}", i % 16)}},
            "spec": {"containers": [{"name": "c", "image": "registry.example.com/app:v1"}], "nodeName": format!("node-{}", i % 50)},
            "status": {"phase": "Running"}}))
            .unwrap();
    }
    eprintln!(
        "{pods} pods in {NAMESPACES} namespaces inserted in {:.1?}",
        t.elapsed()
    );

    let dir = common::scratch("bench-admission");
    let kubeconfig = dir.join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).unwrap();
    let synced = "plugin synced plugin=service-selector-guard";
    let plugins_of = |g: &winks::Guard| {
        let plugins = dir.join(format!("plugins-{}", g.target));
        std::fs::create_dir_all(&plugins).unwrap();
        std::fs::copy(&g.component, plugins.join("guard.wasm")).unwrap();
        plugins
    };

    // wink's resident memory synced without the webhook server, then with
    // it (the first plugin's wink).
    let rss_plain = {
        let mut wink = Daemon::run(&wink_bin, &plugins_of(&guards[0]), &kubeconfig, &[]);
        wink.wait_for_line(synced, WAIT);
        tokio::time::sleep(Duration::from_secs(2)).await;
        let rss = rss_mib(wink.pid());
        wink.terminate(Duration::from_secs(10));
        rss
    };
    // One wink per plugin, each serving on a port of its own.
    let mut winks = Vec::new();
    for g in &guards {
        let port = free_port();
        let flags = g.flags(&format!("127.0.0.1:{port}"), &format!("https://127.0.0.1:{port}"));
        let t = Instant::now();
        let wink = Daemon::run(&wink_bin, &plugins_of(g), &kubeconfig, &flags);
        wink.wait_for_line(synced, WAIT);
        wink.wait_for_line("admission webhook server listening", WAIT);
        eprintln!("{} synced and serving in {:.1?}", g.target, t.elapsed());
        winks.push((g.target, port, ca_from(&sim, g.ca_secret).await, wink));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss_admission = rss_mib(winks[0].3.pid());

    let wanted: Vec<String> = std::env::var("ADMISSION_TARGETS")
        .unwrap_or_else(|_| "wink,native,indexed".into())
        .split(',')
        .map(|t| t.trim().to_string())
        .collect();
    let mut natives = Vec::new();
    for variant in ["native", "indexed"] {
        if !wanted.iter().any(|w| w == variant) {
            continue;
        }
        let port = free_port();
        let t = Instant::now();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env("ADMISSION_BENCH_ROLE", "native")
            .args([kubeconfig.to_str().unwrap(), &port.to_string(), variant])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let ready = lines.next().expect("the native webhook answers").unwrap();
        assert!(ready.starts_with("ready"), "{ready}");
        eprintln!(
            "{variant} webhook synced and serving in {:.1?} ({ready})",
            t.elapsed()
        );
        natives.push((variant, port, child));
    }
    // Its CA exists only once a native webhook has started.
    let native_ca = match natives.is_empty() {
        true => String::new(),
        false => ca_from(&sim, NATIVE_CA).await,
    };

    let mut targets = Vec::new();
    if wanted.iter().any(|w| w == "wink") {
        for (target, port, ca, wink) in &winks {
            targets.push((
                *target,
                *port,
                ca.as_str(),
                "/admission/service-selector-guard/validate",
                wink.pid(),
            ));
        }
    }
    for (variant, port, child) in &natives {
        targets.push((*variant, *port, native_ca.as_str(), "/validate", child.id()));
    }
    let reads = || {
        ["pods", "services"]
            .iter()
            .map(|r| sim.request_count("list", r) + sim.request_count("get", r))
            .sum::<u64>()
    };
    let reads_before = reads();

    println!(
        "\nAdmission round trip: {pods} cached Pods in {NAMESPACES} namespaces, {secs} s per run, {connections} keep-alive HTTPS connections, half allowed / half denied\n"
    );
    println!(
        "| rate/s | target | run | requests | wrong | achieved/s | p50 ms | p99 ms | max ms | CPU µs/req (stat) | CPU µs/req (sched) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    // (rate, target) -> per-run (p99, cpu per request, sched cpu per request)
    let mut results: Vec<(f64, &str, usize, f64, f64, f64)> = Vec::new();
    for &rate in &rates {
        for run in 1..=repeats {
            for &(name, port, ca, path, pid) in &targets {
                let r = load(port, ca, path, pid, rate, secs, connections).await;
                let n = r.latencies.len();
                let per = |d: Duration| d.as_secs_f64() * 1e6 / n.max(1) as f64;
                println!(
                    "| {rate} | {name} | {run} | {n} | {} | {:.0} | {:.3} | {:.3} | {:.3} | {:.1} | {:.1} |",
                    r.wrong,
                    n as f64 / r.elapsed.as_secs_f64(),
                    ms(quantile(&r.latencies, 0.5)),
                    ms(quantile(&r.latencies, 0.99)),
                    ms(*r.latencies.last().unwrap_or(&Duration::ZERO)),
                    per(r.cpu_stat),
                    per(r.cpu_sched),
                );
                results.push((
                    rate,
                    name,
                    run,
                    ms(quantile(&r.latencies, 0.99)),
                    per(r.cpu_stat),
                    per(r.cpu_sched),
                ));
            }
        }
    }
    let rss_after = rss_mib(winks[0].3.pid());
    let api_reads = reads() - reads_before;

    println!(
        "\n| rate/s | run | wink | against | wink/native CPU per request (stat) | (sched) | wink p99 ms | goal p99 (Rust ≤ 2 ms at 1,000/s; Python, JS ≤ 5 ms at 100/s) | goal CPU ≤ 1.5× (Rust) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for &rate in &rates {
        for run in 1..=repeats {
            for (wink, _, _, _) in &winks {
                for (against, _, _) in &natives {
                    let get = |t: &str| results.iter().find(|r| r.0 == rate && r.1 == t && r.2 == run);
                    let (Some(w), Some(nat)) = (get(wink), get(against)) else {
                        continue;
                    };
                    let ratio = w.4 / nat.4;
                    let met = |ok: bool| if ok { "met" } else { "missed" };
                    let rust = *wink == "wink";
                    let p99_goal = match (rust, rate) {
                        (true, 1000.0) => met(w.3 <= 2.0),
                        (false, 100.0) => met(w.3 <= 5.0),
                        _ => "-",
                    };
                    println!(
                        "| {rate} | {run} | {wink} | {against} | {ratio:.2} | {:.2} | {:.3} | {p99_goal} | {} |",
                        w.5 / nat.5,
                        w.3,
                        if rust { met(ratio <= 1.5) } else { "-" }
                    );
                }
            }
        }
    }
    println!(
        "\n{} resident memory (MiB): synced without --admission-addr {rss_plain:.1}, synced with it {rss_admission:.1}, after the load {rss_after:.1}",
        winks[0].0
    );
    println!("reads of Pods or Services at the API server during the load (every target): {api_reads}");
    for (_, _, mut child) in natives {
        let _ = child.kill();
        let _ = child.wait();
    }
    for (_, _, _, mut wink) in winks {
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
