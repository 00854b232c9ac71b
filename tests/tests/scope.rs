//! End-to-end: the operator scopes a plugin. `pod-security` under the
//! grants of the worked example of `docs/src/running/scope.md` (its
//! `match.namespaceSelector` is `enforce: "yes"`) refuses a privileged Pod
//! only in labelled namespaces, reports only their Pods, and a namespace
//! relabelled moves in or out of the scope within seconds, with no
//! restart: on the simulated API server here, on a real one in
//! `real_scope.rs`. The assertions read which namespaces are refused and
//! reported, never the plugin's rule names.

use crate::cache_support::*;
use crate::report_support::*;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// How soon a relabelled namespace must have moved.
pub const MOVED_WITHIN: Duration = Duration::from_secs(10);

/// The grants file of the worked example in `docs/src/running/scope.md`.
pub fn example_grants() -> String {
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src/running/scope.md"),
    )
    .unwrap();
    let (_, after) = page
        .split_once("<!-- grants: applied by tests/tests/scope.rs -->\n```yaml,grants\n")
        .expect("the worked example's grants");
    after.split_once("```").unwrap().0.to_string()
}

/// Label namespace `name` `enforce: "yes"`, or take the label away.
pub async fn enforce(client: &kube::Client, name: &str, on: bool) {
    let label = if on { json!("yes") } else { Value::Null };
    let patch = json!({"metadata": {"labels": {"enforce": label}}});
    Api::<Namespace>::all(client.clone())
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

/// Whether a privileged Pod `name` is let into `ns` (a denial by
/// pod-security's webhook is `false`; anything else fails the test). A Pod
/// let in is deleted again.
pub async fn admitted(client: &kube::Client, ns: &str, name: &str) -> bool {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let pod: Pod = from_json(violating_pod(ns, name, 1));
    match pods.create(&PostParams::default(), &pod).await {
        Ok(_) => {
            pods.delete(name, &Default::default()).await.unwrap();
            true
        }
        Err(kube::Error::Api(s)) if s.message.contains("pod-security.validate.wink.dev") => false,
        Err(e) => panic!("creating {ns}/{name}: {e}"),
    }
}

/// Wait until a privileged Pod is refused exactly in `refused` of `all`
/// (each asked with a new name).
pub async fn until_refused(client: &kube::Client, all: &[&str], refused: &[&str], within: Duration) {
    let deadline = Instant::now() + within;
    let mut n = 0;
    loop {
        let mut got = Vec::new();
        for ns in all {
            n += 1;
            if !admitted(client, ns, &format!("probe-{n}")).await {
                got.push(*ns);
            }
        }
        if got == refused {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "privileged Pods refused in {got:?}, not {refused:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The namespaces whose Pods the reports of `client`'s server hold results about.
pub async fn reported(client: &kube::Client) -> BTreeSet<String> {
    let reports = reports_of(client, wink::reports::ReportApi::Wgpolicyk8s).await;
    rows(&reports).into_iter().map(|r| r.0).collect()
}

/// Wait until the reports hold results about the Pods of `want` alone.
pub async fn until_reported(client: &kube::Client, want: &[&str], within: Duration) {
    let want: BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
    let deadline = Instant::now() + within;
    loop {
        let got = reported(client).await;
        if got == want {
            return;
        }
        assert!(Instant::now() < deadline, "reports about {got:?}, not {want:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The namespace selector of wink's validating webhook for pod-security.
pub async fn webhook_selector(client: &kube::Client) -> Value {
    use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let deadline = Instant::now() + WAIT;
    loop {
        if let Ok(c) = api.get("wink").await {
            let c = serde_json::to_value(c).unwrap();
            let found = c["webhooks"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|w| w["name"] == "pod-security.validate.wink.dev");
            if let Some(w) = found {
                return w["namespaceSelector"].clone();
            }
        }
        assert!(Instant::now() < deadline, "no webhook for pod-security");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_selector_scopes_the_door_and_the_reports_and_follows_relabels() {
    let sim = wink_sim::Sim::start(wink_sim::SimConfig::default())
        .await
        .unwrap();
    let client = sim.client();
    for ns in ["strict", "relaxed"] {
        namespace(&sim, ns).await;
        sim.insert(violating_pod(ns, "old", 1)).unwrap();
    }
    enforce(&client, "strict", true).await;
    let s = Setup::new("scope_pod_security", &sim);
    s.install("pod_security", "pod-security", None);
    let grants = s.plugins.parent().unwrap().join("grants.yaml");
    std::fs::write(&grants, example_grants()).unwrap();
    let port = free_port();
    let (addr, url) = (format!("127.0.0.1:{port}"), format!("https://127.0.0.1:{port}"));
    let wink = s.run(&[
        "--grants",
        grants.to_str().unwrap(),
        "--admission-addr",
        &addr,
        "--admission-webhook-url",
        &url,
        "--report-batch-ms",
        "200",
    ]);
    wait_synced(&wink, "pod-security");

    // The webhook carries the operator's selector beside wink's own exclusions.
    let selector = webhook_selector(&client).await.to_string();
    assert!(
        selector.contains(r#""key":"enforce","operator":"In","values":["yes"]"#),
        "{selector}"
    );
    let all = ["strict", "relaxed"];
    until_refused(&client, &all, &["strict"], WAIT).await;
    until_reported(&client, &["strict"], WAIT).await;

    // A review the API server would not send (outside the scope) is
    // answered without the plugin: allowed; the same review inside is not.
    let ca = crate::admission::ca_pem(&sim).await;
    let asked = |ns: &str| {
        let pod = violating_pod(ns, "direct", 1);
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
            "uid": format!("uid-{ns}"), "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "name": "direct", "namespace": ns, "operation": "CREATE",
            "userInfo": {"username": "tester"}, "object": pod, "dryRun": false}})
        .to_string()
    };
    let path = "/admission/pod-security/validate";
    let outside = crate::admission::ask(port, &ca, path, &asked("relaxed")).await;
    assert_eq!(outside["allowed"], true, "{outside}");
    let inside = crate::admission::ask(port, &ca, path, &asked("strict")).await;
    assert_eq!(inside["allowed"], false, "{inside}");

    // Relabelled both ways: moved within seconds, wink not restarted.
    enforce(&client, "relaxed", true).await;
    enforce(&client, "strict", false).await;
    let moved = Instant::now();
    until_reported(&client, &["relaxed"], MOVED_WITHIN).await;
    until_refused(&client, &all, &["relaxed"], MOVED_WITHIN).await;
    eprintln!("scope moved in {:?}", moved.elapsed());
    assert!(
        wink.lines()
            .iter()
            .filter(|l| l.contains("plugin loaded"))
            .count()
            == 1
    );
}

/// Label namespace `name` `scope: in`, or take the label away.
async fn scope_label(client: &kube::Client, name: &str, on: bool) {
    let label = if on { json!("in") } else { Value::Null };
    let patch = json!({"metadata": {"labels": {"scope": label}}});
    Api::<Namespace>::all(client.clone())
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_queries_and_events_see_only_the_scope_and_follow_a_relabel() {
    use k8s_openapi::api::core::v1::ConfigMap;
    let sim = wink_sim::Sim::start(wink_sim::SimConfig::default())
        .await
        .unwrap();
    let client = sim.client();
    let pp = PostParams::default();
    for (ns, app) in [("inside", "web"), ("outside", "db")] {
        namespace(&sim, ns).await;
        Api::<ConfigMap>::namespaced(client.clone(), ns)
            .create(&pp, &config_map(ns, "cm", json!({"app": app})))
            .await
            .unwrap();
    }
    scope_label(&client, "inside", true).await;
    let cm = |q: Value| {
        let mut q = q;
        q["api_version"] = json!("v1");
        q["kind"] = json!("ConfigMap");
        q
    };
    let queries = json!([
        cm(json!({"op": "list"})),
        cm(json!({"op": "get", "key": "outside/cm"})),
        cm(json!({"op": "get", "key": "inside/cm"})),
        cm(json!({"op": "first", "namespace": "outside"})),
        cm(json!({"op": "by-index", "index": "app", "value": "db"})),
        cm(json!({"op": "index-keys", "index": "app", "value": "db"})),
        cm(json!({"op": "list-index-values", "index": "app"})),
    ]);
    let config = json!({"watches": [{"api_version": "v1", "kind": "ConfigMap", "indexes": {"app": "label:app"}}],
        "trigger": "probe", "queries": queries, "log_events": true});
    let s = Setup::new("scope_cache", &sim);
    s.install("cache_probe", "probe", Some(&config));
    let grants = s.plugins.parent().unwrap().join("grants.yaml");
    std::fs::write(
        &grants,
        "plugins:\n  probe:\n    match:\n      namespaceSelector: {matchLabels: {scope: in}}\n",
    )
    .unwrap();
    let wink = s.run(&["--grants", grants.to_str().unwrap()]);
    wait_synced(&wink, "probe");
    Api::<ConfigMap>::namespaced(client.clone(), "inside")
        .create(&pp, &config_map("inside", "probe", json!({})))
        .await
        .unwrap();
    wink.wait_for_line("[probe] probe done", WAIT);
    let answers = lines_starting(&wink, "probe", "query ");
    assert_eq!(
        answers,
        [
            "query 0 list ConfigMap: ok [inside/cm inside/probe]",
            "query 1 get ConfigMap: ok [none]",
            "query 2 get ConfigMap: ok [inside/cm]",
            "query 3 first ConfigMap: ok []",
            "query 4 by-index ConfigMap: ok []",
            "query 5 index-keys ConfigMap: ok []",
            "query 6 list-index-values ConfigMap: ok [web]",
        ]
    );
    let events = || lines_starting(&wink, "probe", "event ");
    assert!(
        events().iter().any(|l| l.starts_with("event add inside/cm ")),
        "{:?}",
        events()
    );
    assert!(!events().iter().any(|l| l.contains("outside/")), "{:?}", events());

    // Relabelled in: an add; relabelled out again: a delete.
    scope_label(&client, "outside", true).await;
    wink.wait_for_line("[probe] event add outside/cm watch=0 initial=false", MOVED_WITHIN);
    scope_label(&client, "outside", false).await;
    wink.wait_for_line("[probe] event delete outside/cm watch=0", MOVED_WITHIN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_outside_the_scope_are_refused_and_said() {
    use k8s_openapi::api::core::v1::ConfigMap;
    let sim = wink_sim::Sim::start(wink_sim::SimConfig::default())
        .await
        .unwrap();
    let client = sim.client();
    let pp = PostParams::default();
    for ns in ["inside", "outside"] {
        namespace(&sim, ns).await;
        Api::<ConfigMap>::namespaced(client.clone(), ns)
            .create(&pp, &config_map(ns, "cm", json!({})))
            .await
            .unwrap();
    }
    let op = |op: &str, ns: &str| {
        let mut o = json!({"op": op, "api_version": "v1", "kind": "ConfigMap", "key": format!("{ns}/cm")});
        match op {
            "patch" => {
                o["type"] = json!("merge");
                o["body"] = json!({"metadata": {"labels": {"patched": "yes"}}});
            }
            "create" => o["body"] = json!({"metadata": {"name": "new", "namespace": ns}}),
            _ => {}
        }
        o
    };
    let ops = json!([
        op("patch", "outside"),
        op("create", "outside"),
        op("delete", "outside"),
        op("patch", "inside"),
        op("create", "inside"),
    ]);
    let config = json!({"writes": [{"api_version": "v1", "kind": "ConfigMap", "verbs": ["create", "patch", "delete"]}],
        "ops": ops});
    let s = Setup::new("scope_writes", &sim);
    s.install("write_probe", "writer", Some(&config));
    let grants = s.plugins.parent().unwrap().join("grants.yaml");
    std::fs::write(
        &grants,
        "plugins:\n  writer:\n    writes: [{apiVersion: v1, kind: ConfigMap, verbs: [create, patch, delete]}]\n    match: {namespaces: [inside]}\n",
    )
    .unwrap();
    let wink = s.run(&["--grants", grants.to_str().unwrap()]);
    wait_synced(&wink, "writer");
    Api::<ConfigMap>::namespaced(client.clone(), "inside")
        .create(&pp, &config_map("inside", "trigger", json!({})))
        .await
        .unwrap();
    wink.wait_for_line("[writer] probe done", WAIT);
    let answers = lines_starting(&wink, "writer", "write ");
    let outside = "error not-permitted: ConfigMap outside/";
    for (i, line) in answers.iter().enumerate().take(3) {
        assert!(
            line.contains(outside) && line.contains("outside this plugin's scope"),
            "{i}: {answers:#?}"
        );
    }
    assert!(answers[3].contains(": ok inside/cm"), "{answers:#?}");
    assert!(answers[4].contains(": ok inside/new"), "{answers:#?}");
    // Nothing happened outside.
    let cm = Api::<ConfigMap>::namespaced(client.clone(), "outside")
        .get("cm")
        .await
        .unwrap();
    assert!(cm.metadata.labels.is_none());
    assert!(
        Api::<ConfigMap>::namespaced(client, "outside")
            .get_opt("new")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        wink.lines()
            .iter()
            .any(|l| l.contains("refused") && l.contains("outside this plugin's scope"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scope_changed_in_the_grants_file_is_in_force_at_once() {
    use k8s_openapi::api::core::v1::ConfigMap;
    let sim = wink_sim::Sim::start(wink_sim::SimConfig::default())
        .await
        .unwrap();
    let client = sim.client();
    for ns in ["one", "two"] {
        namespace(&sim, ns).await;
        Api::<ConfigMap>::namespaced(client.clone(), ns)
            .create(&PostParams::default(), &config_map(ns, "cm", json!({})))
            .await
            .unwrap();
    }
    let config = json!({"watches": [{"api_version": "v1", "kind": "ConfigMap"}], "log_events": true});
    let s = Setup::new("scope_regrant", &sim);
    s.install("cache_probe", "probe", Some(&config));
    let grants = s.plugins.parent().unwrap().join("grants.yaml");
    let scoped = |ns: &str| format!("plugins:\n  probe:\n    match: {{namespaces: [{ns}]}}\n");
    std::fs::write(&grants, scoped("one")).unwrap();
    let wink = s.run(&["--grants", grants.to_str().unwrap()]);
    wait_synced(&wink, "probe");
    wink.wait_for_line("[probe] event add one/cm watch=0 initial=true", WAIT);
    // Another scope: what leaves is deleted, what enters added.
    let tmp = grants.with_extension("tmp");
    std::fs::write(&tmp, scoped("two")).unwrap();
    std::fs::rename(&tmp, &grants).unwrap();
    wink.wait_for_line("[probe] event delete one/cm watch=0", WAIT);
    wink.wait_for_line("[probe] event add two/cm watch=0 initial=false", WAIT);
    assert!(
        !wink
            .lines()
            .iter()
            .any(|l| l.contains("event add two/cm watch=0 initial=true"))
    );
    // No scope at all: loaded again, everything listed.
    std::fs::write(&tmp, "plugins: {}\n").unwrap();
    std::fs::rename(&tmp, &grants).unwrap();
    wink.wait_for_line("the plugin gains or loses a scope", WAIT);
    wink.wait_for_line("[probe] event add one/cm watch=0 initial=true", WAIT);
    let adds = |key: &str| {
        wink.lines()
            .iter()
            .filter(|l| l.contains(&format!("[probe] event add {key} watch=0 initial=true")))
            .count()
    };
    let deadline = Instant::now() + WAIT;
    while adds("two/cm") < 1 || adds("one/cm") < 2 {
        assert!(Instant::now() < deadline, "{:#?}", wink.lines());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
