//! End-to-end: the indexer across the sandbox (issue 5). Real plugins built
//! for wasm32-wasip2, the real `wink run` binary, the simulated API server and
//! the real kube client: the three example plugins reproduce the seeds'
//! output; `cache-probe` checks the query scope, Secrets, typed errors; the
//! cache view is queried over plain HTTP.

mod common;

use common::{Wink, plugin, scratch};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Secret};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wink::sim::{Sim, SimConfig};

const WAIT: Duration = Duration::from_secs(60);

fn from_json<T: k8s_openapi::serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).unwrap()
}

fn pod(ns: &str, name: &str, labels: Value, owner: Option<(&str, &str, &str)>) -> Pod {
    let owners: Vec<Value> = owner
        .into_iter()
        .map(|(kind, name, uid)| {
            json!({"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": uid, "controller": true})
        })
        .collect();
    from_json(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels, "ownerReferences": owners},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}
    }))
}

fn deployment(ns: &str, name: &str, replicas: i32) -> Deployment {
    from_json(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        }
    }))
}

fn config_map(ns: &str, name: &str, labels: Value) -> ConfigMap {
    from_json(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "data": {"k": "v"}
    }))
}

async fn namespace(sim: &Sim, name: &str) {
    let ns: Namespace =
        from_json(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}));
    Api::<Namespace>::all(sim.client())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

/// A scratch dir with a plugin dir and a kubeconfig for `sim`.
struct Setup {
    plugins: PathBuf,
    kubeconfig: PathBuf,
}

impl Setup {
    fn new(test: &str, sim: &Sim) -> Setup {
        let dir = scratch(test);
        let plugins = dir.join("plugins");
        std::fs::create_dir_all(&plugins).unwrap();
        let kubeconfig = dir.join("kubeconfig");
        sim.write_kubeconfig(&kubeconfig).unwrap();
        Setup { plugins, kubeconfig }
    }

    /// Install the built crate `crate_name` as plugin `name`, with a config.
    fn install(&self, crate_name: &str, name: &str, config: Option<&Value>) {
        std::fs::copy(plugin(crate_name), self.plugins.join(format!("{name}.wasm"))).unwrap();
        if let Some(config) = config {
            std::fs::write(self.plugins.join(format!("{name}.json")), config.to_string()).unwrap();
        }
    }

    fn run(&self, extra: &[&str]) -> Wink {
        let mut args = vec![
            "run",
            "--plugins",
            self.plugins.to_str().unwrap(),
            "--kubeconfig",
            self.kubeconfig.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        Wink::spawn(&args)
    }
}

fn wait_synced(wink: &Wink, plugin: &str) {
    wink.wait_for_line(&format!("plugin synced plugin={plugin}"), WAIT);
}

/// The lines of `plugin` that start with `prefix`.
fn lines_starting(wink: &Wink, plugin: &str, prefix: &str) -> Vec<String> {
    wink.plugin_lines(plugin)
        .into_iter()
        .filter(|l| l.starts_with(prefix))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_index_prints_the_keys_sharing_the_app_label() {
    // Seed 001: LabelsIndexFunc on `app`, pods ns1/pod1 (l1) and ns2/pod2 (l2);
    // IndexKeys("app", "l1") is [ns1/pod1].
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("cache_app_index", &sim);
    s.install("app_index", "app-index", None);
    namespace(&sim, "ns1").await;
    namespace(&sim, "ns2").await;
    let ns1: Api<Pod> = Api::namespaced(sim.client(), "ns1");
    let ns2: Api<Pod> = Api::namespaced(sim.client(), "ns2");
    let pp = PostParams::default();
    ns1.create(&pp, &pod("ns1", "pod1", json!({"app": "l1"}), None))
        .await
        .unwrap();
    ns2.create(&pp, &pod("ns2", "pod2", json!({"app": "l2"}), None))
        .await
        .unwrap();

    let wink = s.run(&[]);
    wait_synced(&wink, "app-index");
    ns1.create(&pp, &pod("ns1", "pod3", json!({"app": "l1"}), None))
        .await
        .unwrap();
    ns2.create(&pp, &pod("ns2", "nolabel", json!({}), None))
        .await
        .unwrap();
    wink.wait_for_line("[app-index] add: ns2/nolabel", WAIT);
    ns1.delete("pod1", &DeleteParams::default()).await.unwrap();
    wink.wait_for_line("[app-index] delete: ns1/pod1", WAIT);

    let lines = wink.plugin_lines("app-index");
    let (initial, live) = lines.split_at(2);
    let mut initial = initial.to_vec();
    initial.sort();
    assert_eq!(
        initial,
        [
            "add: ns1/pod1 app=l1 -> [ns1/pod1]",
            "add: ns2/pod2 app=l2 -> [ns2/pod2]"
        ],
        "{lines:#?}"
    );
    assert_eq!(
        live,
        [
            "add: ns1/pod3 app=l1 -> [ns1/pod1 ns1/pod3]",
            "add: ns2/nolabel (no app label)",
            // The store is updated before the notification: pod1 is gone.
            "delete: ns1/pod1 app=l1 -> [ns1/pod3]",
        ],
        "{lines:#?}"
    );
}

/// Split deployment-lister's output into one block per event: the listing
/// printed first, then the event line.
fn lister_blocks(lines: &[String]) -> Vec<(Vec<String>, String)> {
    let mut blocks = Vec::new();
    let mut listing = Vec::new();
    for l in lines {
        if l.contains(" -> ") {
            listing.push(l.clone());
        } else if l.starts_with("add a deployment:")
            || l.starts_with("update deployment:")
            || l.starts_with("delete a deployment:")
        {
            blocks.push((std::mem::take(&mut listing), l.clone()));
        }
    }
    blocks
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployment_lister_lists_default_from_the_cache_on_every_event_and_resyncs() {
    // Seed 003: the deployment lister (resync 1 s here instead of 60 s).
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("cache_deployment_lister", &sim);
    s.install(
        "deployment_lister",
        "deployment-lister",
        Some(&json!({"resync_seconds": 1})),
    );
    namespace(&sim, "other").await;
    let default: Api<Deployment> = Api::namespaced(sim.client(), "default");
    let other: Api<Deployment> = Api::namespaced(sim.client(), "other");
    let pp = PostParams::default();
    default
        .create(&pp, &deployment("default", "d1", 1))
        .await
        .unwrap();

    let wink = s.run(&[]);
    wink.wait_for_line("[deployment-lister] add a deployment: d1", WAIT);
    default
        .create(&pp, &deployment("default", "d2", 1))
        .await
        .unwrap();
    other
        .create(&pp, &deployment("other", "elsewhere", 1))
        .await
        .unwrap();
    wink.wait_for_line("[deployment-lister] add a deployment: elsewhere", WAIT);
    // At least one resync of both after the adds.
    wink.wait_until("resyncs of d1 and d2", WAIT, |w| {
        let blocks = lister_blocks(&w.plugin_lines("deployment-lister"));
        let after_adds = blocks
            .iter()
            .skip_while(|(_, e)| e != "add a deployment: elsewhere")
            .map(|(_, e)| e.as_str())
            .collect::<Vec<_>>();
        after_adds.contains(&"update deployment: d1 d1") && after_adds.contains(&"update deployment: d2 d2")
    });
    default.delete("d1", &DeleteParams::default()).await.unwrap();
    wink.wait_for_line("[deployment-lister] delete a deployment: d1", WAIT);
    wink.wait_until("a resync after the delete", WAIT, |w| {
        lister_blocks(&w.plugin_lines("deployment-lister"))
            .iter()
            .skip_while(|(_, e)| e != "delete a deployment: d1")
            .any(|(_, e)| e == "update deployment: d2 d2")
    });

    let blocks = lister_blocks(&wink.plugin_lines("deployment-lister"));
    let block = |event: &str| -> Vec<String> {
        blocks
            .iter()
            .find(|(_, e)| e == event)
            .unwrap_or_else(|| panic!("no {event:?} in {blocks:#?}"))
            .0
            .clone()
    };
    // The cache is at least as new as the event: each event's listing
    // holds the state the event brought (later changes only came after the
    // test saw that event).
    assert_eq!(
        blocks[0],
        (vec!["1 -> d1".to_string()], "add a deployment: d1".to_string())
    );
    assert_eq!(block("add a deployment: d2"), ["1 -> d1", "2 -> d2"]);
    // A deployment in another namespace is delivered but not listed.
    assert_eq!(block("add a deployment: elsewhere"), ["1 -> d1", "2 -> d2"]);
    assert_eq!(block("delete a deployment: d1"), ["1 -> d2"]);
    // Resyncs re-deliver unchanged objects as updates (old == new), and
    // after the delete only the remaining deployments.
    let after_delete: Vec<_> = blocks
        .iter()
        .skip_while(|(_, e)| e != "delete a deployment: d1")
        .skip(1)
        .collect();
    assert!(!after_delete.is_empty());
    for (listing, event) in after_delete {
        assert!(
            event == "update deployment: d2 d2" || event == "update deployment: elsewhere elsewhere",
            "{blocks:#?}"
        );
        assert_eq!(listing, &["1 -> d2"], "{blocks:#?}");
    }
}

/// Minimal HTTP/1.1 GET (or another method) against the cache view; returns
/// (status, body).
async fn http(addr: &str, method: &str, path: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let raw = String::from_utf8(raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let body = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        let mut out = String::new();
        let mut rest = body;
        loop {
            let (size, tail) = rest.split_once("\r\n").unwrap();
            let size = usize::from_str_radix(size.trim(), 16).unwrap();
            if size == 0 {
                break;
            }
            out.push_str(&tail[..size]);
            rest = &tail[size + 2..];
        }
        out
    } else {
        body.to_string()
    };
    (status, body)
}

async fn get_json(addr: &str, path: &str) -> (u16, Value) {
    let (status, body) = http(addr, "GET", path).await;
    let v = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"));
    (status, v)
}

fn item_keys(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o["metadata"]["namespace"].as_str().unwrap_or(""),
                o["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Poll the cache view until `path` lists `want` (the informer caught up).
async fn wait_view(addr: &str, path: &str, want: &[&str]) -> Value {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let (status, list) = get_json(addr, path).await;
        if status == 200 && item_keys(&list) == want {
            return list;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{path}: wanted {want:?}, last answer {status} {list}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replica_checker_counts_pods_through_owner_indexes() {
    // Seed 000: deployment -> ReplicaSet (only read) -> pods, by owner uid.
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("cache_replica_checker", &sim);
    s.install("replica_checker", "replica-checker", None);
    let view = format!("127.0.0.1:{}", free_port());
    let wink = s.run(&["--cache-view", &view]);
    wait_synced(&wink, "replica-checker");
    wink.wait_for_line("cache view listening", WAIT);

    let pp = PostParams::default();
    let deployments: Api<Deployment> = Api::namespaced(sim.client(), "default");
    let sets: Api<ReplicaSet> = Api::namespaced(sim.client(), "default");
    let pods: Api<Pod> = Api::namespaced(sim.client(), "default");
    let d = deployments
        .create(&pp, &deployment("default", "web", 2))
        .await
        .unwrap();
    let d_uid = d.metadata.uid.unwrap();
    // The deployment alone: no replica set yet, no pods.
    wink.wait_for_line("[replica-checker] deployment web: 0 pods, spec.replicas 2", WAIT);

    let rs: ReplicaSet = from_json(json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web-5d9", "namespace": "default",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": d_uid, "controller": true}]},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
    }));
    let rs = sets.create(&pp, &rs).await.unwrap();
    let rs_uid = rs.metadata.uid.unwrap();
    // ReplicaSets are a `read`: no event reaches the plugin, so wait until
    // the informer has it (pods and replica sets are separate watches).
    wait_view(&view, "/cache/apps/v1/replicasets", &["default/web-5d9"]).await;

    let owner = Some(("ReplicaSet", "web-5d9", rs_uid.as_str()));
    pods.create(&pp, &pod("default", "web-5d9-a", json!({"app": "web"}), owner))
        .await
        .unwrap();
    wink.wait_for_line("[replica-checker] deployment web: 1 pods, spec.replicas 2", WAIT);
    pods.create(&pp, &pod("default", "web-5d9-b", json!({"app": "web"}), owner))
        .await
        .unwrap();
    wink.wait_for_line("[replica-checker] deployment web: 2 pods, as specified", WAIT);
    // A pod owned by nothing is not counted and logs nothing.
    pods.create(&pp, &pod("default", "stray", json!({"app": "web"}), None))
        .await
        .unwrap();
    pods.delete("web-5d9-a", &DeleteParams::default()).await.unwrap();
    wink.wait_until("the count after the delete", WAIT, |w| {
        w.plugin_lines("replica-checker").len() >= 4
    });

    let lines = wink.plugin_lines("replica-checker");
    assert_eq!(
        lines,
        [
            "deployment web: 0 pods, spec.replicas 2",
            "deployment web: 1 pods, spec.replicas 2",
            "deployment web: 2 pods, as specified",
            "deployment web: 1 pods, spec.replicas 2",
        ]
    );
    // The mismatch is a warning, the match an info line.
    let levels: Vec<bool> = wink
        .lines()
        .iter()
        .filter(|l| l.contains("[replica-checker] deployment web"))
        .map(|l| l.contains("WARN"))
        .collect();
    assert_eq!(levels, [true, true, false, true]);
}

fn probe_config(watches: Value, reads: Value, queries: Value) -> Value {
    json!({"watches": watches, "reads": reads, "trigger": "probe", "queries": queries})
}

/// The `query N ...` lines of a probe plugin after its last trigger.
fn probe_answers(wink: &Wink, plugin: &str) -> Vec<String> {
    lines_starting(wink, plugin, "query ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_outside_the_scope_is_refused_in_the_guest_and_logged_on_the_host() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("cache_scope", &sim);
    let cm = json!({"api_version": "v1", "kind": "ConfigMap"});
    let deployments = json!({"api_version": "apps/v1", "kind": "Deployment"});
    // `scoped` reads deployments; `narrow` does not, and asks anyway.
    let queries = json!([
        {"op": "list", "api_version": "apps/v1", "kind": "Deployment", "namespace": "default"},
        {"op": "get", "api_version": "apps/v1", "kind": "Deployment", "key": "default/web"},
        {"op": "get", "api_version": "v1", "kind": "ConfigMap", "key": "default/probe"},
    ]);
    s.install(
        "cache_probe",
        "scoped",
        Some(&probe_config(json!([cm]), json!([deployments]), queries.clone())),
    );
    s.install(
        "cache_probe",
        "narrow",
        Some(&probe_config(json!([cm]), json!([]), queries)),
    );
    let pp = PostParams::default();
    Api::<Deployment>::namespaced(sim.client(), "default")
        .create(&pp, &deployment("default", "web", 1))
        .await
        .unwrap();

    let wink = s.run(&[]);
    wait_synced(&wink, "scoped");
    wait_synced(&wink, "narrow");
    Api::<ConfigMap>::namespaced(sim.client(), "default")
        .create(&pp, &config_map("default", "probe", json!({})))
        .await
        .unwrap();
    wink.wait_for_line("[scoped] probe done", WAIT);
    wink.wait_for_line("[narrow] probe done", WAIT);

    assert_eq!(
        probe_answers(&wink, "scoped"),
        [
            "query 0 list Deployment: ok [default/web]",
            "query 1 get Deployment: ok [default/web]",
            "query 2 get ConfigMap: ok [default/probe]",
        ]
    );
    let refused = "error not-permitted: apps/v1 Deployment is not watched by this plugin";
    assert_eq!(
        probe_answers(&wink, "narrow"),
        [
            format!("query 0 list Deployment: {refused}"),
            format!("query 1 get Deployment: {refused}"),
            "query 2 get ConfigMap: ok [default/probe]".to_string(),
        ]
    );
    // One host log line per refused query, naming the plugin; none for `scoped`.
    let refusals = |plugin: &str| {
        wink.lines()
            .iter()
            .filter(|l| l.contains("cache query refused") && l.contains(&format!("plugin={plugin}")))
            .count()
    };
    assert_eq!(refusals("narrow"), 2, "{}", wink.lines().join("\n"));
    assert_eq!(refusals("scoped"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_are_denied_by_default_and_granted_per_plugin() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("cache_secrets", &sim);
    let cm = json!({"api_version": "v1", "kind": "ConfigMap"});
    let secrets = json!({"api_version": "v1", "kind": "Secret"});
    let queries = json!([{"op": "get", "api_version": "v1", "kind": "Secret", "key": "default/token"}]);
    let reader = probe_config(json!([cm]), json!([secrets]), queries.clone());
    // Same component, same config: only the name differs.
    s.install("cache_probe", "granted", Some(&reader));
    s.install("cache_probe", "denied", Some(&reader));
    // A plugin that does not ask for Secrets cannot query them either.
    s.install(
        "cache_probe",
        "bystander",
        Some(&probe_config(json!([cm]), json!([]), queries)),
    );
    let pp = PostParams::default();
    let secret: Secret = from_json(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "token", "namespace": "default"}, "stringData": {"t": "s3cr3t"}
    }));
    Api::<Secret>::namespaced(sim.client(), "default")
        .create(&pp, &secret)
        .await
        .unwrap();

    let view = format!("127.0.0.1:{}", free_port());
    let wink = s.run(&["--allow-secrets", "granted", "--cache-view", &view]);
    wink.wait_for_line("plugins loaded", WAIT);
    wait_synced(&wink, "granted");
    wait_synced(&wink, "bystander");
    Api::<ConfigMap>::namespaced(sim.client(), "default")
        .create(&pp, &config_map("default", "probe", json!({})))
        .await
        .unwrap();
    wink.wait_for_line("[granted] probe done", WAIT);
    wink.wait_for_line("[bystander] probe done", WAIT);

    assert_eq!(
        probe_answers(&wink, "granted"),
        ["query 0 get Secret: ok [default/token]"]
    );
    assert_eq!(
        probe_answers(&wink, "bystander"),
        ["query 0 get Secret: error not-permitted: v1 Secret is not watched by this plugin"]
    );
    // `denied` asked for Secrets without the operator's grant: refused at
    // registration, with a clear line, and it never runs.
    let not_loaded: Vec<String> = wink
        .lines()
        .into_iter()
        .filter(|l| l.contains("plugin not loaded"))
        .collect();
    assert_eq!(not_loaded.len(), 1, "{not_loaded:#?}");
    assert!(
        not_loaded[0].contains("plugin denied asks for Secrets")
            && not_loaded[0].contains("--allow-secrets denied"),
        "{not_loaded:#?}"
    );
    assert!(wink.plugin_lines("denied").is_empty());
    // The grant is the plugin's, not the cache view's: it serves no Secrets,
    // though an informer caches them.
    wink.wait_for_line("cache view listening", WAIT);
    let (status, body) = get_json(&view, "/cache/core/v1/secrets").await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["reason"], "Forbidden");
    let (status, _) = get_json(&view, "/cache/core/v1/configmaps").await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_queries_are_typed_errors_not_traps() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("cache_typed_errors", &sim);
    let cm = json!({"api_version": "v1", "kind": "ConfigMap", "indexes": {"app": "label:app", "owner": "owner-uid"}});
    let q = |op: &str, extra: Value| {
        let mut v = json!({"op": op, "api_version": "v1", "kind": "ConfigMap"});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v
    };
    let queries = json!([
        q("by-index", json!({"index": "nope", "value": "x"})),
        q("index-keys", json!({"index": "nope", "value": "x"})),
        q("list-index-values", json!({"index": "nope"})),
        q("list", json!({"selector": "app in (web"})),
        q("by-index", json!({"index": "app", "value": "web"})),
        q("index-keys", json!({"index": "app", "value": "web"})),
        q("list-index-values", json!({"index": "app"})),
        q("by-index", json!({"index": "namespace", "value": "default"})),
        q("list", json!({"selector": "app notin (db),app"})),
        q("list", json!({"namespace": "ns1"})),
        q("get", json!({"key": "default/missing"})),
    ]);
    s.install(
        "cache_probe",
        "probe",
        Some(&probe_config(json!([cm]), json!([]), queries)),
    );
    namespace(&sim, "ns1").await;
    let pp = PostParams::default();
    let default: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    let ns1: Api<ConfigMap> = Api::namespaced(sim.client(), "ns1");
    default
        .create(&pp, &config_map("default", "w1", json!({"app": "web"})))
        .await
        .unwrap();
    default
        .create(&pp, &config_map("default", "d1", json!({"app": "db"})))
        .await
        .unwrap();
    ns1.create(&pp, &config_map("ns1", "w2", json!({"app": "web"})))
        .await
        .unwrap();

    let wink = s.run(&[]);
    wait_synced(&wink, "probe");
    default
        .create(&pp, &config_map("default", "probe", json!({})))
        .await
        .unwrap();
    wink.wait_for_line("[probe] probe done", WAIT);
    // The instance lives on: a second trigger runs the queries again.
    ns1.create(&pp, &config_map("ns1", "probe", json!({})))
        .await
        .unwrap();
    wink.wait_until("a second probe", WAIT, |w| {
        lines_starting(w, "probe", "probe done").len() == 2
    });

    let answers = probe_answers(&wink, "probe");
    assert_eq!(answers.len(), 22, "{answers:#?}");
    let mut first = answers[..11].to_vec();
    // The selector parser's wording is its own; the variant is the contract.
    let invalid = "query 3 list ConfigMap: error invalid-argument: ";
    assert!(first[3].starts_with(invalid), "{answers:#?}");
    first[3] = invalid.to_string();
    assert_eq!(
        first,
        [
            "query 0 by-index ConfigMap: error unknown-index: nope",
            "query 1 index-keys ConfigMap: error unknown-index: nope",
            "query 2 list-index-values ConfigMap: error unknown-index: nope",
            invalid,
            "query 4 by-index ConfigMap: ok [default/w1 ns1/w2]",
            "query 5 index-keys ConfigMap: ok [default/w1 ns1/w2]",
            "query 6 list-index-values ConfigMap: ok [db web]",
            "query 7 by-index ConfigMap: ok [default/d1 default/probe default/w1]",
            "query 8 list ConfigMap: ok [default/w1 ns1/w2]",
            "query 9 list ConfigMap: ok [ns1/w2]",
            "query 10 get ConfigMap: ok [none]",
        ]
    );
    assert_eq!(answers[20], "query 9 list ConfigMap: ok [ns1/probe ns1/w2]");
    assert!(
        !wink.lines().iter().any(|l| l.contains("plugin trapped")),
        "{}",
        wink.lines().join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cache_view_answers_kubernetes_lists_from_the_cache() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("cache_view", &sim);
    s.install("app_index", "app-index", None);
    namespace(&sim, "ns1").await;
    namespace(&sim, "ns2").await;
    let pp = PostParams::default();
    let ns1: Api<Pod> = Api::namespaced(sim.client(), "ns1");
    let ns2: Api<Pod> = Api::namespaced(sim.client(), "ns2");
    ns1.create(
        &pp,
        &pod("ns1", "pod1", json!({"app": "l1", "tier": "web"}), None),
    )
    .await
    .unwrap();
    ns1.create(&pp, &pod("ns1", "pod3", json!({"app": "l2"}), None))
        .await
        .unwrap();
    ns2.create(&pp, &pod("ns2", "pod2", json!({"app": "l1"}), None))
        .await
        .unwrap();

    let addr = format!("127.0.0.1:{}", free_port());
    let wink = s.run(&["--cache-view", &addr]);
    wait_synced(&wink, "app-index");
    wink.wait_for_line("cache view listening", WAIT);
    let lists_before = sim.request_count("list", "pods");

    let (status, all) = get_json(&addr, "/cache/core/v1/pods").await;
    assert_eq!(status, 200, "{all}");
    assert_eq!(all["apiVersion"], "v1");
    assert_eq!(all["kind"], "PodList");
    assert!(all["metadata"].is_object());
    assert_eq!(item_keys(&all), ["ns1/pod1", "ns1/pod3", "ns2/pod2"]);
    // Items are the cached objects themselves (apiVersion/kind included).
    assert_eq!(all["items"][0]["kind"], "Pod");
    assert_eq!(all["items"][0]["metadata"]["labels"]["tier"], "web");

    let keys = |path: &'static str| {
        let addr = addr.clone();
        async move {
            let (status, list) = get_json(&addr, path).await;
            assert_eq!(status, 200, "{path}: {list}");
            item_keys(&list)
        }
    };
    assert_eq!(
        keys("/cache/core/v1/pods?namespace=ns1").await,
        ["ns1/pod1", "ns1/pod3"]
    );
    // The plugin's index `app` (seed 001's indexer_run: pods with app=l1).
    assert_eq!(
        keys("/cache/core/v1/pods?index=app&value=l1").await,
        ["ns1/pod1", "ns2/pod2"]
    );
    assert_eq!(
        keys("/cache/core/v1/pods?index=app&value=l1&namespace=ns2").await,
        ["ns2/pod2"]
    );
    assert_eq!(
        keys("/cache/core/v1/pods?labelSelector=app%3Dl1,tier").await,
        ["ns1/pod1"]
    );
    assert!(keys("/cache/core/v1/pods?index=app&value=none").await.is_empty());

    // A later change is visible without asking the API server.
    ns2.create(&pp, &pod("ns2", "pod4", json!({"app": "l1"}), None))
        .await
        .unwrap();
    wait_view(
        &addr,
        "/cache/core/v1/pods?index=app&value=l1",
        &["ns1/pod1", "ns2/pod2", "ns2/pod4"],
    )
    .await;
    assert_eq!(
        sim.request_count("list", "pods"),
        lists_before,
        "served from the cache"
    );

    // Errors are Kubernetes Status objects.
    let (status, body) = get_json(&addr, "/cache/core/v1/pods?index=nope&value=x").await;
    assert_eq!(
        (status, &body["kind"], &body["reason"]),
        (400, &json!("Status"), &json!("BadRequest"))
    );
    let (status, body) = get_json(&addr, "/cache/core/v1/pods?labelSelector=app%20in%20(").await;
    assert_eq!((status, &body["reason"]), (400, &json!("BadRequest")), "{body}");
    let (status, body) = get_json(&addr, "/cache/apps/v1/deployments").await;
    assert_eq!((status, &body["reason"]), (404, &json!("NotFound")), "{body}");
    // Read-only.
    let (status, _) = http(&addr, "DELETE", "/cache/core/v1/pods").await;
    assert_eq!(status, 405);
}
