//! End-to-end: the sandbox stays closed. A plugin that tries to read a
//! file, read the environment and open a socket to the API server gets an
//! error for each; one that prints megabytes of lines is cut to its log
//! budget; the daemon and a good plugin are unaffected throughout.

use crate::cache_support;

use cache_support::*;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::json;
use std::time::{Duration, Instant};
use wink_sim::{Sim, SimConfig};

fn pod(name: &str) -> Pod {
    from_json(json!({"metadata": {"name": name, "namespace": "default"},
                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_cannot_leave_the_sandbox_nor_flood_the_log() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("sandbox", &sim);
    let target = format!("127.0.0.1:{}", sim.port());
    s.install(
        "misbehave",
        "escaper",
        Some(&json!({"mode": "escape", "trigger": "bomb", "on": "add", "target": target})),
    );
    s.install(
        "misbehave",
        "flooder",
        Some(&json!({"mode": "flood", "trigger": "bomb", "on": "add"})),
    );
    s.install("pod_logger", "good", None);
    let wink = s.run(&[]);
    for plugin in ["escaper", "flooder", "good"] {
        wait_synced(&wink, plugin);
    }
    let pods: Api<Pod> = Api::namespaced(sim.client(), "default");
    pods.create(&PostParams::default(), &pod("bomb")).await.unwrap();
    wink.wait_for_line("[escaper] escape: socket", WAIT);
    let escape = lines_starting(&wink, "escaper", "escape:");
    assert_eq!(escape.len(), 3, "{escape:#?}");
    assert!(escape[0].starts_with("escape: file refused"), "{escape:#?}");
    assert!(
        escape[1].starts_with("escape: env refused") && escape[1].ends_with("(0 variables)"),
        "{escape:#?}"
    );
    assert!(escape[2].starts_with("escape: socket refused"), "{escape:#?}");

    // The burst gets through; the rest is dropped, and said later.
    wink.wait_for_line("[flooder] flood 999 ", WAIT);
    // The good plugin is on time meanwhile.
    let started = Instant::now();
    pods.create(&PostParams::default(), &pod("after")).await.unwrap();
    wink.wait_for_line("[good] OnAdd: after", WAIT);
    let latency = started.elapsed();
    // Once the flood is over and the budget refills, the flooder logs
    // again, starting with how much it lost: one line for the window.
    tokio::time::sleep(Duration::from_secs(1)).await;
    pods.create(&PostParams::default(), &pod("later")).await.unwrap();
    wink.wait_for_line("[flooder] OnAdd: later", WAIT);
    let said = lines_starting(&wink, "flooder", "dropped ");
    assert_eq!(said.len(), 1, "{said:#?}");
    assert!(said[0].contains(" log lines in the last "), "{said:#?}");
    let flood = lines_starting(&wink, "flooder", "flood ").len();
    // 20,000 flood lines and OnAdd of bomb, after and later.
    let logged = wink.plugin_lines("flooder").len() - said.len();
    let dropped: usize = said[0]["dropped ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        logged + dropped,
        20_003,
        "every line logged or counted: {said:#?}"
    );
    assert!(flood < 2_000, "20,000 lines printed, {flood} logged");
    assert!(flood >= 1_000, "the burst gets through: {flood}");
    assert!(
        latency < Duration::from_secs(5),
        "the good plugin waited {latency:?}"
    );
    assert!(!wink.lines().iter().any(|l| l.contains("plugin trapped")));
}
