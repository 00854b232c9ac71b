//! End-to-end: the admin server against clients that hold it down. Request
//! heads dribbled in a byte at a time are cut at their deadline while
//! `/healthz` answers through a full connection table; slow readers of a
//! large cache list cost the daemon a bounded share of memory each, not the
//! answer's size; a label selector past its caps is refused with 400 naming
//! the cap, and heavy valid ones leave `/healthz` answering.

use crate::cache_support;
use crate::common::Wink;

use cache_support::*;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wink_sim::{Sim, SimConfig};

/// How many connections the admin server holds open at most.
const CAP: usize = 256;

/// A kB field of `/proc/PID/status` (`VmRSS`, `VmHWM`), in bytes.
pub(crate) fn status_bytes(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// The status of one GET within `within`; none when the connection is
/// closed without an answer, or the answer does not come in time.
async fn try_get(addr: &str, path: &str, within: Duration) -> Option<u16> {
    let get = async {
        let mut stream = TcpStream::connect(addr).await.ok()?;
        let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.ok()?;
        String::from_utf8_lossy(&raw).split(' ').nth(1)?.parse().ok()
    };
    tokio::time::timeout(within, get).await.ok().flatten()
}

/// A daemon with its admin server, watching pods.
fn daemon(test: &str, sim: &Sim) -> (Wink, String) {
    let s = Setup::new(test, sim);
    s.install("pod_logger", "good", None);
    let addr = format!("127.0.0.1:{}", free_port());
    let wink = s.run(&["--admin-addr", &addr]);
    wait_synced(&wink, "good");
    wink.wait_for_line("admin server listening", WAIT);
    (wink, addr)
}

/// Writes `head` a byte a second until the server closes the connection;
/// how long that took.
async fn dribble(addr: &str, head: &'static [u8]) -> Duration {
    let started = Instant::now();
    let Ok(mut s) = TcpStream::connect(addr).await else {
        return started.elapsed();
    };
    let mut bytes = head.iter().cycle();
    loop {
        let mut buf = [0u8; 512];
        tokio::select! {
            r = s.read(&mut buf) => if matches!(r, Ok(0) | Err(_)) {
                return started.elapsed();
            },
            () = tokio::time::sleep(Duration::from_secs(1)) => {
                if started.elapsed() > Duration::from_secs(60) {
                    return started.elapsed();
                }
                let _ = s.write_all(&[*bytes.next().unwrap()]).await;
            }
        }
    }
}

/// [`dribble`] again each time the server cuts the connection, until
/// `stop`: keeps one slot of the table taken. How long each connection was
/// held.
async fn keep_dribbling(addr: String, head: &'static [u8], stop: Arc<AtomicBool>) -> Vec<Duration> {
    let mut held = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        held.push(dribble(&addr, head).await);
    }
    held
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dribbled_heads_are_cut_and_probes_answer_through_a_full_table() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let (mut wink, addr) = daemon("admin_slowloris", &sim);

    let stop = Arc::new(AtomicBool::new(false));
    let slow: Vec<_> = (0..CAP)
        .map(|_| {
            let head = b"GET /healthz HTTP/1.1\r\nx-slow: ";
            tokio::spawn(keep_dribbling(addr.clone(), head, stop.clone()))
        })
        .collect();
    // The table is full once every slow connection is accepted (each one
    // cut is opened again, so it stays full): other routes are refused
    // from then on, and the probes answer.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut metrics = None;
    while Instant::now() < deadline {
        metrics = try_get(&addr, "/metrics", Duration::from_secs(1)).await;
        if metrics == Some(503) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(metrics, Some(503), "/metrics with {CAP} slow connections open");
    for path in ["/healthz", "/readyz", "/healthz"] {
        assert_eq!(
            try_get(&addr, path, Duration::from_secs(3)).await,
            Some(200),
            "{path} with {CAP} slow connections open"
        );
    }
    stop.store(true, Ordering::Relaxed);
    for s in slow {
        for held in s.await.unwrap() {
            assert!(held < Duration::from_secs(30), "a dribbled head held {held:?}");
        }
    }
    assert_eq!(
        try_get(&addr, "/metrics", Duration::from_secs(10)).await,
        Some(200)
    );
    assert!(wink.terminate(WAIT).is_some_and(|s| s.success()));
}

/// `n` pods in `default` with `pad` bytes of annotation each.
async fn pods(sim: &Sim, n: usize, pad: usize) {
    let api: Api<Pod> = Api::namespaced(sim.client(), "default");
    for i in 0..n {
        let pod: Pod = from_json(json!({
            "metadata": {"name": format!("p{i}"), "annotations": {"pad": "x".repeat(pad)}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}));
        api.create(&PostParams::default(), &pod).await.unwrap();
    }
}

/// The cache view's list of pods, once it has `n`; its size in bytes.
async fn listed(addr: &str, n: usize) -> usize {
    let deadline = Instant::now() + WAIT;
    loop {
        let (status, body) = http(addr, "GET", "/cache/core/v1/pods").await;
        let list: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        if status == 200 && list["items"].as_array().is_some_and(|i| i.len() == n) {
            return body.len();
        }
        assert!(Instant::now() < deadline, "never listed {n} pods: {status}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_readers_of_a_large_list_hold_a_bounded_share_of_memory() {
    const READERS: usize = 100;
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let (mut wink, addr) = daemon("admin_slow_readers", &sim);
    pods(&sim, 250, 12_000).await;
    let size = listed(&addr, 250).await;
    assert!(size > 3_000_000, "{size} bytes");
    let before = status_bytes(wink.pid(), "VmRSS");

    // Readers that ask and take the first bytes only.
    let mut readers = Vec::new();
    for _ in 0..READERS {
        let mut s = TcpStream::connect(&addr).await.unwrap();
        let request = format!("GET /cache/core/v1/pods HTTP/1.1\r\nHost: {addr}\r\n\r\n");
        s.write_all(request.as_bytes()).await.unwrap();
        let mut first = [0u8; 1024];
        let _ = s.read(&mut first).await.unwrap();
        readers.push(s);
    }
    let mut peak = 0;
    for _ in 0..20 {
        peak = peak.max(status_bytes(wink.pid(), "VmRSS"));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let grown = peak.saturating_sub(before);
    let bound = (READERS * size / 4) as u64;
    assert!(
        grown < bound,
        "{READERS} slow readers of {size} bytes grew RSS by {grown} bytes (bound {bound})"
    );
    drop(readers);
    assert_eq!(
        listed(&addr, 250).await,
        size,
        "the whole list once the readers left"
    );
    assert!(wink.terminate(WAIT).is_some_and(|s| s.success()));
}

/// `!k0,!k1,...` of `n` requirements.
fn not_keys(n: usize) -> String {
    (0..n).map(|i| format!("!k{i}")).collect::<Vec<_>>().join(",")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selectors_past_their_caps_are_refused_and_heavy_ones_leave_healthz_answering() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let (mut wink, addr) = daemon("admin_selectors", &sim);
    pods(&sim, 300, 0).await;
    listed(&addr, 300).await;

    let path = |selector: &str| format!("/cache/core/v1/pods?labelSelector={selector}");
    let (status, body) = http(&addr, "GET", &path(&not_keys(4_000))).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("more than the 16384 allowed"), "{body}");
    let (status, body) = http(&addr, "GET", &path(&not_keys(101))).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("more than the 100 requirements allowed"), "{body}");

    // Heavy valid selectors, 100 at a time, while the probe is asked.
    let heavy = path(&not_keys(100));
    let load: Vec<_> = (0..100)
        .map(|_| {
            let (addr, heavy) = (addr.clone(), heavy.clone());
            tokio::spawn(async move { http(&addr, "GET", &heavy).await.0 })
        })
        .collect();
    for _ in 0..5 {
        assert_eq!(
            try_get(&addr, "/healthz", Duration::from_secs(5)).await,
            Some(200),
            "/healthz while heavy selectors run"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for l in load {
        assert_eq!(l.await.unwrap(), 200);
    }
    assert!(wink.terminate(WAIT).is_some_and(|s| s.success()));
}
