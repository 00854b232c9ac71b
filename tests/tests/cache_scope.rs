//! End-to-end: what a plugin may ask of the cache. `cache-probe`
//! checks the query scope (watches and `reads`), Secrets denied by default and
//! granted per plugin, and typed errors instead of traps; field indexes
//! through lists, and a field path that cannot index refused at
//! registration; the cache view is queried over plain HTTP.

use crate::cache_support;
use crate::common;

use cache_support::*;
use common::Wink;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};
use wink_sim::{Sim, SimConfig};

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

    let wink = run_and_trigger(&s, &default).await;
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

/// `wink run` with the probe plugin; once synced, trigger its queries in
/// `default` and wait for their answers.
async fn run_and_trigger(s: &Setup, default: &Api<ConfigMap>) -> Wink {
    let wink = s.run(&[]);
    wait_synced(&wink, "probe");
    default
        .create(&PostParams::default(), &config_map("default", "probe", json!({})))
        .await
        .unwrap();
    wink.wait_for_line("[probe] probe done", WAIT);
    wink
}

/// The selectors of the selector test, and what the API server answers to
/// each: the keys it lists, or its error message.
async fn api_server_answers(sim: &Sim, selectors: &[&str]) -> Vec<String> {
    let all: Api<ConfigMap> = Api::all(sim.client());
    let mut answers = Vec::new();
    for selector in selectors {
        answers.push(match all.list(&ListParams::default().labels(selector)).await {
            Ok(list) => {
                let mut keys: Vec<String> = list
                    .items
                    .iter()
                    .map(|cm| format!("{}/{}", cm.namespace().unwrap_or_default(), cm.name_any()))
                    .collect();
                keys.sort();
                format!("ok [{}]", keys.join(" "))
            }
            Err(kube::Error::Api(status)) => format!("error invalid-argument: {}", status.message),
            Err(e) => panic!("{selector}: {e}"),
        });
    }
    answers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_list_selectors_answer_as_the_api_servers_list() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("cache_selectors", &sim);
    let selectors = [
        "replicas>3",
        "replicas<5",
        "replicas>3,app=web",
        "replicas notin (5),app",
        "!replicas",
        "app in (web,db),replicas!=10",
        "replicas>x",
        "app in (web",
    ];
    // Each selector is asked as `list`, then as `first` across namespaces
    // and in `default` (the namespace-index walk that stops early).
    let queries: Vec<Value> = selectors
        .iter()
        .flat_map(|sel| {
            [
                json!({"op": "list", "api_version": "v1", "kind": "ConfigMap", "selector": sel}),
                json!({"op": "first", "api_version": "v1", "kind": "ConfigMap", "selector": sel}),
                json!({"op": "first", "api_version": "v1", "kind": "ConfigMap", "selector": sel,
                       "namespace": "default"}),
            ]
        })
        .collect();
    let cm = json!({"api_version": "v1", "kind": "ConfigMap"});
    s.install(
        "cache_probe",
        "probe",
        Some(&probe_config(json!([cm]), json!([]), json!(queries))),
    );
    let pp = PostParams::default();
    let default: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    for (name, labels) in [
        ("r1", json!({"replicas": "1", "app": "web"})),
        ("r3", json!({"replicas": "3", "app": "db"})),
        ("r5", json!({"replicas": "5", "app": "web"})),
        ("r10", json!({"replicas": "10", "app": "web"})),
        ("rx", json!({"replicas": "x", "app": "db"})),
        ("none", json!({"app": "cache"})),
    ] {
        default
            .create(&pp, &config_map("default", name, labels))
            .await
            .unwrap();
    }
    let wink = run_and_trigger(&s, &default).await;
    let answers: Vec<String> = probe_answers(&wink, "probe")
        .iter()
        .map(|line| {
            line.split_once("ConfigMap: ")
                .expect("a query line")
                .1
                .to_string()
        })
        .collect();
    // The same objects, listed by the API server: its answers are the
    // expectation; check they are the interesting ones (integer
    // comparisons, a refusal).
    let expected = api_server_answers(&sim, &selectors).await;
    assert_eq!(expected[0], "ok [default/r10 default/r5]");
    assert!(
        expected[7].starts_with("error invalid-argument: unable to parse requirement"),
        "{expected:?}"
    );
    // `first` answers the first key of the same list, or nothing, and
    // refuses what `list` refuses.
    let first_of = |answer: &String| match answer.strip_prefix("ok [") {
        Some(keys) => format!(
            "ok [{}]",
            keys.trim_end_matches(']').split(' ').next().unwrap_or("")
        ),
        None => answer.clone(),
    };
    let expected: Vec<String> = expected
        .iter()
        .flat_map(|answer| [answer.clone(), first_of(answer), first_of(answer)])
        .collect();
    assert_eq!(expected[1], "ok [default/r10]");
    assert_eq!(answers, expected);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn field_indexes_read_through_lists_and_a_path_that_cannot_index_is_refused() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("cache_field_lists", &sim);
    let cm = json!({"api_version": "v1", "kind": "ConfigMap"});
    let ing = "networking.k8s.io/v1";
    let ingresses = |indexes: Value| json!([{"api_version": ing, "kind": "Ingress", "indexes": indexes}]);
    let queries = json!([
        {"op": "list-index-values", "api_version": ing, "kind": "Ingress", "index": "host"},
        {"op": "index-keys", "api_version": ing, "kind": "Ingress", "index": "host", "value": "b.example.com"},
        {"op": "list-index-values", "api_version": ing, "kind": "Ingress", "index": "service"},
        {"op": "index-keys", "api_version": ing, "kind": "Ingress", "index": "service", "value": "web"},
    ]);
    let lists = ingresses(json!({
        "host": "field:spec.rules.host",
        "service": "field:spec.rules[*].http.paths[*].backend.service.name",
    }));
    s.install(
        "cache_probe",
        "lists",
        Some(&probe_config(json!([cm]), lists, queries)),
    );
    let broken = ingresses(json!({"first": "field:spec.rules[0"}));
    s.install(
        "cache_probe",
        "broken",
        Some(&probe_config(json!([cm]), broken, json!([]))),
    );
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("networking.k8s.io", "v1", "Ingress"),
        "ingresses",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(sim.client(), "default", &ar);
    let path = |p: &str, svc: &str| {
        json!({"path": p, "pathType": "Prefix",
        "backend": {"service": {"name": svc, "port": {"number": 80}}}})
    };
    for (name, rules) in [
        (
            "web",
            json!([{"host": "a.example.com", "http": {"paths": [path("/", "web"), path("/api", "api")]}},
                       {"host": "b.example.com", "http": {"paths": [path("/", "web")]}}]),
        ),
        (
            "other",
            json!([{"host": "c.example.com", "http": {"paths": [path("/", "other")]}}]),
        ),
    ] {
        let o: DynamicObject = from_json(json!({"apiVersion": ing, "kind": "Ingress",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"rules": rules}}));
        api.create(&PostParams::default(), &o).await.unwrap();
    }

    let wink = s.run(&[]);
    wait_synced(&wink, "lists");
    Api::<ConfigMap>::namespaced(sim.client(), "default")
        .create(&PostParams::default(), &config_map("default", "probe", json!({})))
        .await
        .unwrap();
    wink.wait_for_line("[lists] probe done", WAIT);
    let sorted = |line: &str| {
        let (head, list) = line.split_once('[').unwrap();
        let mut words: Vec<&str> = list.trim_end_matches(']').split(' ').collect();
        words.sort();
        format!("{head}[{}]", words.join(" "))
    };
    let answers: Vec<String> = probe_answers(&wink, "lists").iter().map(|l| sorted(l)).collect();
    assert_eq!(
        answers,
        [
            "query 0 list-index-values Ingress: ok [a.example.com b.example.com c.example.com]",
            "query 1 index-keys Ingress: ok [default/web]",
            "query 2 list-index-values Ingress: ok [api other web]",
            "query 3 index-keys Ingress: ok [default/web]",
        ]
    );
    // The broken path's plugin is not loaded, and the log says which index and why.
    let why = "its index \"first\" of networking.k8s.io/v1 Ingress: the field path \"spec.rules[0\" cannot index: \
               segment 2 (\"rules[0\"): '[' is never closed";
    wink.wait_for_line(why, WAIT);
    let lines = wink.lines();
    let refusal = lines.iter().find(|l| l.contains(why)).unwrap();
    assert!(
        refusal.contains("plugin not loaded") && refusal.contains("registration refused"),
        "{refusal}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("plugin synced plugin=broken")),
        "{}",
        lines.join("\n")
    );
}
