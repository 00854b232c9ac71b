//! End-to-end: team plugins. Two teams, `team-a` and `team-b`, each run
//! `cache-probe` as a NamespacedWinkPlugin under the operator's team policy
//! (the grants file's `teams:`). Each is told of its own namespace's Pods
//! only, and its cache queries of every Pod, of the other namespace's Pods
//! and of the other team's Pod by key answer with its own Pods alone; a
//! namespace the policy does not name gets a status saying so, and a
//! component from a registry the policy does not allow is not loaded; a
//! namespace taken out of the policy (the grants file edited) is unloaded. A
//! team's `write-probe` writes in its own namespace what the policy
//! allows; a write in the other namespace, a verb the policy does not
//! allow and an Event about the other namespace's object are refused, each
//! answer saying so. A team plugin's report results and its
//! `wink_plugin_info` say its team.

use crate::cache_support::{Setup, WAIT, lines_starting, namespace, pod};
use crate::common::{Wink, plugin, scratch};
use crate::kubectl_support::{Env, env, have_kubectl};
use crate::registry_support::Registry;
use crate::winkplugins::support::{apply, condition, push, run_args};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use wink_sim::SimConfig;

pub(crate) fn team_plugin(ns: &str, reference: &str, other: &str) -> Value {
    json!({"apiVersion": "wink.dev/v1alpha1", "kind": "NamespacedWinkPlugin",
    "metadata": {"name": "probe", "namespace": ns},
    "spec": {"source": {"oci": reference},
             "config": {"name": format!("probe--{ns}"), "log_events": true,
                        "trigger": "trigger",
                        "watches": [{"api_version": "v1", "kind": "Pod"}],
                        "queries": [
                            {"op": "list", "api_version": "v1", "kind": "Pod"},
                            {"op": "list", "api_version": "v1", "kind": "Pod", "namespace": other},
                            {"op": "get", "api_version": "v1", "kind": "Pod", "key": format!("{other}/p")}
                        ]}}})
}

/// The NamespacedWinkPlugin `probe` of `ns`, once its condition `kind` holds `pred`.
pub(crate) async fn wait_condition(env: &Env, ns: &str, kind: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let (_, out, _) = env
            .run(&["get", "namespacedwinkplugin", "probe", "-n", ns, "-o", "json"])
            .await;
        let object: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
        if let Some(c) = condition(&object, kind)
            && pred(&c)
        {
            return object;
        }
        assert!(
            Instant::now() < deadline,
            "{ns}/probe: no {kind} as wanted: {object:#}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_team_sees_only_its_namespace_and_the_policy_says_who_may_run() {
    if !have_kubectl() {
        return;
    }
    let env = env("team_plugins", SimConfig::default()).await;
    for ns in ["team-a", "team-b", "team-c"] {
        namespace(&env.sim, ns).await;
        Api::<Pod>::namespaced(env.sim.client(), ns)
            .create(&PostParams::default(), &pod(ns, "p", json!({}), None))
            .await
            .unwrap();
    }
    let s = Setup::new("team_plugins", &env.sim);
    let policy = "  namespaces: [team-a, team-b]\n";
    let teams = SimTeams::start(&s, "team_plugins", "cache_probe", policy, &[]);
    let (reference, wink, reg) = (&teams.reference, &teams.wink, &teams.registry);
    let elsewhere = format!("{}/other/probe:v1", reg.host());
    push(reg, &elsewhere, &plugin("cache_probe"));

    for (ns, other) in [("team-a", "team-b"), ("team-b", "team-a"), ("team-c", "team-a")] {
        apply(&env, &team_plugin(ns, reference, other)).await;
    }
    for ns in ["team-a", "team-b"] {
        let object = wait_condition(&env, ns, "Ready", |c| c["status"] == "True").await;
        assert_eq!(object["status"]["team"], ns, "{object:#}");
        assert_eq!(object["status"]["plugin"], format!("probe--{ns}"), "{object:#}");
    }
    let refused = wait_condition(&env, "team-c", "Loaded", |c| c["status"] == "False").await;
    let loaded = condition(&refused, "Loaded").unwrap();
    assert_eq!(loaded["reason"], "NotAllowed", "{refused:#}");
    assert!(
        loaded["message"]
            .as_str()
            .unwrap()
            .contains("team-c may not run team plugins"),
        "{refused:#}"
    );

    for ns in ["team-a", "team-b"] {
        Api::<Pod>::namespaced(env.sim.client(), ns)
            .create(&PostParams::default(), &pod(ns, "trigger", json!({}), None))
            .await
            .unwrap();
    }
    for (ns, other) in [("team-a", "team-b"), ("team-b", "team-a")] {
        let name = format!("probe--{ns}");
        wink.wait_for_line(&format!("[{name}] probe done"), WAIT);
        assert_eq!(
            lines_starting(wink, &name, "query "),
            [
                format!("query 0 list Pod: ok [{ns}/p {ns}/trigger]"),
                "query 1 list Pod: ok []".to_string(),
                "query 2 get Pod: ok [none]".to_string(),
            ],
            "{name} sees its own Pods only"
        );
        let events = lines_starting(wink, &name, "event add ");
        assert!(
            events.iter().all(|l| l.starts_with(&format!("event add {ns}/"))),
            "{events:#?}"
        );
        assert!(!events.is_empty());
        assert!(
            !wink
                .plugin_lines(&name)
                .iter()
                .any(|l| l.contains(&format!("{other}/"))),
            "{name} saw the other team: {:#?}",
            wink.plugin_lines(&name)
        );
    }
    assert!(
        !wink.lines().iter().any(|l| l.contains("[probe--team-c]")),
        "a namespace outside the policy runs nothing"
    );

    // The policy edited (hot-reloaded): a namespace taken out of it is
    // unloaded and its status says why.
    teams.write_policy("  namespaces: [team-a]\n");
    let out = wait_condition(&env, "team-b", "Loaded", |c| c["reason"] == "NotAllowed").await;
    assert_eq!(out["status"]["ready"], "False", "{out:#}");
    wink.wait_for_line("team plugin no longer allowed: its plugin is unloaded", WAIT);

    // A component from a registry the policy does not allow is not loaded.
    apply(&env, &team_plugin("team-a", &elsewhere, "team-b")).await;
    let object = wait_condition(&env, "team-a", "Loaded", |c| c["reason"] == "RegistryNotAllowed").await;
    assert!(
        condition(&object, "Loaded").unwrap()["message"]
            .as_str()
            .unwrap()
            .contains("not under a registry the operator allows"),
        "{object:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_team_plugins_writes_outside_its_namespace_are_refused_and_said() {
    if !have_kubectl() {
        return;
    }
    let env = env("team_plugins_writes", SimConfig::default()).await;
    for ns in ["team-a", "team-b"] {
        namespace(&env.sim, ns).await;
    }
    let s = Setup::new("team_plugins_writes", &env.sim);
    let policy = "  namespaces: [team-a, team-b]\n  events: true\n  writes: [{apiVersion: v1, kind: ConfigMap, verbs: [create]}]\n";
    let teams = SimTeams::start(&s, "team_plugins_writes", "write_probe", policy, &[]);
    let (reference, wink) = (&teams.reference, &teams.wink);
    let cm = |ns: &str, name: &str| json!({"metadata": {"name": name, "namespace": ns}});
    let writer = json!({"apiVersion": "wink.dev/v1alpha1", "kind": "NamespacedWinkPlugin",
    "metadata": {"name": "writer", "namespace": "team-a"},
    "spec": {"source": {"oci": reference},
             "grant": {"events": true, "writes": [{"apiVersion": "v1", "kind": "ConfigMap", "verbs": ["create", "delete"]}]},
             "config": {"name": "writer--team-a", "events": true,
                        "writes": [{"api_version": "v1", "kind": "ConfigMap", "verbs": ["create", "delete"]}],
                        "ops": [
                            {"op": "create", "api_version": "v1", "kind": "ConfigMap", "body": cm("team-a", "mine")},
                            {"op": "create", "api_version": "v1", "kind": "ConfigMap", "body": cm("team-b", "theirs")},
                            {"op": "delete", "api_version": "v1", "kind": "ConfigMap", "key": "team-a/mine"},
                            {"op": "event", "key": "team-a/trigger", "type": "normal", "reason": "Probe", "action": "Probed", "note": "n"},
                            {"op": "event", "key": "team-b/other", "type": "normal", "reason": "Probe", "action": "Probed", "note": "n"}
                        ]}}});
    Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(env.sim.client(), "team-b")
        .create(
            &PostParams::default(),
            &crate::cache_support::config_map("team-b", "other", json!({})),
        )
        .await
        .unwrap();
    apply(&env, &writer).await;
    let deadline = Instant::now() + WAIT;
    loop {
        let (_, out, _) = env
            .run(&[
                "get",
                "namespacedwinkplugin",
                "writer",
                "-n",
                "team-a",
                "-o",
                "jsonpath={.status.ready}",
            ])
            .await;
        if out.trim() == "True" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "never ready:\n{}",
            wink.lines().join("\n")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    crate::cache_support::wait_synced(wink, "writer--team-a");
    Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(env.sim.client(), "team-a")
        .create(
            &PostParams::default(),
            &crate::cache_support::config_map("team-a", "trigger", json!({})),
        )
        .await
        .unwrap();
    wink.wait_for_line("[writer--team-a] probe done", WAIT);
    let answers = lines_starting(wink, "writer--team-a", "write ");
    assert_eq!(answers.len(), 5, "{answers:#?}");
    assert_eq!(answers[0], "write 0 create: ok team-a/mine", "{answers:#?}");
    assert!(
        answers[1].starts_with("write 1 create: error not-permitted"),
        "{answers:#?}"
    );
    assert!(
        answers[2].starts_with("write 2 delete: error not-permitted"),
        "delete was asked for but the team policy does not allow it: {answers:#?}"
    );
    assert_eq!(answers[3], "write 3 event: ok team-a/trigger", "{answers:#?}");
    assert_eq!(
        answers[4], "write 4 event: no object team-b/other",
        "the other namespace's objects cannot even be named: {answers:#?}"
    );
    let theirs = Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(env.sim.client(), "team-b")
        .get_opt("theirs")
        .await
        .unwrap();
    assert!(theirs.is_none(), "nothing written in the other namespace");
}

/// A team plugin says its team: each result it gives in its namespace's
/// report has the property `wink.dev/team` (the operator's plugin's
/// results about the same Pod none), and `wink_plugin_info` gives its
/// `team` (the operator's plugin's empty).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_team_plugins_results_and_metrics_say_its_team() {
    if !have_kubectl() {
        return;
    }
    let env = env("team_plugins_team", SimConfig::default()).await;
    let s = Setup::new("team_plugins_team", &env.sim);
    s.install("pod_security", "pod-security", None);
    namespace(&env.sim, "team-a").await;
    let privileged = crate::report_support::violating_pod("team-a", "priv", 1);
    Api::<Pod>::namespaced(env.sim.client(), "team-a")
        .create(
            &PostParams::default(),
            &serde_json::from_value(privileged).unwrap(),
        )
        .await
        .unwrap();
    let admin = format!("127.0.0.1:{}", crate::cache_support::free_port());
    let flags = ["--admin-addr", &admin, "--report-batch-ms", "200"];
    let policy = "  namespaces: [team-a]\n";
    let teams = SimTeams::start(&s, "team_plugins_team", "pod_security", policy, &flags);
    let reference = &teams.reference;
    let team_plugin = json!({"apiVersion": "wink.dev/v1alpha1", "kind": "NamespacedWinkPlugin",
        "metadata": {"name": "pods", "namespace": "team-a"},
        "spec": {"source": {"oci": reference}}});
    apply(&env, &team_plugin).await;

    // Both plugins' results about the Pod, in team-a's report: the team's
    // carry its team, the operator's do not.
    let client = env.sim.client();
    until_team_results(&client, "team-a", "pods--team-a", Some("pod-security")).await;
    let (code, text) = crate::cache_support::http(&admin, "GET", "/metrics").await;
    assert_eq!(code, 200);
    for line in [
        r#"wink_plugin_info{plugin="pods--team-a",team="team-a"} 1"#,
        r#"wink_plugin_info{plugin="pod-security",team=""} 1"#,
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in:\n{text}");
    }
}

/// Wait until the reports hold results of the team plugin `plugin` (and of
/// the operator's plugin `operator`, when given); then every one of the
/// team plugin's is in `team`'s report with the property `wink.dev/team:
/// <team>`, and none of the operator's has the property.
pub(crate) async fn until_team_results(
    client: &kube::Client,
    team: &str,
    plugin: &str,
    operator: Option<&str>,
) {
    let deadline = Instant::now() + WAIT;
    let ours = |r: &Value| r["policy"] == plugin || operator.is_some_and(|o| r["policy"] == o);
    let results = loop {
        let reports = crate::report_support::reports_of(client, wink::reports::ReportApi::Wgpolicyk8s).await;
        let results: Vec<(Value, Value)> = reports
            .iter()
            .flat_map(|r| {
                let ns = r["metadata"]["namespace"].clone();
                let results = r["results"].as_array().cloned().unwrap_or_default();
                results.into_iter().map(move |x| (ns.clone(), x))
            })
            .filter(|(_, r)| ours(r))
            .collect();
        let by = |policy: &str| results.iter().any(|(_, r)| r["policy"] == policy);
        if by(plugin) && operator.is_none_or(by) {
            break results;
        }
        assert!(
            Instant::now() < deadline,
            "no results of {plugin} and {operator:?}: {reports:#?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    for (ns, r) in &results {
        let said = &r["properties"]["wink.dev/team"];
        match r["policy"] == plugin {
            true => assert_eq!((ns, said), (&json!(team), &json!(team)), "{r}"),
            false => assert!(said.is_null(), "the operator's plugin has no team: {r}"),
        }
    }
}

/// One test's team-plugin daemon on the simulated cluster: the test plugin
/// `component` pushed to a registry on loopback (as
/// `<registry>/teams/<component>:v1`), a grants file holding the team
/// policy's lines `policy` and a `registries` line allowing that registry's
/// `teams/`, and wink run from `s` with `--winkplugins install` and `extra`,
/// once it watches NamespacedWinkPlugins. The registry and wink stop when
/// it is dropped.
pub(crate) struct SimTeams {
    pub registry: Registry,
    pub reference: String,
    pub grants: PathBuf,
    pub wink: Wink,
}

impl SimTeams {
    pub fn start(s: &Setup, test: &str, component: &str, policy: &str, extra: &[&str]) -> SimTeams {
        let registry = Registry::start(&format!("{test}_registry"));
        let reference = format!("{}/teams/{}:v1", registry.host(), component.replace('_', "-"));
        push(&registry, &reference, &plugin(component));
        let grants = scratch(&format!("{test}_grants")).join("grants.yaml");
        let store = scratch(&format!("{test}_store")).join("store");
        let mut args = run_args(&registry.host(), &store);
        args.extend(["--grants", grants.to_str().unwrap()].map(String::from));
        args.extend(extra.iter().map(|a| a.to_string()));
        policy_file(&grants, &registry.host(), policy);
        let wink = s.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
        wink.wait_for_line("watching NamespacedWinkPlugins", WAIT);
        SimTeams {
            registry,
            reference,
            grants,
            wink,
        }
    }

    /// Write the team policy's lines `policy` to the grants file, which
    /// wink reloads.
    pub fn write_policy(&self, policy: &str) {
        policy_file(&self.grants, &self.registry.host(), policy);
    }
}

/// The grants file `grants`: the team policy's lines `policy` and a
/// `registries` line allowing `<host>/teams`.
fn policy_file(grants: &Path, host: &str, policy: &str) {
    let registries = format!("  registries: [\"{host}/teams\"]\n");
    std::fs::write(grants, format!("teams:\n{policy}{registries}")).unwrap();
}
