//! The admission webhook port as untrusted input: anything in the cluster
//! network reaches it. A flood of connections that finish the TLS handshake
//! and send nothing, from one address (here `127.0.0.2`, another loopback
//! address), takes at most that address's share of the listener
//! (`MAX_PER_PEER`, 64 of 256: the rest are closed at once) and each one
//! is closed at the first-request deadline (5 s), while reviews from the
//! API server's address (`127.0.0.1`) are answered throughout. Forged
//! reviews outside a webhook's rules reach no plugin and write no result.
//! Large bodies stalled before their last byte are held within their half
//! of the 64 MiB budget while small reviews are answered. With
//! `--admission-client-ca`, only a client with a certificate it signed is
//! served. A plugin has at most `MAX_ASKING` (32) reviews under way: past
//! them it is answered at once under its failure policy; a client that
//! hangs up before its answer frees its place (its call is dropped), on a
//! plugin's own path and on a shared one.

use crate::admission::{ask, ca_pem};
use crate::cache_support::*;
use serde_json::json;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use wink_sim::{Sim, SimConfig};

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_tls_connections_from_one_address_cannot_lock_out_the_api_server() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("hostile_admission_idle", &sim);
    s.install("admit_probe", "probe", None);
    let port = free_port();
    let wink = crate::admission::support::run(&s, port, &[]);
    wait_synced(&wink, "probe");
    let ca = ca_pem(&sim).await;
    let before = open_fds(wink.pid());

    // 300 connections from 127.0.0.2, each through its handshake (or closed
    // at once past the address's share), then silent.
    let started = Instant::now();
    let mut held = Vec::new();
    let mut refused = 0;
    for _ in 0..300 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
        let tcp = socket.connect(([127, 0, 0, 1], port).into()).await.unwrap();
        let handshake = tokio::time::timeout(
            Duration::from_secs(5),
            crate::admission::support::handshake_result(tcp, &ca),
        )
        .await;
        match handshake {
            Ok(Ok(tls)) => held.push(tls),
            _ => refused += 1,
        }
    }
    let during = open_fds(wink.pid());
    assert!(
        held.len() <= 64 + 8,
        "one address holds at most its share: {} held, {refused} refused",
        held.len()
    );
    assert!(
        during < before + 100,
        "file descriptors: {before} before, {during} during"
    );

    // Reviews from the API server's address are answered meanwhile.
    let review =
        crate::admission::support::review("uid-flood", crate::admission::support::pod("ok", json!({})));
    let mut answered = 0;
    for _ in 0..20 {
        let r = tokio::time::timeout(
            Duration::from_secs(5),
            ask(port, &ca, "/admission/probe/validate", &review),
        )
        .await;
        if r.is_ok_and(|r| r["allowed"] == true) {
            answered += 1;
        }
    }
    assert_eq!(answered, 20, "reviews answered during the flood");

    // The silent ones are closed at the first-request deadline, well
    // before the 120 s keep-alive.
    let mut closed = 0;
    for tls in &mut held {
        let mut one = [0u8; 1];
        let left = Duration::from_secs(15).saturating_sub(started.elapsed());
        match tokio::time::timeout(left.max(Duration::from_millis(10)), tls.read(&mut one)).await {
            Ok(Ok(0)) | Ok(Err(_)) => closed += 1,
            _ => {}
        }
    }
    assert_eq!(closed, held.len(), "every silent connection closed by the server");
    drop(held);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = open_fds(wink.pid());
    assert!(
        after <= before + 8,
        "file descriptors: {before} before, {after} after"
    );
}

/// A review the API server would not have sent the webhook (a resource or
/// operation its rules do not match, or a namespace the configuration
/// leaves out), posted straight to the port, is answered without the
/// plugin: in audit mode it writes no policy result, where a review the
/// rules match does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_reviews_outside_the_webhooks_rules_reach_no_plugin_and_write_no_result() {
    use crate::report_support::{reports, rows};
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("hostile_admission_forged", &sim);
    s.install("admit_probe", "audited", None);
    let grants = s.plugins.parent().unwrap().join("grants.yaml");
    std::fs::write(&grants, "plugins:\n  audited:\n    mode: audit\n").unwrap();
    let port = free_port();
    let wink = crate::admission::support::run(
        &s,
        port,
        &["--grants", grants.to_str().unwrap(), "--report-batch-ms", "50"],
    );
    wait_synced(&wink, "audited");
    let ca = ca_pem(&sim).await;
    let forged = |uid: usize, group: &str, resource: &str, kind: &str, ns: &str, op: &str| {
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
            "uid": format!("forged-{uid}"),
            "kind": {"group": group, "version": "v1", "kind": kind},
            "resource": {"group": group, "version": "v1", "resource": resource},
            "name": format!("made-up-{uid}"), "namespace": ns, "operation": op,
            "userInfo": {"username": "mallory"},
            "object": {"apiVersion": "v1", "kind": kind,
                "metadata": {"name": format!("made-up-{uid}"), "namespace": ns, "labels": {"deny": "1"}}},
            "dryRun": false}})
        .to_string()
    };
    for i in 0..50 {
        let review = match i % 3 {
            0 => forged(i, "", "secrets", "Secret", "default", "CREATE"),
            1 => forged(i, "", "pods", "Pod", "kube-system", "CREATE"),
            _ => forged(i, "", "pods", "Pod", "default", "DELETE"),
        };
        let r = ask(port, &ca, "/admission/audited/validate", &review).await;
        assert_eq!(r["allowed"], true, "{r}");
        assert!(r.get("warnings").is_none(), "no plugin ran: {r}");
    }
    // A review the rules match: the plugin runs, and its denial is a result.
    let real = crate::admission::support::review(
        "uid-real",
        crate::admission::support::pod("real", json!({"deny": "1"})),
    );
    let r = ask(port, &ca, "/admission/audited/validate", &real).await;
    assert!(r["warnings"].to_string().contains("would deny"), "{r}");
    let deadline = Instant::now() + WAIT;
    loop {
        let got = rows(&reports(&sim).await);
        if !got.is_empty() {
            let subjects: Vec<&str> = got.iter().map(|r| r.1.as_str()).collect();
            assert_eq!(subjects, ["real"], "only the matched review's result: {got:?}");
            break;
        }
        assert!(Instant::now() < deadline, "no result for the real review");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// 40 connections each sending a 6 MiB review and stalling before its last
/// byte hold at most the large bodies' half of the 64 MiB budget (the rest
/// wait for it, then get 503 at their body deadline), and a small review
/// from the API server's address is answered meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_large_bodies_are_held_within_their_budget_and_small_reviews_still_answered() {
    use tokio::io::AsyncWriteExt;
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("hostile_admission_bodies", &sim);
    s.install("admit_probe", "probe", None);
    let port = free_port();
    let wink = crate::admission::support::run(&s, port, &[]);
    wait_synced(&wink, "probe");
    let ca = ca_pem(&sim).await;
    let rss = |pid: u32| crate::admin_limits::status_bytes(pid, "VmRSS");
    let before = rss(wink.pid());
    let size = 6 << 20;
    let chunk = vec![b' '; 1 << 20];
    let mut stalled = Vec::new();
    for _ in 0..40 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.3:0".parse().unwrap()).unwrap();
        let tcp = socket.connect(([127, 0, 0, 1], port).into()).await.unwrap();
        let mut tls = crate::admission::support::handshake(tcp, &ca).await;
        let head = format!(
            "POST /admission/probe/validate HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {size}\r\n\r\n"
        );
        tls.write_all(head.as_bytes()).await.unwrap();
        // All but the last byte, as far as the server takes them.
        let sent = async {
            for _ in 0..5 {
                tls.write_all(&chunk).await?;
            }
            tls.write_all(&chunk[..chunk.len() - 1]).await?;
            tls.flush().await
        };
        let _ = tokio::time::timeout(Duration::from_millis(200), sent).await;
        stalled.push(tls);
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let during = rss(wink.pid());
    let review =
        crate::admission::support::review("uid-small", crate::admission::support::pod("ok", json!({})));
    let r = tokio::time::timeout(
        Duration::from_secs(5),
        ask(port, &ca, "/admission/probe/validate", &review),
    )
    .await
    .expect("a small review is answered during the stall");
    assert_eq!(r["allowed"], true, "{r}");
    let grown = during.saturating_sub(before);
    assert!(
        grown < 100 << 20,
        "40 stalled 6 MiB bodies grew wink by {} MiB (the budget is 32 MiB for large bodies)",
        grown >> 20
    );
    drop(stalled);
}

/// With `--admission-client-ca`, a client without a certificate that CA
/// signed gets no answer (the handshake refused); one with it is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_client_ca_only_clients_it_signed_are_served() {
    use tokio::io::AsyncWriteExt;
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("hostile_admission_client_ca", &sim);
    s.install("admit_probe", "probe", None);
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let client_ca = ca_params.self_signed(&ca_key).unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["kube-apiserver".to_string()]).unwrap();
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &client_ca, &ca_key).unwrap();
    let ca_file = s.plugins.parent().unwrap().join("client-ca.pem");
    std::fs::write(&ca_file, client_ca.pem()).unwrap();
    let port = free_port();
    let wink =
        crate::admission::support::run(&s, port, &["--admission-client-ca", ca_file.to_str().unwrap()]);
    wait_synced(&wink, "probe");
    let server_ca = ca_pem(&sim).await;

    // One GET over a connection made with `client`: the answer's bytes.
    let get = |client: Option<(rustls::pki_types::CertificateDer<'static>, Vec<u8>)>| {
        let server_ca = server_ca.clone();
        async move {
            let mut roots = rustls::RootCertStore::empty();
            for c in crate::admission::support::rustls_certs(&mut server_ca.as_bytes()) {
                roots.add(c).unwrap();
            }
            let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
            let builder = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(roots);
            let config = match client {
                Some((cert, key)) => builder
                    .with_client_auth_cert(vec![cert], rustls::pki_types::PrivateKeyDer::Pkcs8(key.into()))
                    .unwrap(),
                None => builder.with_no_client_auth(),
            };
            let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
            let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
            let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
            let mut answer = Vec::new();
            if let Ok(mut tls) = connector.connect(name, tcp).await {
                let request = "GET /nowhere HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n";
                if tls.write_all(request.as_bytes()).await.is_ok() {
                    let _ = tokio::time::timeout(Duration::from_secs(5), tls.read_to_end(&mut answer)).await;
                }
            }
            String::from_utf8_lossy(&answer).into_owned()
        }
    };
    let anonymous = get(None).await;
    assert!(
        anonymous.is_empty(),
        "a client without a certificate was answered: {anonymous}"
    );
    let signed = get(Some((cert.der().clone(), key.serialize_der()))).await;
    assert!(
        signed.starts_with("HTTP/1.1 "),
        "the signed client was not served: {signed:?}"
    );
}

/// POST `review` to `path` and leave it waiting for its answer: the
/// connection, until it is dropped (the client hangs up).
async fn left_waiting(
    port: u16,
    ca: &str,
    path: &str,
    review: &str,
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    use tokio::io::AsyncWriteExt;
    let mut tls = crate::admission::support::connect(port, ca).await;
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{review}",
        review.len()
    );
    tls.write_all(request.as_bytes()).await.unwrap();
    tls.flush().await.unwrap();
    tls
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugins_reviews_under_way_are_capped_and_a_client_that_hangs_up_frees_its_place() {
    use crate::admission::{pod, review};
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("hostile_admission_hangups", &sim);
    s.install("admit_probe", "probe", None);
    // Its calls never end: each holds its place until its 30 s deadline.
    let slow = json!({"behaviour": "loop", "timeout": 30});
    s.install("admit_probe", "slow", Some(&slow));
    let port = free_port();
    let admin = format!("127.0.0.1:{}", free_port());
    let args = [
        "--admission-configurations=false",
        "--call-deadline-ms",
        "30000",
        "--admin-addr",
        &admin,
    ];
    let wink = crate::admission::support::run(&s, port, &args);
    for p in ["probe", "slow"] {
        wait_synced(&wink, p);
    }
    let ca = ca_pem(&sim).await;
    let review = review("uid-slow", pod("p", json!({})));
    // Why slow gave no answer to a review asked within 1 s.
    let why = async || {
        let r = ask(port, &ca, "/admission/slow/validate?timeout=1s", &review).await;
        assert_eq!(r["allowed"], false, "Fail: {r}");
        r["status"]["message"].as_str().unwrap_or_default().to_string()
    };
    for path in ["/admission/slow/validate", "/admission/probe.slow/validate"] {
        let waiting = (0..32).map(|_| left_waiting(port, &ca, path, &review));
        let waiting = futures::future::join_all(waiting).await;
        let deadline = Instant::now() + WAIT;
        loop {
            let why = why().await;
            if why.contains("32 of its requests are still under way") {
                break;
            }
            assert!(Instant::now() < deadline, "{path}: never 32 under way: {why}");
        }
        // Their clients hang up: their places are free long before their
        // calls' 30 s deadlines, and a review is asked of slow again.
        drop(waiting);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let why = why().await;
            if why.contains("no answer within") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{path}: the places of the reviews whose clients hung up are still taken: {why}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    let (_, text) = http(&admin, "GET", "/metrics").await;
    let labels = [
        ("plugin", "slow"),
        ("door", "validate"),
        ("result", "overloaded"),
        ("policy", "Fail"),
    ];
    let overloaded = crate::admin::sample(&text, "wink_admission_requests_total", &labels);
    assert!(overloaded >= Some(2.0), "each refusal counted: {text}");
    drop(wink);
}
