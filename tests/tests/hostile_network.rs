//! End-to-end: the cache view (an unauthenticated HTTP surface) against
//! careless and hostile clients: it refuses to listen beyond loopback unless
//! allowed, a port it cannot have ends the start with a clear error, and
//! idle connections beyond its cap cost the daemon no file descriptors and
//! no events.

use crate::cache_support;

use cache_support::*;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::json;
use std::time::Duration;
use wink_sim::{Sim, SimConfig};

/// How many connections the cache view holds open at most.
const CAP: usize = 256;

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cache_view_listens_on_loopback_only_unless_allowed() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("view_bind_public", &sim);
    s.install("pod_logger", "good", None);
    let public = format!("0.0.0.0:{}", free_port());
    let mut wink = s.run(&["--cache-view", &public]);
    let status = wink.wait_exit(WAIT).expect("the start ends");
    assert!(!status.success());
    wink.wait_for_line("not a loopback address", WAIT);
    assert!(
        !wink.lines().iter().any(|l| l.contains("plugin loaded")),
        "refused before loading"
    );

    let mut allowed = s.run(&["--cache-view", &public, "--allow-non-loopback"]);
    allowed.wait_for_line("listens on a non-loopback address with no authentication", WAIT);
    allowed.wait_for_line("cache view listening", WAIT);
    assert!(allowed.terminate(WAIT).is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_view_port_in_use_ends_the_start() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("view_port_in_use", &sim);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let mut wink = s.run(&["--cache-view", &addr]);
    let status = wink.wait_exit(WAIT).expect("the start ends");
    assert!(!status.success());
    wink.wait_for_line(&format!("the cache view cannot listen on {addr}"), WAIT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_beyond_the_cap_cost_nothing() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("view_idle_flood", &sim);
    s.install("pod_logger", "good", None);
    let view = format!("127.0.0.1:{}", free_port());
    let mut wink = s.run(&["--cache-view", &view]);
    wait_synced(&wink, "good");
    wink.wait_for_line("cache view listening", WAIT);
    let before = open_fds(wink.pid());

    // Twice the cap of idle connections, held open.
    let mut idle = Vec::new();
    for _ in 0..2 * CAP {
        idle.push(tokio::net::TcpStream::connect(&view).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let during = open_fds(wink.pid());
    assert!(
        during <= before + CAP + 8,
        "file descriptors: {before} before, {during} with {} idle connections",
        idle.len()
    );
    // The daemon keeps delivering meanwhile.
    let pods: Api<Pod> = Api::namespaced(sim.client(), "default");
    let p: Pod = from_json(json!({"metadata": {"name": "during-flood"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}));
    pods.create(&PostParams::default(), &p).await.unwrap();
    wink.wait_for_line("[good] OnAdd: during-flood", WAIT);
    // Once the idle ones time out, the view answers again.
    assert_eq!(wait_answer(&view).await, 200);
    drop(idle);
    assert!(wink.terminate(WAIT).is_some_and(|s| s.success()));
}

/// The status of one GET of the cache view; none when the connection is
/// closed without an answer.
async fn try_get(view: &str) -> Option<u16> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(view).await.ok()?;
    let request = format!("GET /cache/core/v1/pods HTTP/1.1\r\nHost: {view}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.ok()?;
    String::from_utf8_lossy(&raw).split(' ').nth(1)?.parse().ok()
}

/// The first answer of the cache view within 30 s.
async fn wait_answer(view: &str) -> u16 {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(Some(code)) = tokio::time::timeout(Duration::from_secs(2), try_get(view)).await {
            return code;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the cache view never answered again"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
