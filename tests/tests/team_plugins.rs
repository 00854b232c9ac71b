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
use crate::common::{plugin, scratch};
use crate::kubectl_support::{Env, env, have_kubectl};
use crate::registry_support::Registry;
use crate::winkplugins::support::{apply, condition, push, run_args};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
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
    let s = Setup::new("team_plugins", &env.sim);
    let reg = Registry::start("team_plugins_registry");
    let reference = format!("{}/teams/probe:v1", reg.host());
    push(&reg, &reference, &plugin("cache_probe"));
    let elsewhere = format!("{}/other/probe:v1", reg.host());
    push(&reg, &elsewhere, &plugin("cache_probe"));
    for ns in ["team-a", "team-b", "team-c"] {
        namespace(&env.sim, ns).await;
        Api::<Pod>::namespaced(env.sim.client(), ns)
            .create(&PostParams::default(), &pod(ns, "p", json!({}), None))
            .await
            .unwrap();
    }
    let grants = scratch("team_plugins_grants").join("grants.yaml");
    std::fs::write(
        &grants,
        format!(
            "teams:\n  namespaces: [team-a, team-b]\n  registries: [\"{}/teams\"]\n",
            reg.host()
        ),
    )
    .unwrap();
    let store = scratch("team_plugins_store").join("store");
    let mut args = run_args(&reg.host(), &store);
    args.extend(["--grants".to_string(), grants.to_str().unwrap().to_string()]);
    let wink = s.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    wink.wait_for_line("watching NamespacedWinkPlugins", WAIT);

    for (ns, other) in [("team-a", "team-b"), ("team-b", "team-a"), ("team-c", "team-a")] {
        apply(&env, &team_plugin(ns, &reference, other)).await;
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
            lines_starting(&wink, &name, "query "),
            [
                format!("query 0 list Pod: ok [{ns}/p {ns}/trigger]"),
                "query 1 list Pod: ok []".to_string(),
                "query 2 get Pod: ok [none]".to_string(),
            ],
            "{name} sees its own Pods only"
        );
        let events = lines_starting(&wink, &name, "event add ");
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
    std::fs::write(
        &grants,
        format!(
            "teams:\n  namespaces: [team-a]\n  registries: [\"{}/teams\"]\n",
            reg.host()
        ),
    )
    .unwrap();
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
    let s = Setup::new("team_plugins_writes", &env.sim);
    let reg = Registry::start("team_plugins_writes_registry");
    let reference = format!("{}/teams/writer:v1", reg.host());
    push(&reg, &reference, &plugin("write_probe"));
    for ns in ["team-a", "team-b"] {
        namespace(&env.sim, ns).await;
    }
    let grants = scratch("team_plugins_writes_grants").join("grants.yaml");
    std::fs::write(
        &grants,
        format!(
            "teams:\n  namespaces: [team-a, team-b]\n  events: true\n  writes: [{{apiVersion: v1, kind: ConfigMap, verbs: [create]}}]\n  registries: [\"{}/teams\"]\n",
            reg.host()
        ),
    )
    .unwrap();
    let store = scratch("team_plugins_writes_store").join("store");
    let mut args = run_args(&reg.host(), &store);
    args.extend(["--grants".to_string(), grants.to_str().unwrap().to_string()]);
    let wink = s.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    wink.wait_for_line("watching NamespacedWinkPlugins", WAIT);
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
    crate::cache_support::wait_synced(&wink, "writer--team-a");
    Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(env.sim.client(), "team-a")
        .create(
            &PostParams::default(),
            &crate::cache_support::config_map("team-a", "trigger", json!({})),
        )
        .await
        .unwrap();
    wink.wait_for_line("[writer--team-a] probe done", WAIT);
    let answers = lines_starting(&wink, "writer--team-a", "write ");
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
    let reg = Registry::start("team_plugins_team_registry");
    let reference = format!("{}/teams/pods:v1", reg.host());
    push(&reg, &reference, &plugin("pod_security"));
    namespace(&env.sim, "team-a").await;
    let privileged = crate::report_support::violating_pod("team-a", "priv", 1);
    Api::<Pod>::namespaced(env.sim.client(), "team-a")
        .create(
            &PostParams::default(),
            &serde_json::from_value(privileged).unwrap(),
        )
        .await
        .unwrap();
    let grants = scratch("team_plugins_team_grants").join("grants.yaml");
    let policy = format!(
        "teams:\n  namespaces: [team-a]\n  registries: [\"{}/teams\"]\n",
        reg.host()
    );
    std::fs::write(&grants, policy).unwrap();
    let store = scratch("team_plugins_team_store").join("store");
    let admin = format!("127.0.0.1:{}", crate::cache_support::free_port());
    let mut args = run_args(&reg.host(), &store);
    for a in [
        "--grants",
        grants.to_str().unwrap(),
        "--admin-addr",
        &admin,
        "--report-batch-ms",
        "200",
    ] {
        args.push(a.to_string());
    }
    let wink = s.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    wink.wait_for_line("watching NamespacedWinkPlugins", WAIT);
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
