//! End-to-end: the plugin contract. Components of the released
//! `wink:plugin@0.3.0` run unchanged beside current ones; what 0.4.0 added
//! works as its WIT documents: the watch each event came from, update
//! filters applied on the host, deliveries held until every cache has
//! listed, a declared name used everywhere (and a grants entry under the
//! other spelling used with a warning), writes and Events that say when
//! they were dry runs, and a conflict's retry not paced by the plugin's rate.

use crate::admin::sample;
use crate::cache_support::*;
use crate::common::Wink;
use crate::plugins_act::{PROBE_GRANT, grants, probe_config as write_config, probe_with};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use k8s_openapi::api::events::v1::Event;
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;
use wink_sim::{Sim, SimConfig};

/// A component built with the 0.3.0 SDK (see `tests/fixtures`).
fn released(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/wink-plugin-0.3.0")
        .join(format!("{name}.wasm"))
}

async fn eventually<F: std::future::Future<Output = bool>>(what: &str, mut check: impl FnMut() -> F) {
    let deadline = std::time::Instant::now() + WAIT;
    while !check().await {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_0_3_0_component_loads_and_acts_as_before() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("contract_v3", &sim);
    std::fs::copy(released("require_labels"), s.plugins.join("require-labels.wasm")).unwrap();
    std::fs::copy(released("pod_logger"), s.plugins.join("pods.wasm")).unwrap();
    s.install("pod_logger", "pods-current", None);
    let deployments: Api<Deployment> = Api::namespaced(sim.client(), "default");
    deployments
        .create(&PostParams::default(), &deployment("default", "web", 1))
        .await
        .unwrap();
    let file = grants(&s, REQUIRE_LABELS_GRANT);
    let wink = s.run(&["--grants", &file]);
    // The 0.3.0 build logs as it always did, writes, and records its Event.
    wink.wait_for_line("require-labels: default/web missing team", WAIT);
    labeled_by_require_labels(&deployments, "web").await;
    eventually("the Event", || async {
        let events: Api<Event> = Api::namespaced(sim.client(), "default");
        let list = events.list(&ListParams::default()).await.unwrap();
        list.items
            .iter()
            .any(|e| e.reason.as_deref() == Some("MissingLabel"))
    })
    .await;
    // A 0.3.0 and a 0.4.0 build of the same handler get the same events.
    let pods: Api<Pod> = Api::namespaced(sim.client(), "default");
    pods.create(&PostParams::default(), &pod("default", "p1", json!({}), None))
        .await
        .unwrap();
    wink.wait_for_line("[pods] OnAdd:", WAIT);
    wink.wait_for_line("[pods-current] OnAdd:", WAIT);
    let loaded = wink.lines();
    assert!(
        !loaded.iter().any(|l| l.contains("plugin not loaded")),
        "{loaded:#?}"
    );
}

fn probe_config(extra: Value) -> Value {
    let mut config = json!({"log_events": true, "reads": [], "queries": []});
    config
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_event_names_the_watch_it_came_from() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("contract_watch", &sim);
    let watches = json!([{"api_version": "v1", "kind": "Pod"}, {"api_version": "v1", "kind": "ConfigMap"}]);
    s.install(
        "cache_probe",
        "probe",
        Some(&probe_config(json!({"watches": watches}))),
    );
    let wink = s.run(&[]);
    wait_synced(&wink, "probe");
    let pods: Api<Pod> = Api::namespaced(sim.client(), "default");
    pods.create(&PostParams::default(), &pod("default", "p1", json!({}), None))
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    cms.create(&PostParams::default(), &config_map("default", "c1", json!({})))
        .await
        .unwrap();
    cms.delete("c1", &Default::default()).await.unwrap();
    wink.wait_for_line("[probe] event delete default/c1 watch=1", WAIT);
    let events = lines_starting(&wink, "probe", "event ");
    assert!(
        events.contains(&"event add default/p1 watch=0 initial=false".to_string()),
        "{events:#?}"
    );
    assert!(
        events.contains(&"event add default/c1 watch=1 initial=false".to_string()),
        "{events:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_filter_keeps_other_updates_out_of_the_plugin() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("contract_filter", &sim);
    let watches = json!([{"api_version": "v1", "kind": "ConfigMap", "updates_when": ["label:app"]}]);
    s.install(
        "cache_probe",
        "probe",
        Some(&probe_config(json!({"watches": watches}))),
    );
    let wink = s.run(&[]);
    wait_synced(&wink, "probe");
    let cms: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    cms.create(
        &PostParams::default(),
        &config_map("default", "c1", json!({"app": "a"})),
    )
    .await
    .unwrap();
    let patch = |p: Value| {
        let cms = cms.clone();
        async move {
            cms.patch("c1", &PatchParams::default(), &Patch::Merge(p))
                .await
                .unwrap()
        }
    };
    // Data, another label, an annotation: not `app`; then `app` changes.
    patch(json!({"data": {"k": "v"}})).await;
    patch(json!({"metadata": {"labels": {"tier": "web"}}})).await;
    patch(json!({"metadata": {"annotations": {"note": "x"}}})).await;
    patch(json!({"metadata": {"labels": {"app": "b"}}})).await;
    cms.delete("c1", &Default::default()).await.unwrap();
    wink.wait_for_line("[probe] event delete default/c1", WAIT);
    let updates = lines_starting(&wink, "probe", "event update");
    assert_eq!(
        updates,
        ["event update default/c1 watch=0"],
        "only the app label's change"
    );
    // The cache applied every update: its last state has all of them.
    let mut all = lines_starting(&wink, "probe", "event ");
    all.retain(|l| !l.starts_with("event update"));
    assert_eq!(all.len(), 2, "the add and the delete pass: {all:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initial_adds_wait_until_every_cache_of_the_plugin_has_listed() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("contract_wait_for_sync", &sim);
    // Many Secrets (listed in pages) beside one ConfigMap: without the wait,
    // the ConfigMap's add comes while the Secrets are still listing.
    const SECRETS: usize = 3000;
    for i in 0..SECRETS {
        sim.insert(json!({"apiVersion": "v1", "kind": "Secret",
                          "metadata": {"name": format!("s{i}"), "namespace": "default"}}))
            .unwrap();
    }
    sim.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "probe", "namespace": "default"}}))
        .unwrap();
    let config = probe_config(json!({
        "watches": [{"api_version": "v1", "kind": "ConfigMap"}],
        "reads": [{"api_version": "v1", "kind": "Secret"}],
        "queries": [{"op": "list", "api_version": "v1", "kind": "Secret"}],
    }));
    s.install("cache_probe", "probe", Some(&config));
    let file = grants(&s, "plugins:\n  probe:\n    secrets: true\n");
    let wink = s.run(&["--grants", &file]);
    wink.wait_for_line("[probe] probe done", WAIT);
    let answer = lines_starting(&wink, "probe", "query 0");
    assert_eq!(answer.len(), 1, "{answer:#?}");
    let listed = answer[0]
        .split_whitespace()
        .filter(|w| w.contains("default/s"))
        .count();
    assert_eq!(listed, SECRETS, "the initial add saw every Secret");
    let secrets: Api<Secret> = Api::namespaced(sim.client(), "default");
    assert_eq!(
        secrets.list(&ListParams::default()).await.unwrap().items.len(),
        SECRETS
    );
}

const NAMED_GRANT: &str =
    "plugins:\n  GRANTEE:\n    writes:\n      - {apiVersion: v1, kind: ConfigMap, verbs: [create]}\n";

fn named_probe(name: &str) -> Value {
    json!({
        "name": name,
        "writes": [{"api_version": "v1", "kind": "ConfigMap", "verbs": ["create"]}],
        // A field set: a create of a name alone records no manager, on a
        // real API server as on the simulator.
        "ops": [{"op": "create", "api_version": "v1", "kind": "ConfigMap",
                 "body": {"metadata": {"name": "made", "namespace": "default"}, "data": {"by": "probe"}}}],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_name_is_the_plugin_name_in_grants_logs_and_field_managers() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("contract_name", &sim);
    // The file says one thing, the plugin another: the plugin wins.
    s.install(
        "write_probe",
        "write_probe_file",
        Some(&named_probe("team-probe")),
    );
    let file = grants(&s, &NAMED_GRANT.replace("GRANTEE", "team-probe"));
    let wink = s.run(&["--grants", &file]);
    wait_synced(&wink, "team-probe");
    sim.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "trigger", "namespace": "default"}}))
        .unwrap();
    wink.wait_for_line("[team-probe] write 0 create: ok default/made", WAIT);
    let cms: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    let made = cms.get("made").await.unwrap();
    assert!(
        made.managed_fields()
            .iter()
            .any(|m| m.manager.as_deref() == Some("wink-team-probe")),
        "{:?}",
        made.managed_fields()
    );
    assert!(!wink.lines().iter().any(|l| l.contains("[write-probe-file]")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_under_the_other_spelling_is_used_and_the_right_one_named() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("contract_spelling", &sim);
    s.install("write_probe", "team_probe", Some(&named_probe("team-probe")));
    let file = grants(&s, &NAMED_GRANT.replace("GRANTEE", "team_probe"));
    let wink = s.run(&["--grants", &file]);
    wink.wait_for_line(r#"the grants file names this plugin "team_probe""#, WAIT);
    wink.wait_for_line(r#"rename it to "team-probe""#, WAIT);
    sim.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "trigger", "namespace": "default"}}))
        .unwrap();
    wink.wait_for_line("[team-probe] write 0 create: ok default/made", WAIT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_files_declaring_one_name_load_once() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("contract_name_taken", &sim);
    s.install("write_probe", "a", Some(&named_probe("same")));
    s.install("write_probe", "b", Some(&named_probe("same")));
    let wink = s.run(&[]);
    wink.wait_for_line(r#"the plugin name "same" is taken by"#, WAIT);
    wait_synced(&wink, "same");
}

/// `write-probe` with `ops` under `grant`, triggered once: its answers and
/// the running daemon.
async fn probe(sim: &Sim, test: &str, ops: Value, grant: &str, extra: &[&str]) -> (Vec<String>, Wink) {
    probe_with(sim, test, write_config(ops), grant, None, extra).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_audit_mode_every_write_and_event_says_it_changed_nothing() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let ops = json!([
        {"op": "create", "api_version": "v1", "kind": "ConfigMap", "body": {"metadata": {"name": "n", "namespace": "default"}}},
        {"op": "patch", "api_version": "v1", "kind": "ConfigMap", "key": "default/trigger", "body": {"data": {"a": "b"}}},
        {"op": "delete", "api_version": "v1", "kind": "ConfigMap", "key": "default/victim"},
        {"op": "event", "key": "default/trigger", "type": "normal", "reason": "Probe", "action": "Probed", "note": "n"},
    ]);
    let victim = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "victim", "namespace": "default"}});
    sim.insert(victim.clone()).unwrap();
    let audit = format!("{PROBE_GRANT}    mode: audit\n");
    let (answers, _wink) = probe(&sim, "contract_dry_run", ops.clone(), &audit, &[]).await;
    assert_eq!(
        answers,
        [
            "write 0 create: ok default/n (dry run)",
            "write 1 patch: ok default/trigger (dry run)",
            "write 2 delete: ok gone (dry run)",
            "write 3 event: ok default/trigger (audit)",
        ],
    );
    let cms: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    assert!(cms.get_opt("n").await.unwrap().is_none(), "nothing was created");
    assert!(
        cms.get("trigger").await.unwrap().data.is_none(),
        "nothing was patched"
    );
    assert!(
        cms.get_opt("victim").await.unwrap().is_some(),
        "nothing was deleted"
    );
    // The same writes in enforce mode say they were applied.
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    sim.insert(victim).unwrap();
    let (answers, _wink) = probe(&sim, "contract_applied", ops, PROBE_GRANT, &[]).await;
    assert_eq!(answers[0], "write 0 create: ok default/n");
    assert_eq!(answers[3], "write 3 event: ok default/trigger");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_retrying_a_conflict_is_not_paced_by_the_plugin_rate() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    cms.create(
        &PostParams::default(),
        &config_map("default", "target", json!({})),
    )
    .await
    .unwrap();
    let stale = json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "target", "namespace": "default", "resourceVersion": "1"},
                       "data": {"a": "stale"}});
    // One token a minute: the conflicting replace takes it; the patch that
    // retries it must not wait for the next.
    let ops = json!([
        {"op": "replace", "api_version": "v1", "kind": "ConfigMap", "body": stale},
        {"op": "patch", "api_version": "v1", "kind": "ConfigMap", "key": "default/target", "body": {"data": {"a": "fresh"}}},
    ]);
    let grant = format!("{PROBE_GRANT}    rate: {{qps: 0.0167, burst: 1}}\n");
    let addr = format!("127.0.0.1:{}", free_port());
    let (answers, _wink) = probe(
        &sim,
        "contract_conflict_rate",
        ops,
        &grant,
        &["--admin-addr", &addr],
    )
    .await;
    assert!(
        answers[0].starts_with("write 0 replace: error conflict 409"),
        "{answers:#?}"
    );
    assert_eq!(answers[1], "write 1 patch: ok default/target");
    let (_, metrics) = http(&addr, "GET", "/metrics").await;
    let waits = sample(
        &metrics,
        "wink_plugin_rate_limit_waits_total",
        &[("plugin", "probe")],
    );
    assert_eq!(waits, Some(0.0), "no write waited on the plugin's rate");
}
