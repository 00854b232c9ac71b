//! Admission as a real kube-apiserver sees it: what wink's webhook adds to
//! a Pod create. A real kube-apiserver and etcd (the `envtest` harness,
//! `KUBEBUILDER_ASSETS`; without it the benchmark says so and stops), wink
//! (the release build) serving the `pod-security` example's webhook on
//! loopback, and sequential Pod creates through the kube client:
//!   - enforced: in a namespace the webhook sees (each create waits for
//!     wink's answer);
//!   - exempt: in wink's own namespace, which the webhook configuration
//!     leaves out (the same creates, wink running, no call);
//!   - native: in a namespace wink's grants leave out of pod-security's
//!     scope, where a native webhook answers instead: this benchmark's own
//!     binary re-executed (`ADMISSION_BENCH_ROLE=native`), a kube-runtime
//!     reflector of Pods and hyper's HTTP/1.1 server on wink's own TLS
//!     configuration, allowing each Pod after parsing its review (the
//!     admission benchmark's native baseline): what any webhook costs on
//!     this API server, so a tail both share is the API server's or the
//!     machine's, not wink's.
//!
//! The three alternate in rounds of 50, so the machine's drift falls on
//! all.
//! Reported per repeat: each target's mean, p50 and p99 create latency, the
//! added latency (enforced - exempt and native - exempt: mean and p99), the
//! API server's own time per webhook call to wink and to the native webhook
//! (`apiserver_admission_webhook_admission_duration_seconds`, sum / count
//! over the run) and wink's (`wink_admission_request_seconds`), and the
//! tail attributed: how many enforced (and native) creates took over
//! 25 ms, and how many webhook calls did as the API server timed them
//! (wink's and the native webhook's) and as wink timed them,
//! and how many connections the API server opened to wink meanwhile (with
//! their TLS handshakes' mean; `wink_admission_connections_total`).
//! Run: `KUBEBUILDER_ASSETS=... cargo bench -p wink-e2e --bench admission_real`.
//! Environment: `ADMISSION_REAL_CREATES` (300 per target), `ADMISSION_REAL_REPEATS` (3).

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/envtest/mod.rs"]
mod envtest;
#[path = "../tests/kubectl_support/mod.rs"]
#[allow(dead_code)]
mod kubectl_support;
#[path = "admission/native.rs"]
mod native;

/// The Secret (in `default`) holding the native webhook's CA.
const NATIVE_CA: &str = "bench-native-ca";
/// The native webhook's name, as the API server's metrics label it.
const NATIVE_WEBHOOK: &str = "native.bench.wink.dev";

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::json;
use std::time::{Duration, Instant};

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize]
}

/// `name`'s `_sum` and `_count` summed over its series in `text` whose
/// line holds `with` (a label; empty: every series).
fn histogram_where(text: &str, name: &str, with: &str) -> (f64, f64) {
    let total = |suffix: &str| {
        text.lines()
            .filter(|l| l.starts_with(&format!("{name}{suffix}")) && l.contains(with))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>()
    };
    (total("_sum"), total("_count"))
}

/// How many observations of the histogram `name` in `text` (summed over
/// its series) exceed `le` seconds: `_count` less the `le` bucket.
fn above(text: &str, name: &str, le: &str, with: &str) -> f64 {
    let bucket = format!("le=\"{le}\"");
    let bucketed: f64 = text
        .lines()
        .filter(|l| l.starts_with(&format!("{name}_bucket")) && l.contains(&bucket) && l.contains(with))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    histogram_where(text, name, with).1 - bucketed
}

async fn raw_metrics(client: &kube::Client) -> String {
    client
        .request_text(http::Request::get("/metrics").body(Vec::new()).unwrap())
        .await
        .unwrap_or_default()
}

async fn admin_metrics(addr: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::var("ADMISSION_BENCH_ROLE").as_deref() == Ok("native") {
        let kubeconfig = std::env::var("ADMISSION_BENCH_KUBECONFIG").unwrap();
        let port = std::env::var("ADMISSION_BENCH_PORT").unwrap().parse().unwrap();
        return native::native(&kubeconfig, port, false).await;
    }
    let Some(cp) = envtest::ControlPlane::start(&envtest::Options::default()) else {
        return;
    };
    let creates = env_num("ADMISSION_REAL_CREATES", 300);
    let repeats = env_num("ADMISSION_REAL_REPEATS", 3);
    let client = cp.client().await;
    let dir = common::scratch("bench_admission_real");
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(common::plugin("pod_security"), plugins.join("pod-security.wasm")).unwrap();
    for ns in ["wink-system", "enforced", "native"] {
        let ns_obj = serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
        kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns_obj)
            .await
            .unwrap();
        let sa = serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap();
        Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(client.clone(), ns)
            .create(&PostParams::default(), &sa)
            .await
            .unwrap();
    }
    let (port, admin) = (
        envtest::free_port(),
        format!("127.0.0.1:{}", envtest::free_port()),
    );
    let (addr, url) = (format!("127.0.0.1:{port}"), format!("https://127.0.0.1:{port}"));
    // pod-security leaves the native webhook's namespace to it.
    let grants = dir.join("grants.yaml");
    std::fs::write(
        &grants,
        "plugins:\n  pod-security:\n    exclude:\n      namespaces: [native]\n",
    )
    .unwrap();
    let wink = common::Wink::spawn_bin(
        common::wink_release_bin(),
        &dir,
        &[
            "run",
            "--plugins",
            plugins.to_str().unwrap(),
            "--kubeconfig",
            cp.kubeconfig.to_str().unwrap(),
            "--admission-addr",
            &addr,
            "--admission-webhook-url",
            &url,
            "--admission-namespace",
            "wink-system",
            "--admin-addr",
            &admin,
            "--grants",
            grants.to_str().unwrap(),
        ],
        &[],
    );
    wink.wait_for_line("plugin synced plugin=pod-security", Duration::from_secs(120));
    // Until the configuration is in force: a privileged Pod is refused.
    let enforced: Api<Pod> = Api::namespaced(client.clone(), "enforced");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let p = serde_json::from_value(
            json!({"metadata": {"name": format!("probe-{}", rand::random::<u32>())},
            "spec": {"containers": [{"name": "c", "image": "i", "securityContext": {"privileged": true}}]}}),
        )
        .unwrap();
        if enforced.create(&PostParams::default(), &p).await.is_err() {
            break;
        }
        assert!(Instant::now() < deadline, "the webhook never came into force");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let _native = start_native(&client, &cp.kubeconfig).await;
    println!(
        "admission on a real kube-apiserver: {creates} sequential Pod creates per target, {repeats} repeats"
    );
    for repeat in 0..repeats {
        let (api_before, wink_before) = (raw_metrics(&client).await, admin_metrics(&admin).await);
        let mut times: [Vec<f64>; 3] = Default::default();
        for round in 0..creates.div_ceil(50) {
            for (t, ns) in ["enforced", "wink-system", "native"].iter().enumerate() {
                let api: Api<Pod> = Api::namespaced(client.clone(), ns);
                for i in 0..50.min(creates - round * 50) {
                    let name = format!("r{repeat}-{round}-{i}");
                    let p: Pod = serde_json::from_value(
                        json!({"metadata": {"name": name, "labels": {"app": "bench"}},
                        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
                    )
                    .unwrap();
                    let started = Instant::now();
                    api.create(&PostParams::default(), &p).await.unwrap();
                    times[t].push(started.elapsed().as_secs_f64() * 1e3);
                }
            }
        }
        let (api_after, wink_after) = (raw_metrics(&client).await, admin_metrics(&admin).await);
        let stats = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            (mean, quantile(v, 0.5), quantile(v, 0.99))
        };
        let (e, x, n) = (stats(&mut times[0]), stats(&mut times[1]), stats(&mut times[2]));
        let per_call_where = |before: &str, after: &str, name: &str, with: &str| {
            let ((s0, c0), (s1, c1)) = (
                histogram_where(before, name, with),
                histogram_where(after, name, with),
            );
            if c1 > c0 {
                (s1 - s0) / (c1 - c0) * 1e3
            } else {
                f64::NAN
            }
        };
        let per_call = |before: &str, after: &str, name: &str| per_call_where(before, after, name, "");
        let webhook = "apiserver_admission_webhook_admission_duration_seconds";
        let (wink_hook, native_hook) = ("name=\"pod-security.", format!("name=\"{NATIVE_WEBHOOK}\""));
        let api_call = per_call_where(&api_before, &api_after, webhook, wink_hook);
        let native_call = per_call_where(&api_before, &api_after, webhook, &native_hook);
        let wink_call = per_call(&wink_before, &wink_after, "wink_admission_request_seconds");
        // The tail, attributed: calls over 25 ms as the API server timed
        // them, as wink timed them (from the request read to the answer),
        // and enforced creates over 25 ms.
        let over = |before: &str, after: &str, name: &str, with: &str| {
            above(after, name, "0.025", with) - above(before, name, "0.025", with)
        };
        let api_slow = over(&api_before, &api_after, webhook, wink_hook);
        let native_slow = over(&api_before, &api_after, webhook, &native_hook);
        let wink_slow = over(&wink_before, &wink_after, "wink_admission_request_seconds", "");
        let creates_slow = times[0].iter().filter(|&&ms| ms > 25.0).count();
        let native_creates_slow = times[2].iter().filter(|&&ms| ms > 25.0).count();
        // Connections the API server opened to wink over the run, and
        // their handshakes' mean: a client reconnecting per call would
        // show here (one per enforced create).
        let served = |text: &str| {
            text.lines()
                .find(|l| l.starts_with(r#"wink_admission_connections_total{result="served"}"#))
                .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        let opened = served(&wink_after) - served(&wink_before);
        let handshake = per_call(&wink_before, &wink_after, "wink_admission_tls_handshake_seconds");
        println!(
            "repeat {repeat}: enforced mean {:.2} p50 {:.2} p99 {:.2} ms | exempt mean {:.2} p50 {:.2} p99 {:.2} ms | \
             native mean {:.2} p50 {:.2} p99 {:.2} ms | \
             added by wink mean {:+.2} p99 {:+.2} ms | added by the native webhook mean {:+.2} p99 {:+.2} ms | \
             API server per call: wink {api_call:.3} ms, native {native_call:.3} ms | wink per request {wink_call:.3} ms | \
             over 25 ms: {creates_slow} enforced creates and {native_creates_slow} native ones, \
             webhook calls as the API server timed them {api_slow} to wink and {native_slow} to the native webhook, {wink_slow} as wink did | \
             connections wink accepted {opened} (TLS handshake {handshake:.3} ms)",
            e.0,
            e.1,
            e.2,
            x.0,
            x.1,
            x.2,
            n.0,
            n.1,
            n.2,
            e.0 - x.0,
            e.2 - x.2,
            n.0 - x.0,
            n.2 - x.2
        );
    }
    drop(wink);
}

/// Start the native webhook (this binary, re-executed) and register it for
/// the `native` namespace; returns once the API server calls it. The child
/// ends with the returned guard.
async fn start_native(client: &kube::Client, kubeconfig: &std::path::Path) -> NativeChild {
    use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
    use k8s_openapi::api::core::v1::Secret;
    use std::io::BufRead;
    let port = envtest::free_port();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .env("ADMISSION_BENCH_ROLE", "native")
        .env("ADMISSION_BENCH_KUBECONFIG", kubeconfig)
        .env("ADMISSION_BENCH_PORT", port.to_string())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let child = NativeChild(child);
    let ready = tokio::task::spawn_blocking(move || lines.next())
        .await
        .unwrap()
        .expect("the native webhook starts")
        .unwrap();
    assert!(ready.starts_with("ready"), "{ready}");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let ca = secrets.get(NATIVE_CA).await.unwrap().data.unwrap()["ca.crt"]
        .0
        .clone();
    let config: ValidatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": "native-bench"},
        "webhooks": [{
            "name": NATIVE_WEBHOOK,
            "clientConfig": {
                "url": format!("https://127.0.0.1:{port}/validate"),
                "caBundle": k8s_openapi::ByteString(ca),
            },
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}],
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "native"}},
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "failurePolicy": "Fail",
            "timeoutSeconds": 10,
        }]
    }))
    .unwrap();
    Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .create(&PostParams::default(), &config)
        .await
        .unwrap();
    // In force once a create in `native` is timed as a call to it.
    let native: Api<Pod> = Api::namespaced(client.clone(), "native");
    let deadline = Instant::now() + Duration::from_secs(60);
    let calls = |text: &str| {
        histogram_where(
            text,
            "apiserver_admission_webhook_admission_duration_seconds",
            &format!("name=\"{NATIVE_WEBHOOK}\""),
        )
        .1
    };
    loop {
        let p = serde_json::from_value(
            json!({"metadata": {"name": format!("probe-{}", rand::random::<u32>())},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}),
        )
        .unwrap();
        native.create(&PostParams::default(), &p).await.unwrap();
        if calls(&raw_metrics(client).await) > 0.0 {
            return child;
        }
        assert!(
            Instant::now() < deadline,
            "the native webhook never came into force"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The native webhook's process, killed when dropped.
struct NativeChild(std::process::Child);

impl Drop for NativeChild {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
