//! End-to-end: the sandbox stays closed. A plugin that tries to read a
//! file, read the environment and open a socket to the API server gets an
//! error for each; one that prints megabytes of lines is cut to its log
//! budget; the daemon and a good plugin are unaffected throughout. Two
//! plugins of one team flooding together draw on one budget: the drops of
//! both are said as the team's.

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

/// Two plugins the grants file puts in one team (as a namespace's team
/// plugins are) each print 20,000 lines in one call: their drops are said
/// as the team's, never as either plugin's; every flood line of both is
/// logged or counted in the team's notices; and the two together log no
/// more than one budget allows over the time the floods took (two budgets
/// would let each log its burst of 1,000).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plugins_of_one_team_share_one_log_budget() {
    const TEAM: [&str; 2] = ["flood-a", "flood-b"];
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("sandbox_team_logs", &sim);
    for name in TEAM {
        s.install(
            "misbehave",
            name,
            Some(&json!({"mode": "flood", "trigger": "bomb", "on": "add"})),
        );
    }
    let grants = crate::common::scratch("sandbox_team_logs_grants").join("grants.yaml");
    std::fs::write(
        &grants,
        "plugins:\n  flood-a: {team: t1}\n  flood-b: {team: t1}\n",
    )
    .unwrap();
    let wink = s.run(&["--grants", grants.to_str().unwrap()]);
    for plugin in TEAM {
        wait_synced(&wink, plugin);
    }
    let pods: Api<Pod> = Api::namespaced(sim.client(), "default");
    let started = Instant::now();
    pods.create(&PostParams::default(), &pod("bomb")).await.unwrap();
    // A plugin's calls come one after the other: once it logs an event of
    // a pod made after the bomb, its flood is over.
    let told_after = |p: &str| {
        wink.plugin_lines(p)
            .iter()
            .any(|l| l.starts_with("OnAdd: after-"))
    };
    let mut i = 0;
    while !TEAM.iter().all(|p| told_after(p)) {
        assert!(started.elapsed() < WAIT, "{}", wink.lines().join("\n"));
        pods.create(&PostParams::default(), &pod(&format!("after-{i}")))
            .await
            .unwrap();
        i += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let took = started.elapsed();
    // Past the window, one more line of each says what was dropped.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    pods.create(&PostParams::default(), &pod("last")).await.unwrap();
    for p in TEAM {
        wink.wait_for_line(&format!("[{p}] OnAdd: last"), WAIT);
        assert!(
            !wink.plugin_lines(p).iter().any(|l| l.starts_with("dropped ")),
            "{p} has no budget of its own"
        );
    }
    let lines = wink.lines();
    let notices: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("[team t1] dropped "))
        .collect();
    assert!(!notices.is_empty(), "the team's drops are said");
    assert!(
        notices
            .iter()
            .all(|l| l.contains("log lines of the team's plugins")),
        "{notices:#?}"
    );
    let dropped: usize = notices
        .iter()
        .map(|l| {
            let (_, rest) = l.split_once("[team t1] dropped ").unwrap();
            rest.split(' ').next().unwrap().parse::<usize>().unwrap()
        })
        .sum();
    let flood = |p: &str| {
        wink.plugin_lines(p)
            .iter()
            .filter(|l| l.starts_with("flood "))
            .count()
    };
    let logged = flood("flood-a") + flood("flood-b");
    assert!(
        logged + dropped >= 40_000,
        "the flood lines of both are logged or counted as the team's: {logged} + {dropped}"
    );
    // One budget: its burst, and what its rate refilled while the floods ran.
    let most = 1_000.0 + 200.0 * took.as_secs_f64();
    assert!(
        (logged as f64) <= most,
        "{logged} flood lines logged in {took:?}, one budget allows {most:.0}"
    );
    assert!(!lines.iter().any(|l| l.contains("plugin trapped")));
}
