//! End-to-end: plugins that act, under the operator's grants. The example
//! policies (`require-labels`, `namespace-defaults`, `ttl-reaper`) do their
//! jobs on the simulated API server; audit mode changes nothing but records
//! Events; without a grant nothing changes and the refusal is logged once;
//! identical Events become one series.

use crate::cache_support;

use cache_support::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::events::v1::Event;
use kube::ResourceExt;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use std::time::Duration;
use wink_sim::{Sim, SimConfig};

pub(crate) fn grants(setup: &Setup, yaml: &str) -> String {
    let path = setup.plugins.parent().unwrap().join("grants.yaml");
    std::fs::write(&path, yaml).unwrap();
    path.to_str().unwrap().to_string()
}

async fn events_about(sim: &Sim, name: &str) -> Vec<Event> {
    let all: Api<Event> = Api::all(sim.client());
    let list = all.list(&ListParams::default()).await.unwrap();
    list.items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .collect()
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

/// A simulated server with `require-labels` installed and the Deployment
/// `default/web` (no labels) created: the setup, the Deployments API and
/// the created Deployment.
async fn require_labels_setup(sim: &Sim, test: &str) -> (Setup, Api<Deployment>, Deployment) {
    let s = Setup::new(test, sim);
    s.install("require_labels", "require-labels", None);
    let deployments: Api<Deployment> = Api::namespaced(sim.client(), "default");
    let created = deployments
        .create(&PostParams::default(), &deployment("default", "web", 1))
        .await
        .unwrap();
    (s, deployments, created)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_labels_labels_records_an_event_and_converges() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let (s, deployments, _) = require_labels_setup(&sim, "act_require_labels").await;
    let file = grants(&s, REQUIRE_LABELS_GRANT);
    let wink = s.run(&["--grants", &file]);
    wink.wait_for_line("require-labels: default/web: missing label team", WAIT);
    labeled_by_require_labels(&deployments, "web").await;
    eventually("the Event", || async {
        !events_about(&sim, "web").await.is_empty()
    })
    .await;
    let events = events_about(&sim, "web").await;
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0].reason.as_deref(), Some("MissingLabel"));
    assert_eq!(events[0].type_.as_deref(), Some("Warning"));
    assert!(events[0].note.as_deref().unwrap_or_default().contains("team"));
    // Converged: the patched Deployment came back as an update needing nothing.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(sim.request_count("patch", "deployments"), 1, "one patch, no loop");
    let misses = wink.plugin_lines("require-labels");
    assert_eq!(
        misses.iter().filter(|l| l.contains("missing label team")).count(),
        1,
        "{misses:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_audit_mode_nothing_changes_but_the_event_is_recorded() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let (s, deployments, created) = require_labels_setup(&sim, "act_audit").await;
    let file = grants(
        &s,
        &REQUIRE_LABELS_GRANT.replace("    events: true", "    events: true\n    mode: audit"),
    );
    let wink = s.run(&["--grants", &file]);
    wink.wait_for_line("require-labels: default/web: missing label team", WAIT);
    eventually("the Event", || async {
        !events_about(&sim, "web").await.is_empty()
    })
    .await;
    // wink's own line shows the patch body; the plugin was told it was a
    // dry run, so it says what would have been done, and its Event is marked.
    wink.wait_for_line(r#"{"metadata":{"labels":{"team":"unassigned"}}}"#, WAIT);
    let would = wink.plugin_lines("require-labels");
    assert!(
        would
            .iter()
            .any(|l| l.contains("missing label team: would be set to (audit mode: nothing changed)")),
        "{would:#?}"
    );
    let events = events_about(&sim, "web").await;
    assert_eq!(events[0].action.as_deref(), Some("WouldLabel"), "{events:#?}");
    assert!(
        events[0]
            .note
            .as_deref()
            .unwrap_or_default()
            .starts_with("[audit] "),
        "{events:#?}"
    );
    assert_eq!(
        events[0]
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("wink.dev/mode"))
            .map(String::as_str),
        Some("audit"),
        "{events:#?}"
    );
    let after = deployments.get("web").await.unwrap();
    assert_eq!(
        after.resource_version(),
        created.resource_version(),
        "nothing persisted"
    );
    assert!(after.labels().get("team").is_none());
    assert_eq!(
        sim.request_count("patch", "deployments"),
        1,
        "the dry run reached the server"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_grant_nothing_changes_and_the_refusal_is_logged_once() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let (s, deployments, created) = require_labels_setup(&sim, "act_no_grant").await;
    deployments
        .create(&PostParams::default(), &deployment("default", "api", 1))
        .await
        .unwrap();
    let wink = s.run(&[]);
    wink.wait_for_line("require-labels: default/web: missing label team", WAIT);
    wink.wait_for_line("require-labels: default/api: missing label team", WAIT);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let lines = wink.lines();
    let snippet = lines
        .iter()
        .filter(|l| l.contains("declares writes the operator has not granted"))
        .collect::<Vec<_>>();
    assert_eq!(snippet.len(), 1, "{snippet:#?}");
    assert!(snippet[0].contains(r#"{"plugins":{"require-labels":{"events":true,"writes":[{"apiVersion":"apps/v1","kind":"Deployment","verbs":["patch"]}]}}}"#), "{}", snippet[0]);
    let refused = lines
        .iter()
        .filter(|l| l.contains("patch of apps/v1 Deployment refused"))
        .count();
    assert_eq!(refused, 1, "logged once per (verb, resource): {lines:#?}");
    assert_eq!(sim.request_count("patch", "deployments"), 0);
    assert_eq!(
        deployments.get("web").await.unwrap().resource_version(),
        created.resource_version()
    );
    assert!(events_about(&sim, "web").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_defaults_creates_its_config_map_and_leaves_an_existing_one() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("act_namespace_defaults", &sim);
    s.install(
        "namespace_defaults",
        "namespace-defaults",
        Some(&json!({"data": {"owner": "platform"}})),
    );
    namespace(&sim, "kept").await;
    let kept: Api<ConfigMap> = Api::namespaced(sim.client(), "kept");
    let mut mine = config_map("kept", "wink-defaults", json!({}));
    mine.data = Some([("owner".to_string(), "me".to_string())].into());
    kept.create(&PostParams::default(), &mine).await.unwrap();
    let file = grants(
        &s,
        "plugins:\n  namespace-defaults:\n    writes: [{apiVersion: v1, kind: ConfigMap, verbs: [create]}]\n",
    );
    let wink = s.run(&["--grants", &file]);
    wink.wait_for_line("namespace-defaults: kept/wink-defaults exists", WAIT);
    Api::<Namespace>::all(sim.client())
        .create(
            &PostParams::default(),
            &from_json(json!({"metadata": {"name": "team-a"}})),
        )
        .await
        .unwrap();
    wink.wait_for_line("namespace-defaults: created team-a/wink-defaults", WAIT);
    let created = Api::<ConfigMap>::namespaced(sim.client(), "team-a")
        .get("wink-defaults")
        .await
        .unwrap();
    assert_eq!(created.data.unwrap()["owner"], "platform");
    assert_eq!(
        kept.get("wink-defaults").await.unwrap().data.unwrap()["owner"],
        "me",
        "left alone"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttl_reaper_deletes_what_expired_after_it_synced() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("act_ttl_reaper", &sim);
    s.install("ttl_reaper", "ttl-reaper", None);
    let cms: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    let annotated = |name: &str, ttl: &str| -> ConfigMap {
        from_json(
            json!({"metadata": {"name": name, "namespace": "default", "annotations": {"wink.dev/ttl": ttl}}}),
        )
    };
    cms.create(&PostParams::default(), &annotated("short", "1s"))
        .await
        .unwrap();
    cms.create(&PostParams::default(), &annotated("long", "1h"))
        .await
        .unwrap();
    cms.create(&PostParams::default(), &config_map("default", "plain", json!({})))
        .await
        .unwrap();
    let file = grants(
        &s,
        "plugins:\n  ttl-reaper:\n    writes: [{apiVersion: v1, kind: ConfigMap, verbs: [delete]}]\n",
    );
    let wink = s.run(&["--grants", &file]);
    wait_synced(&wink, "ttl-reaper");
    wink.wait_for_line("ttl-reaper: deleted default/short", WAIT);
    eventually("short gone", || async {
        cms.get_opt("short").await.unwrap().is_none()
    })
    .await;
    assert!(cms.get_opt("long").await.unwrap().is_some());
    assert!(cms.get_opt("plain").await.unwrap().is_some());
}

/// `write-probe` with `config` under `grant`, triggered once, with `fault`
/// (how many requests fail, with which status) armed first; its answers.
/// The trigger is written in process (no HTTP, no fault), so the plugin's
/// writes are the next requests the server sees.
async fn probe(
    sim: &Sim,
    test: &str,
    config: serde_json::Value,
    grant: &str,
    fault: Option<(usize, u16)>,
) -> Vec<String> {
    probe_with(sim, test, config, grant, fault, &[]).await.0
}

/// [`probe`] with `extra` arguments to `wink run`: also the running daemon.
pub(crate) async fn probe_with(
    sim: &Sim,
    test: &str,
    config: serde_json::Value,
    grant: &str,
    fault: Option<(usize, u16)>,
    extra: &[&str],
) -> (Vec<String>, crate::common::Wink) {
    let s = Setup::new(test, sim);
    s.install("write_probe", "probe", Some(&config));
    let file = grants(&s, grant);
    let mut args = vec!["--grants", file.as_str()];
    args.extend_from_slice(extra);
    let wink = s.run(&args);
    wait_synced(&wink, "probe");
    // The plugin's write alone fails: the daemon's own requests (watches
    // resumed, namespaces read) are served meanwhile.
    if let Some((n, status)) = fault {
        sim.faults().fail_next_on(n, status, "create", "configmaps");
    }
    let trigger = json!({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "trigger", "namespace": "default"}});
    sim.insert(trigger).unwrap();
    wink.wait_for_line("[probe] probe done", WAIT);
    (lines_starting(&wink, "probe", "write "), wink)
}

pub(crate) const PROBE_GRANT: &str = r#"
plugins:
  probe:
    events: true
    writes:
      - {apiVersion: v1, kind: ConfigMap, verbs: [create, update, patch, delete]}
"#;

pub(crate) fn probe_config(ops: serde_json::Value) -> serde_json::Value {
    json!({
        "writes": [{"api_version": "v1", "kind": "ConfigMap", "verbs": ["create", "update", "patch", "delete"]}],
        "events": true,
        "ops": ops,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_writes_are_typed_errors_the_guest_can_match() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    cms.create(&PostParams::default(), &config_map("default", "taken", json!({})))
        .await
        .unwrap();
    let cm = |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}});
    let mut stale = cm("taken");
    stale["metadata"]["resourceVersion"] = json!("1");
    let ops = json!([
        {"op": "create", "api_version": "v1", "kind": "ConfigMap", "body": cm("taken")},
        {"op": "replace", "api_version": "v1", "kind": "ConfigMap", "body": stale},
        {"op": "patch", "api_version": "v1", "kind": "ConfigMap", "key": "default/missing", "body": {"data": {"a": "b"}}},
        {"op": "create", "api_version": "v1", "kind": "ConfigMap", "body": cm("Not_A_Name")},
        {"op": "create", "api_version": "v1", "kind": "Secret", "body": cm("s")},
        {"op": "patch", "api_version": "v1", "kind": "ConfigMap", "key": "default/taken", "type": "merge", "body": {"data": {"ok": "yes"}}},
    ]);
    let answers = probe(&sim, "act_typed_errors", probe_config(ops), PROBE_GRANT, None).await;
    assert_eq!(answers.len(), 6, "{answers:#?}");
    let expected = [
        "write 0 create: error already-exists 409 AlreadyExists",
        "write 1 replace: error conflict 409 Conflict",
        "write 2 patch: error not-found 404 NotFound",
        "write 3 create: error invalid 422 Invalid",
        "write 4 create: error not-permitted",
    ];
    for (answer, want) in answers.iter().zip(expected) {
        assert!(answer.starts_with(want), "{want}: {answers:#?}");
    }
    assert!(
        answers[3].contains("metadata.name"),
        "the cause names the field: {answers:#?}"
    );
    assert_eq!(answers[5], "write 5 patch: ok default/taken");
    assert_eq!(cms.get("taken").await.unwrap().data.unwrap()["ok"], "yes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttling_and_server_errors_are_typed_errors_too() {
    let create = |name: &str| {
        json!([{"op": "create", "api_version": "v1", "kind": "ConfigMap",
                "body": {"metadata": {"name": name, "namespace": "default"}}}])
    };
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    // A 429 is retried after its Retry-After twice; the third reaches the guest.
    let answers = probe(
        &sim,
        "act_429",
        probe_config(create("a")),
        PROBE_GRANT,
        Some((3, 429)),
    )
    .await;
    assert_eq!(answers.len(), 1, "{answers:#?}");
    assert_eq!(sim.request_count("create", "configmaps"), 3, "two retries");
    assert!(
        answers[0].starts_with("write 0 create: error too-many-requests 429 TooManyRequests retry=1"),
        "{answers:#?}"
    );
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let answers = probe(
        &sim,
        "act_500",
        probe_config(create("b")),
        PROBE_GRANT,
        Some((1, 500)),
    )
    .await;
    assert!(
        answers[0].starts_with("write 0 create: error internal-error 500 InternalError"),
        "{answers:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_identical_warnings_are_one_event_with_a_series() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let ops = json!([{"op": "event", "key": "default/trigger", "type": "warning", "reason": "Probe",
                      "action": "Probed", "note": "the same note", "repeat": 10}]);
    let answers = probe(&sim, "act_event_series", probe_config(ops), PROBE_GRANT, None).await;
    assert_eq!(answers.len(), 10, "{answers:#?}");
    assert!(
        answers.iter().all(|a| a == "write 0 event: ok default/trigger"),
        "{answers:#?}"
    );
    let events = events_about(&sim, "trigger").await;
    assert_eq!(events.len(), 1, "one Event, not ten: {events:#?}");
    let series = events[0].series.as_ref().expect("a series");
    assert_eq!(series.count, 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_writing_in_a_loop_is_held_at_its_rate() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    cms.create(
        &PostParams::default(),
        &config_map("default", "target", json!({})),
    )
    .await
    .unwrap();
    let ops = json!([{"op": "patch", "api_version": "v1", "kind": "ConfigMap", "key": "default/target",
                      "body": {"data": {"n": "x"}}, "repeat": 40}]);
    let grant = format!("{PROBE_GRANT}    rate: {{qps: 5, burst: 5}}\n");
    let s = Setup::new("act_rate", &sim);
    s.install("write_probe", "probe", Some(&probe_config(ops)));
    let file = grants(&s, &grant);
    let wink = s.run(&["--grants", &file]);
    wait_synced(&wink, "probe");
    cms.create(
        &PostParams::default(),
        &config_map("default", "trigger", json!({})),
    )
    .await
    .unwrap();
    wink.wait_for_line("[probe] write 0 patch: ok", WAIT);
    let started = std::time::Instant::now();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let patches = sim.request_count("patch", "configmaps");
    let window = started.elapsed().as_secs_f64();
    // A burst of 5, then 5/s: nowhere near 40 in about two seconds.
    assert!(
        patches as f64 <= 5.0 + 5.0 * (window + 0.5),
        "{patches} patches in {window:.2} s at 5/s after a burst of 5"
    );
    assert!(patches >= 5, "it writes: {patches}");
    assert!(
        !wink.lines().iter().any(|l| l.contains("plugin trapped")),
        "waiting on the rate is no trap"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_server_costs_no_deadline_and_no_other_plugin_waits() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let ops = json!([{"op": "create", "api_version": "v1", "kind": "ConfigMap",
                      "body": {"metadata": {"name": "slow", "namespace": "default"}}}]);
    let s = Setup::new("act_slow_server", &sim);
    s.install("write_probe", "probe", Some(&probe_config(ops)));
    s.install("pod_logger", "pods", None);
    let file = grants(&s, PROBE_GRANT);
    let wink = s.run(&["--grants", &file, "--call-deadline-ms", "1000"]);
    wait_synced(&wink, "probe");
    wait_synced(&wink, "pods");
    // Slow first; the trigger is written in process (not delayed), so the
    // plugin's write is what waits.
    sim.faults().delay(Some(Duration::from_secs(2)));
    let trigger = json!({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "trigger", "namespace": "default"}});
    sim.insert(trigger).unwrap();
    // While the plugin's write waits 2 s on the server, a pod event (written
    // in process, not delayed) reaches the other plugin.
    tokio::time::sleep(Duration::from_millis(300)).await;
    sim.insert(
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "meanwhile", "namespace": "default"},
                      "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
    )
    .unwrap();
    wink.wait_for_line("[pods] OnAdd: meanwhile", WAIT);
    assert!(
        !wink.lines().iter().any(|l| l.contains("[probe] probe done")),
        "the other plugin got its event while the write waited"
    );
    wink.wait_for_line("[probe] probe done", WAIT);
    sim.faults().delay(None);
    assert_eq!(
        lines_starting(&wink, "probe", "write "),
        ["write 0 create: ok default/slow"]
    );
    assert!(!wink.lines().iter().any(|l| l.contains("plugin trapped")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_synced_comes_once_after_the_initial_adds() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    for name in ["a", "b", "c"] {
        cms.create(&PostParams::default(), &config_map("default", name, json!({})))
            .await
            .unwrap();
    }
    let s = Setup::new("act_on_synced", &sim);
    s.install("write_probe", "probe", Some(&json!({})));
    let wink = s.run(&[]);
    wink.wait_for_line("[probe] synced after", WAIT);
    cms.create(&PostParams::default(), &config_map("default", "d", json!({})))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let synced = lines_starting(&wink, "probe", "synced after");
    assert_eq!(
        synced,
        ["synced after 3 adds"],
        "once, after the three initial adds"
    );
}
