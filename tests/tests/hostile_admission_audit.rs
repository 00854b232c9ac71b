//! Audit mode's policy results under forged reviews posted straight to the
//! webhook port. Real results come from the simulated API server's own
//! webhook calls (from `127.0.0.1`) about Pods it creates; forged reviews
//! about made-up Pods come from other loopback addresses. One address
//! records at most its burst (256) and then its rate (32 a second): the
//! rest of its reviews are answered (allowed, with the plugin's warning)
//! but leave no result, and `wink_admission_audit_results_dropped_total`
//! counts them. Many addresses together fill the trail (4096 results), and
//! then give up their own results, never those about Pods that exist (a
//! plugin watching Pods keeps them in the informer cache).

use crate::admin::sample;
use crate::admission::{ca_pem, pod, run};
use crate::cache_support::*;
use crate::report_support::{reports, rows};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use wink_sim::{Sim, SimConfig};

/// The per-address burst and rate of audit results (the runtime's).
const BURST: usize = 256;
const RATE: f64 = 32.0;
/// The most results one plugin's trail holds.
const MAX_HELD: usize = 4096;

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// A kept-alive HTTPS connection to the webhook server from `from`.
async fn connect_from(from: &str, port: u16, ca: &str) -> Sender {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    let tcp = socket.connect(([127, 0, 0, 1], port).into()).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let tls = crate::admission::support::handshake(tcp, ca).await;
    let (sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    sender
}

/// The namespace of every Pod here: not wink's own (`default`), which its
/// webhooks leave out.
const NS: &str = "apps";

/// Pod `name` of [`NS`], labelled to be denied.
fn denied_pod(name: &str) -> Value {
    let mut p = pod(name, json!({"deny": "1"}));
    p["metadata"]["namespace"] = json!(NS);
    p
}

/// A forged review of the CREATE of Pod `name` (labelled to be denied).
fn forged(uid: &str, name: &str) -> String {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": uid,
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "name": name, "namespace": NS, "operation": "CREATE",
        "userInfo": {"username": "mallory"},
        "object": denied_pod(name), "dryRun": false}})
    .to_string()
}

/// Post `count` forged reviews named `{prefix}-{i}` over one connection
/// from `from`; each must be answered allowed with the plugin's warning.
async fn flood(from: &str, port: u16, ca: &str, prefix: &str, count: usize) {
    let mut sender = connect_from(from, port, ca).await;
    for i in 0..count {
        let name = format!("{prefix}-{i}");
        let request = hyper::Request::post("/admission/audited/validate")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(forged(&format!("uid-{name}"), &name))))
            .unwrap();
        sender.ready().await.unwrap();
        let response = sender.send_request(request).await.unwrap();
        assert_eq!(response.status(), 200);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let r: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(r["response"]["allowed"], true, "{r}");
        assert!(
            r["response"]["warnings"].to_string().contains("would deny"),
            "the plugin answered: {r}"
        );
    }
}

/// wink with `audited` (admit-probe in audit mode, its webhook
/// configurations kept, so the simulator calls it) and `pods` (a plugin
/// watching every Pod); `real` Pods labelled to be denied created through
/// the simulator, each with its result in the reports.
async fn start(sim: &Sim, test: &str, admin: &str, real: usize) -> (Setup, crate::common::Wink, u16, String) {
    let s = Setup::new(test, sim);
    s.install("admit_probe", "audited", None);
    let watch = json!({"watches": [{"api_version": "v1", "kind": "Pod"}], "reads": [],
                       "trigger": "never", "queries": []});
    s.install("cache_probe", "pods", Some(&watch));
    let grants = s.plugins.parent().unwrap().join("grants.yaml");
    std::fs::write(&grants, "plugins:\n  audited:\n    mode: audit\n").unwrap();
    let port = free_port();
    let args = [
        "--grants",
        grants.to_str().unwrap(),
        "--report-batch-ms",
        "50",
        "--admin-addr",
        admin,
    ];
    let wink = run(&s, port, &args);
    wait_synced(&wink, "audited");
    wait_synced(&wink, "pods");
    let ca = ca_pem(sim).await;
    crate::admission::support::configured_url(sim, &wink, &format!("https://127.0.0.1:{port}")).await;
    namespace(sim, NS).await;
    let pods: Api<Pod> = Api::namespaced(sim.client(), NS);
    for i in 0..real {
        let p: Pod = serde_json::from_value(denied_pod(&format!("real-{i}"))).unwrap();
        pods.create(&PostParams::default(), &p).await.unwrap();
    }
    let want: Vec<String> = (0..real).map(|i| format!("real-{i}")).collect();
    let got = until_names(sim, |names| want.iter().all(|w| names.contains(w))).await;
    assert_eq!(got.len(), real, "only the real results: {got:?}");
    (s, wink, port, ca)
}

/// The subjects of `audited`'s results, once `ok` holds of them.
async fn until_names(sim: &Sim, ok: impl Fn(&[String]) -> bool) -> Vec<String> {
    let deadline = Instant::now() + WAIT;
    loop {
        let names: Vec<String> = rows(&reports(sim).await)
            .into_iter()
            .filter(|r| r.2 == "audited")
            .map(|r| r.1)
            .collect();
        if ok(&names) {
            return names;
        }
        assert!(
            Instant::now() < deadline,
            "reports never as wanted: {} results",
            names.len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn dropped(admin: &str, reason: &str) -> f64 {
    let (status, text) = http(admin, "GET", "/metrics").await;
    assert_eq!(status, 200);
    let labels = [("plugin", "audited"), ("reason", reason)];
    sample(&text, "wink_admission_audit_results_dropped_total", &labels).unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_reviews_from_one_address_record_its_burst_and_real_results_stay() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let admin = format!("127.0.0.1:{}", free_port());
    let (_s, wink, port, ca) = start(&sim, "hostile_audit_rate", &admin, 5).await;
    assert_eq!(
        dropped(&admin, "rate").await,
        0.0,
        "the API server's results all recorded"
    );

    let sent = 1500;
    let started = Instant::now();
    flood("127.0.0.2", port, &ca, "forged", sent).await;
    let took = started.elapsed().as_secs_f64();
    let dropped = dropped(&admin, "rate").await as usize;
    // Every forged review was answered; those past the address's bucket
    // left no result, and were counted.
    let names = until_names(&sim, |n| {
        n.iter().filter(|n| n.starts_with("forged-")).count() + dropped >= sent
    })
    .await;
    let recorded = names.iter().filter(|n| n.starts_with("forged-")).count();
    assert_eq!(recorded + dropped, sent, "recorded {recorded}, dropped {dropped}");
    let most = BURST + (RATE * took).ceil() as usize + 1;
    assert!(
        (BURST..=most).contains(&recorded),
        "{recorded} results from one address in {took:.1} s (at most {most})"
    );
    for i in 0..5 {
        assert!(names.contains(&format!("real-{i}")), "real-{i} lost: {names:?}");
    }
    assert!(
        wink.lines()
            .iter()
            .any(|l| l.contains("audit results from 127.0.0.2 over its rate")),
        "the drop is said"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_results_from_many_addresses_never_evict_results_about_existing_pods() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let admin = format!("127.0.0.1:{}", free_port());
    let (_s, wink, port, ca) = start(&sim, "hostile_audit_evict", &admin, 5).await;
    // 20 addresses, each within its burst: more forged results than the
    // trail holds, recorded oldest first behind the real ones.
    let floods: Vec<_> = (0..20)
        .map(|a| {
            let ca = ca.clone();
            tokio::spawn(async move {
                let from = format!("127.0.0.{}", 10 + a);
                flood(&from, port, &ca, &format!("forged{a}"), BURST).await
            })
        })
        .collect();
    for f in floods {
        f.await.unwrap();
    }
    assert_eq!(
        dropped(&admin, "rate").await,
        0.0,
        "each address within its burst"
    );
    let names = until_names(&sim, |n| n.len() == MAX_HELD).await;
    for i in 0..5 {
        assert!(
            names.contains(&format!("real-{i}")),
            "real-{i} was evicted by forged results"
        );
    }
    assert_eq!(
        names.iter().filter(|n| n.starts_with("forged")).count(),
        MAX_HELD - 5
    );
    drop(wink);
}
