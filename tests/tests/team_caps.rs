//! End-to-end: per-team caps. Under a team policy with `limits.cpu`,
//! `team-a`'s plugin spins 40 ms on every ConfigMap event of its namespace
//! (far past a twentieth of a core) while `team-b`'s logs its own: team A's
//! deliveries are held back (`wink_team_throttled_seconds_total{team="team-a"}`
//! grows) while team B's plugin is told of every one of its ConfigMaps,
//! and both are loaded under the policy's memory cap.

use crate::cache_support::{Setup, WAIT, config_map, free_port, http, namespace};
use crate::common::{plugin, scratch};
use crate::kubectl_support::{env, have_kubectl};
use crate::registry_support::Registry;
use crate::winkplugins::support::{apply, condition, push, run_args};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use wink_sim::SimConfig;

/// Team `ns`'s `probe`, watching its ConfigMaps, spinning `spin_ms` on each.
fn probe(ns: &str, reference: &str, spin_ms: u64) -> Value {
    json!({"apiVersion": "wink.dev/v1alpha1", "kind": "NamespacedWinkPlugin",
    "metadata": {"name": "probe", "namespace": ns},
    "spec": {"source": {"oci": reference},
             "config": {"name": format!("probe--{ns}"), "log_events": true, "spin_ms": spin_ms,
                        "watches": [{"api_version": "v1", "kind": "ConfigMap"}]}}})
}

/// The value of the metric line starting with `series` in `text`.
fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spinning_team_is_held_to_its_share_and_the_other_team_gets_every_event() {
    if !have_kubectl() {
        return;
    }
    let env = env("team_caps", SimConfig::default()).await;
    let s = Setup::new("team_caps", &env.sim);
    let reg = Registry::start("team_caps_registry");
    let reference = format!("{}/teams/probe:v1", reg.host());
    push(&reg, &reference, &plugin("cache_probe"));
    for ns in ["team-a", "team-b"] {
        namespace(&env.sim, ns).await;
    }
    let grants = scratch("team_caps_grants").join("grants.yaml");
    std::fs::write(
        &grants,
        format!(
            "teams:\n  namespaces: [team-a, team-b]\n  registries: [\"{}/teams\"]\n  limits: {{cpu: 0.05, memory: 48Mi}}\n",
            reg.host()
        ),
    )
    .unwrap();
    let store = scratch("team_caps_store").join("store");
    let addr = format!("127.0.0.1:{}", free_port());
    let mut args = run_args(&reg.host(), &store);
    args.extend(["--grants", grants.to_str().unwrap(), "--admin-addr", &addr].map(String::from));
    let wink = s.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    wink.wait_for_line("watching NamespacedWinkPlugins", WAIT);
    apply(&env, &probe("team-a", &reference, 40)).await;
    apply(&env, &probe("team-b", &reference, 0)).await;
    for ns in ["team-a", "team-b"] {
        wink.wait_for_line(&format!("[probe--{ns}] synced"), WAIT);
    }

    const N: usize = 20;
    for i in 0..N {
        for ns in ["team-a", "team-b"] {
            Api::<ConfigMap>::namespaced(env.sim.client(), ns)
                .create(
                    &PostParams::default(),
                    &config_map(ns, &format!("cm-{i}"), json!({})),
                )
                .await
                .unwrap();
        }
    }
    let told = |ns: &str| {
        let prefix = format!("event add {ns}/cm-");
        wink.plugin_lines(&format!("probe--{ns}"))
            .iter()
            .filter(|l| l.starts_with(&prefix))
            .count()
    };
    wink.wait_until("team B told of every ConfigMap", WAIT, |_| told("team-b") == N);
    // 20 events of 40 ms at a twentieth of a core take 16 s: team A is
    // still behind, held back.
    let deadline = Instant::now() + WAIT;
    let held = loop {
        let (_, text) = http(&addr, "GET", "/metrics").await;
        let held = metric(&text, "wink_team_throttled_seconds_total{team=\"team-a\"}");
        if held.is_some_and(|h| h > 0.0) {
            assert!(
                metric(&text, "wink_team_throttled_seconds_total{team=\"team-b\"}").unwrap_or(0.0) == 0.0,
                "team B, within its share, is never held:\n{text}"
            );
            break held.unwrap();
        }
        assert!(Instant::now() < deadline, "team A never held back:\n{text}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(held > 0.0);
    assert!(told("team-a") < N, "team A is held back while team B is done");
    // And it gets every event in the end: held back, never dropped.
    wink.wait_until("team A told of every ConfigMap", WAIT * 2, |_| {
        told("team-a") == N
    });

    let (_, plugins) = http(&addr, "GET", "/debug/plugins").await;
    let plugins: Value = serde_json::from_str(&plugins).unwrap_or(Value::Null);
    for ns in ["team-a", "team-b"] {
        let p = plugins["plugins"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"] == format!("probe--{ns}"))
            .unwrap_or_else(|| panic!("probe--{ns} in {plugins:#}"));
        assert_eq!(p["memory_mib"], 48, "the policy's memory cap: {p:#}");
    }
    let object = env
        .run(&[
            "get",
            "namespacedwinkplugin",
            "probe",
            "-n",
            "team-a",
            "-o",
            "json",
        ])
        .await
        .1;
    let object: Value = serde_json::from_str(&object).unwrap();
    assert_eq!(
        condition(&object, "Ready").map(|c| c["status"].clone()),
        Some(json!("True")),
        "{object:#}"
    );
}
