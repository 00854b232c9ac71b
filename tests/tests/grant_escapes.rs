//! End-to-end: a plugin never gets past the operator's grants by how it
//! spells things. Watches, reads and cache queries of Secrets under every
//! spelling of the core group and of the kind (`/v1`, `core/v1`, `V1`,
//! `%`-escapes, NUL, whitespace, overlong text) load nothing and read
//! nothing; write keys and bodies holding `#`, `?`, `/`, `..`, `%`, NUL,
//! capitals or overlong names are refused before anything is sent, so an
//! audit-mode plugin changes nothing on the server and no other field
//! manager appears.

use crate::cache_support;

use cache_support::*;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::ResourceExt;
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};
use wink_sim::{Sim, SimConfig};

/// Spellings of the core group's version that are not `v1`.
fn core_spellings() -> Vec<String> {
    let mut all: Vec<String> = [
        "/v1", "v1/", "/v1/", "//v1", "core/v1", "V1", " v1", "v1 ", "v1%00", "v1\0", "%2Fv1", "v1\n", "v1#",
        "v1?x", "", "/",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    all.push(format!("{}/v1", "a".repeat(300)));
    all.push(format!("v{}", "1".repeat(10_000)));
    all
}

/// Spellings of the kind `Secret` that are not `Secret`.
const KIND_SPELLINGS: &[&str] = &[
    "secret",
    "SECRET",
    "Secrets",
    " Secret",
    "Secret\0",
    "Secret%00",
    "secrets",
];

fn watch(api_version: &str, kind: &str) -> Value {
    json!({"api_version": api_version, "kind": kind})
}

fn probe_config(watches: Value, reads: Value, queries: Value) -> Value {
    json!({"watches": watches, "reads": reads, "trigger": "probe", "queries": queries})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_spelling_of_secrets_gets_past_a_missing_grant() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("escape_secrets", &sim);
    let pp = PostParams::default();
    let secret: Secret = from_json(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "token", "namespace": "kube-system"}, "stringData": {"t": "s3cr3t"}
    }));
    Api::<Secret>::namespaced(sim.client(), "kube-system")
        .create(&pp, &secret)
        .await
        .unwrap();
    let cm = watch("v1", "ConfigMap");
    let spellings = core_spellings();
    let mut refused = Vec::new();
    for (i, v) in spellings.iter().enumerate() {
        // Watches for the even ones, reads for the odd ones.
        let (watches, reads) = match i % 2 {
            0 => (json!([watch(v, "Secret")]), json!([])),
            _ => (json!([cm]), json!([watch(v, "Secret")])),
        };
        let name = format!("group-{i}");
        s.install(
            "cache_probe",
            &name,
            Some(&probe_config(watches, reads, json!([]))),
        );
        refused.push(name);
    }
    for (i, k) in KIND_SPELLINGS.iter().enumerate() {
        let name = format!("kind-{i}");
        s.install(
            "cache_probe",
            &name,
            Some(&probe_config(json!([watch("v1", k)]), json!([]), json!([]))),
        );
        refused.push(name);
    }
    // A plugin declaring writes of Secrets spelled "/v1" does not load either.
    s.install(
        "write_probe",
        "writer",
        Some(&json!({"writes": [{"api_version": "/v1", "kind": "Secret", "verbs": ["create"]}]})),
    );
    refused.push("writer".into());
    // A plugin that watches ConfigMaps and asks the cache for Secrets under
    // every spelling gets an error for each.
    let mut queries = Vec::new();
    for v in spellings.iter().map(String::as_str).chain(["v1"]) {
        queries.push(json!({"op": "get", "api_version": v, "kind": "Secret", "key": "kube-system/token"}));
        queries.push(json!({"op": "list", "api_version": v, "kind": "Secret"}));
    }
    for k in KIND_SPELLINGS {
        queries.push(json!({"op": "list", "api_version": "v1", "kind": k}));
    }
    s.install(
        "cache_probe",
        "asker",
        Some(&probe_config(json!([cm]), json!([]), json!(queries))),
    );

    let wink = s.run(&[]);
    wink.wait_for_line("plugins loaded", WAIT);
    wait_synced(&wink, "asker");
    Api::<ConfigMap>::namespaced(sim.client(), "default")
        .create(&pp, &config_map("default", "probe", json!({})))
        .await
        .unwrap();
    wink.wait_for_line("[asker] probe done", WAIT);

    let answers = lines_starting(&wink, "asker", "query ");
    assert_eq!(answers.len(), queries.len(), "{answers:#?}");
    for a in &answers {
        assert!(
            a.contains(": error invalid-argument: invalid") || a.contains("is not watched by this plugin"),
            "{a}"
        );
    }
    // Each group spelling is refused as a spelling (get and list).
    let invalid = answers.iter().filter(|a| a.contains("invalid-argument")).count();
    assert!(invalid >= 2 * spellings.len(), "{answers:#?}");
    let lines = wink.lines();
    for name in &refused {
        assert!(
            !lines
                .iter()
                .any(|l| l.contains(&format!("plugin synced plugin={name}"))),
            "{name} must not load: {lines:#?}"
        );
        assert!(wink.plugin_lines(name).is_empty(), "{name} never runs");
    }
    // The group spellings and the writer are refused as spellings, naming the
    // plugin; the kind spellings resolve to nothing the server serves.
    let not_loaded: Vec<&String> = lines.iter().filter(|l| l.contains("plugin not loaded")).collect();
    for i in 0..spellings.len() {
        let tag = format!("plugin group-{i}: invalid apiVersion");
        assert!(
            not_loaded.iter().any(|l| l.contains(&tag)),
            "{tag}: {not_loaded:#?}"
        );
    }
    assert!(
        not_loaded
            .iter()
            .any(|l| l.contains("plugin writer declares writes") && l.contains("invalid apiVersion")),
        "{not_loaded:#?}"
    );
    // Nothing listed or watched a Secret, and no informer holds one.
    assert_eq!(sim.request_count("list", "secrets"), 0);
    assert_eq!(sim.request_count("watch", "secrets"), 0);
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("informer started") && l.contains("Secret"))
    );
}

/// A ConfigMap `default/victim` as the server holds it now.
async fn victim(sim: &Sim) -> ConfigMap {
    Api::<ConfigMap>::namespaced(sim.client(), "default")
        .get("victim")
        .await
        .unwrap()
}

/// Creates whose body names an object the API server refuses.
const BODY_NAME_TRICKS: usize = 5;

/// Writes whose key, body or resource type is spelled to get past a grant
/// or out of a dry run. Each must be refused before it is sent (but the
/// creates with a bad name in their body only: see
/// [`assert_nothing_got_through`]).
fn tricks() -> Vec<Value> {
    let patch = |key: &str| {
        json!({"op": "patch", "api_version": "v1", "kind": "ConfigMap", "key": key,
               "type": "merge", "body": {"data": {"pwned": "yes"}}})
    };
    let typed = |api_version: &str, kind: &str| {
        json!({"op": "patch", "api_version": api_version, "kind": kind, "key": "default/victim",
               "type": "merge", "body": {"data": {"pwned": "yes"}}})
    };
    let create = |ns: &str, name: &str| {
        json!({"op": "create", "api_version": "v1", "kind": "ConfigMap",
               "body": {"metadata": {"name": name, "namespace": ns}, "data": {"pwned": "yes"}}})
    };
    let long = "a".repeat(300);
    let mut ops = Vec::new();
    for key in [
        "default/victim#",
        "default/victim?fieldManager=kube-controller-manager&x=",
        "default/victim?dryRun=None&x=",
        "default/victim/status",
        "default/../kube-system/victim",
        "../victim",
        "default/..",
        "default/.",
        "default/victim%23",
        "kube-system/victim",
        "default/victim%3FfieldManager=x",
        "default/victim\0",
        "default/victim\n",
        "default/ victim",
        "default/VICTIM",
        "Default/victim",
        "default#/victim",
        "default?x=/victim",
        " default/victim",
        "default%2Fvictim",
        "default/",
        "/victim",
        &format!("default/{long}"),
        &format!("{long}/victim"),
    ] {
        ops.push(patch(key));
    }
    ops.push(json!({"op": "delete", "api_version": "v1", "kind": "ConfigMap", "key": "default/victim#"}));
    ops.push(json!({"op": "delete", "api_version": "v1", "kind": "ConfigMap", "key": "default/victim?x="}));
    for (ns, name) in [("default#", "made"), ("default/x", "made"), ("Default", "made")] {
        ops.push(create(ns, name));
    }
    let body_names = [
        "made#",
        "made?fieldManager=kube-controller-manager",
        "Made",
        "made\0",
        &long,
    ];
    assert_eq!(body_names.len(), BODY_NAME_TRICKS);
    for name in body_names {
        ops.push(create("default", name));
    }
    ops.push(json!({"op": "replace", "api_version": "v1", "kind": "ConfigMap",
                    "body": {"metadata": {"name": "victim#", "namespace": "default"}, "data": {"pwned": "yes"}}}));
    for (v, k) in [
        ("/v1", "ConfigMap"),
        ("v1/", "ConfigMap"),
        ("core/v1", "ConfigMap"),
        ("V1", "ConfigMap"),
        (" v1", "ConfigMap"),
        ("v1%00", "ConfigMap"),
        ("v1\0", "ConfigMap"),
        ("v1", "configmap"),
        ("v1", "ConfigMap\0"),
    ] {
        ops.push(typed(v, k));
    }
    ops
}

/// `write-probe` under `grant` runs `ops` once: its answers.
async fn run_probe(sim: &Sim, test: &str, ops: &[Value], grant: &str) -> Vec<String> {
    let s = Setup::new(test, sim);
    let config = json!({
        "writes": [{"api_version": "v1", "kind": "ConfigMap", "verbs": ["create", "update", "patch", "delete"]}],
        "ops": ops,
    });
    s.install("write_probe", "probe", Some(&config));
    let file = s.plugins.parent().unwrap().join("grants.yaml");
    std::fs::write(&file, grant).unwrap();
    let wink = s.run(&["--grants", file.to_str().unwrap()]);
    wait_synced(&wink, "probe");
    let trigger = json!({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "trigger", "namespace": "default"}});
    sim.insert(trigger).unwrap();
    wink.wait_for_line("[probe] probe done", WAIT);
    assert!(
        !wink.lines().iter().any(|l| l.contains("plugin trapped")),
        "refusals are values, not traps"
    );
    lines_starting(&wink, "probe", "write ")
}

const GRANT: &str = r#"
plugins:
  probe:
    MODE
    writes:
      - {apiVersion: v1, kind: ConfigMap, verbs: [create, update, patch, delete], namespaces: [default]}
"#;

/// Every trick is refused with an error the guest can read, and none
/// reached the server in a URL: the victim is as it was, nothing was made,
/// and no write carried another field manager. A name in a create's body
/// (never in its URL) is the server's to refuse: its 422 names the field.
async fn assert_nothing_got_through(sim: &Sim, before: &ConfigMap, answers: &[String], tricks: usize) {
    assert!(answers.len() >= tricks, "{answers:#?}");
    for a in &answers[..tricks] {
        let by_the_server = a.contains(" create: error invalid 422 Invalid") && a.contains("metadata.name");
        assert!(
            a.contains(": error invalid-argument: ")
                || a.contains(": error not-permitted: ")
                || by_the_server,
            "refused before anything is sent: {a}"
        );
    }
    let after = victim(sim).await;
    assert_eq!(
        after.resource_version(),
        before.resource_version(),
        "the victim is unchanged"
    );
    assert_eq!(after.data, before.data);
    assert_eq!(
        after.managed_fields(),
        before.managed_fields(),
        "no other field manager"
    );
    let names: Vec<String> = Api::<ConfigMap>::namespaced(sim.client(), "default")
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|c| c.name_any())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| n == "victim" || n == "trigger" || n == "kube-root-ca.crt"),
        "nothing was made: {names:?}"
    );
    assert_eq!(
        sim.request_count("create", "configmaps"),
        BODY_NAME_TRICKS as u64,
        "only creates with a bad name in their body reached the server"
    );
    assert_eq!(sim.request_count("update", "configmaps"), 0);
}

/// `default/victim`, written in process (not counted as a request).
async fn victim_setup(sim: &Sim) -> ConfigMap {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "victim", "namespace": "default", "labels": {"app": "victim"}},
                    "data": {"k": "v"}});
    sim.insert(cm).unwrap();
    victim(sim).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_audit_mode_no_key_trick_writes_for_real() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let before = victim_setup(&sim).await;
    let mut ops = tricks();
    let n = ops.len();
    // Then the same writes spelled right: dry runs that reach the server.
    ops.push(
        json!({"op": "patch", "api_version": "v1", "kind": "ConfigMap", "key": "default/victim",
                    "type": "merge", "body": {"data": {"pwned": "yes"}}}),
    );
    ops.push(json!({"op": "delete", "api_version": "v1", "kind": "ConfigMap", "key": "default/victim"}));
    let grant = GRANT.replace("MODE", "mode: audit");
    let answers = run_probe(&sim, "escape_audit", &ops, &grant).await;
    assert_eq!(answers.len(), n + 2, "{answers:#?}");
    // Both answers say they were dry runs.
    assert_eq!(
        answers[n],
        format!("write {n} patch: ok default/victim (dry run)")
    );
    assert!(
        answers[n + 1].starts_with(&format!("write {} delete: ok", n + 1))
            && answers[n + 1].ends_with("(dry run)"),
        "{answers:#?}"
    );
    assert_nothing_got_through(&sim, &before, &answers, n).await;
    assert_eq!(
        sim.request_count("patch", "configmaps"),
        1,
        "only the dry run was sent"
    );
    assert_eq!(
        sim.request_count("delete", "configmaps"),
        1,
        "only the dry run was sent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_enforce_mode_no_key_trick_reaches_the_server() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let before = victim_setup(&sim).await;
    let ops = tricks();
    let grant = GRANT.replace("MODE", "mode: enforce");
    let answers = run_probe(&sim, "escape_enforce", &ops, &grant).await;
    assert_eq!(answers.len(), ops.len(), "{answers:#?}");
    assert_nothing_got_through(&sim, &before, &answers, ops.len()).await;
    assert_eq!(sim.request_count("patch", "configmaps"), 0);
    assert_eq!(sim.request_count("delete", "configmaps"), 0);
}
