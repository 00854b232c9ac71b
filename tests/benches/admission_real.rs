//! Admission as a real kube-apiserver sees it: what wink's webhook adds to
//! a Pod create. A real kube-apiserver and etcd (the `envtest` harness,
//! `KUBEBUILDER_ASSETS`; without it the benchmark says so and stops), wink
//! (the release build) serving the `pod-security` example's webhook on
//! loopback, and sequential Pod creates through the kube client:
//!   - enforced: in a namespace the webhook sees (each create waits for
//!     wink's answer);
//!   - exempt: in wink's own namespace, which the webhook configuration
//!     leaves out (the same creates, wink running, no call).
//!
//! The two alternate in rounds of 50, so the machine's drift falls on both.
//! Reported per repeat: each target's mean, p50 and p99 create latency, the
//! added latency (enforced - exempt: mean and p99), the API server's own
//! time per webhook call (`apiserver_admission_webhook_admission_duration_seconds`,
//! sum / count over the run) and wink's (`wink_admission_request_seconds`),
//! and the tail attributed: how many enforced creates took over 25 ms, and
//! how many webhook calls did as the API server and as wink timed them,
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

/// `name`'s `_sum` and `_count` summed over its series in `text`.
fn histogram(text: &str, name: &str) -> (f64, f64) {
    let total = |suffix: &str| {
        text.lines()
            .filter(|l| l.starts_with(&format!("{name}{suffix}")))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>()
    };
    (total("_sum"), total("_count"))
}

/// How many observations of the histogram `name` in `text` (summed over
/// its series) exceed `le` seconds: `_count` less the `le` bucket.
fn above(text: &str, name: &str, le: &str) -> f64 {
    let bucket = format!("le=\"{le}\"");
    let bucketed: f64 = text
        .lines()
        .filter(|l| l.starts_with(&format!("{name}_bucket")) && l.contains(&bucket))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    histogram(text, name).1 - bucketed
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
    for ns in ["wink-system", "enforced"] {
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
    println!(
        "admission on a real kube-apiserver: {creates} sequential Pod creates per target, {repeats} repeats"
    );
    for repeat in 0..repeats {
        let (api_before, wink_before) = (raw_metrics(&client).await, admin_metrics(&admin).await);
        let mut times: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
        for round in 0..creates.div_ceil(50) {
            for (t, ns) in ["enforced", "wink-system"].iter().enumerate() {
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
        let (e, x) = (stats(&mut times[0]), stats(&mut times[1]));
        let per_call = |before: &str, after: &str, name: &str| {
            let ((s0, c0), (s1, c1)) = (histogram(before, name), histogram(after, name));
            if c1 > c0 {
                (s1 - s0) / (c1 - c0) * 1e3
            } else {
                f64::NAN
            }
        };
        let api_call = per_call(
            &api_before,
            &api_after,
            "apiserver_admission_webhook_admission_duration_seconds",
        );
        let wink_call = per_call(&wink_before, &wink_after, "wink_admission_request_seconds");
        // The tail, attributed: calls over 25 ms as the API server timed
        // them, as wink timed them (from the request read to the answer),
        // and enforced creates over 25 ms.
        let over = |before: &str, after: &str, name: &str| {
            above(after, name, "0.025") - above(before, name, "0.025")
        };
        let api_slow = over(
            &api_before,
            &api_after,
            "apiserver_admission_webhook_admission_duration_seconds",
        );
        let wink_slow = over(&wink_before, &wink_after, "wink_admission_request_seconds");
        let creates_slow = times[0].iter().filter(|&&ms| ms > 25.0).count();
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
             added mean {:+.2} p99 {:+.2} ms | API server per call {api_call:.3} ms | wink per request {wink_call:.3} ms | \
             over 25 ms: {creates_slow} enforced creates, {api_slow} webhook calls as the API server timed them, {wink_slow} as wink did | \
             connections opened {opened} (TLS handshake {handshake:.3} ms)",
            e.0,
            e.1,
            e.2,
            x.0,
            x.1,
            x.2,
            e.0 - x.0,
            e.2 - x.2
        );
    }
    drop(wink);
}
