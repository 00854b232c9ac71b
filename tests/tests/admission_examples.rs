//! End-to-end: the example policies at the door, through unmodified
//! kubectl against the simulated API server calling wink's webhooks.
//! `pod-security` refuses a privileged Pod and one with a host port, and
//! warns about what the namespace's `warn` level (Restricted) refuses;
//! `require-labels` stores a new Deployment with its missing label set;
//! `service-selector-guard` refuses a Service that selects no Pod, from
//! the informer cache: a thousand admission requests to it make no request
//! of wink's to the API server. With wink stopped, its Fail webhooks refuse
//! Pods elsewhere but never in wink's own namespace: there a Deployment
//! still gets its new Pod from the simulated control plane (whose
//! ReplicaSet controller creates Pods through admission), while one
//! elsewhere gets FailedCreate.

use crate::admission::{ask, ca_pem};
use crate::cache_support::*;
use crate::kubectl_support;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// An AdmissionReview asking about the creation of the Service `s` whose
/// selector is `app=<app>`.
fn service_review(uid: usize, app: &str) -> String {
    let service = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"app": app}}});
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": format!("uid-{uid}"),
        "kind": {"group": "", "version": "v1", "kind": "Service"},
        "resource": {"group": "", "version": "v1", "resource": "services"},
        "name": "s", "namespace": "default", "operation": "CREATE",
        "userInfo": {"username": "tester"}, "object": service, "dryRun": false,
    }})
    .to_string()
}

/// wink serving `service-selector-guard`'s webhook on the simulated server
/// (seeded by the caller): the daemon, its webhook port and the CA to trust.
async fn guard(sim: &wink_sim::Sim, test: &str) -> (crate::common::Wink, u16, String, Setup) {
    let s = Setup::new(test, sim);
    s.install("service_selector_guard", "guard", None);
    let port = free_port();
    let (addr, url) = (format!("127.0.0.1:{port}"), format!("https://127.0.0.1:{port}"));
    let wink = s.run(&["--admission-addr", &addr, "--admission-webhook-url", &url]);
    wait_synced(&wink, "service-selector-guard");
    let ca = ca_pem(sim).await;
    (wink, port, ca, s)
}

const GUARD: &str = "/admission/service-selector-guard/validate";

/// The webhook configuration `wink` of `kind` once it has `webhooks` webhooks.
async fn configured(env: &kubectl_support::Env, kind: &str, webhooks: usize) {
    let deadline = Instant::now() + WAIT;
    loop {
        let (ok, out, _) = env.run(&["get", kind, "wink", "-o", "json"]).await;
        let got: Value = if ok {
            serde_json::from_str(&out).unwrap_or_default()
        } else {
            Value::Null
        };
        if got["webhooks"].as_array().is_some_and(|w| w.len() == webhooks) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{kind} wink never had {webhooks} webhooks: {got}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The items `args` lists once `check` holds for them (waited for).
async fn listed(
    env: &kubectl_support::Env,
    what: &str,
    args: &[&str],
    check: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + WAIT;
    loop {
        let items = env.items(args).await;
        if check(&items) {
            return items;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {items:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn write(env: &kubectl_support::Env, name: &str, v: &Value) -> String {
    let path = env.dir.join(format!("{name}.json"));
    std::fs::write(&path, v.to_string()).unwrap();
    path.to_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_policies_guard_the_door_for_kubectl() {
    if !kubectl_support::have_kubectl() {
        return;
    }
    // The control plane on: Deployments get Pods, created through admission.
    let config = wink_sim::SimConfig {
        control_plane: true,
        ..Default::default()
    };
    let env = kubectl_support::env("admission_examples", config).await;
    let s = Setup::new("admission_examples", &env.sim);
    s.install("pod_security", "pod-security", None);
    s.install("require_labels", "require-labels", None);
    s.install("service_selector_guard", "guard", None);
    let port = free_port();
    let (addr, url) = (format!("127.0.0.1:{port}"), format!("https://127.0.0.1:{port}"));
    let grants = s.plugins.parent().unwrap().join("grants.yaml");
    std::fs::write(&grants, REQUIRE_LABELS_GRANT).unwrap();
    let wink = s.run(&[
        "--admission-addr",
        &addr,
        "--admission-webhook-url",
        &url,
        "--grants",
        grants.to_str().unwrap(),
    ]);
    wait_synced(&wink, "service-selector-guard");
    // pod-security's and the guard's validating webhooks say the same: one
    // shared webhook serves both.
    configured(&env, "validatingwebhookconfigurations", 1).await;
    configured(&env, "mutatingwebhookconfigurations", 1).await;
    // wink's own namespace (here `default`) is never sent to a webhook.
    // team-a enforces pod-security's default (Baseline) and warns about
    // Restricted.
    let team_a = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a",
        "labels": {"pod-security.kubernetes.io/warn": "restricted"}}});
    env.ok(&["create", "-f", &write(&env, "team-a", &team_a)]).await;

    // pod-security: a privileged Pod is refused with PodSecurity's message.
    let privileged = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "root", "namespace": "team-a"},
        "spec": {"containers": [{"name": "c", "image": "i", "securityContext": {"privileged": true}}]}});
    let (ok, _, stderr) = env
        .run(&["create", "-f", &write(&env, "root", &privileged)])
        .await;
    assert!(!ok, "refused");
    assert!(
        stderr.contains(r#"admission webhook "fail.shared.validate.wink.dev" denied the request: pod-security: "#)
            && stderr.contains(
                r#"violates PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)"#
            ),
        "{stderr}"
    );
    // A host port breaks Baseline too.
    let host_port = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "team-a", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80, "hostPort": 8080}]}]}});
    let (ok, _, stderr) = env.run(&["create", "-f", &write(&env, "web", &host_port)]).await;
    assert!(!ok, "refused");
    assert!(
        stderr.contains(r#"hostPort (container "c" uses hostPort 8080)"#),
        "{stderr}"
    );
    // Without it the Pod is Baseline: allowed, with kubectl printing what
    // Restricted (team-a's warn level) would refuse, once wink's cache has
    // the namespace's label (a dry run asks until then).
    let web = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "team-a", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}]}});
    let web_file = write(&env, "web", &web);
    let warning =
        r#"Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false"#;
    let deadline = Instant::now() + WAIT;
    loop {
        let (ok, _, stderr) = env.run(&["create", "--dry-run=server", "-f", &web_file]).await;
        assert!(ok, "{stderr}");
        if stderr.contains(warning) {
            break;
        }
        assert!(Instant::now() < deadline, "no Restricted warning: {stderr}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (ok, _, stderr) = env.run(&["create", "-f", &web_file]).await;
    assert!(ok && stderr.contains(warning), "{stderr}");

    // require-labels: the Deployment is stored with its label, and kubectl says why.
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api", "namespace": "team-a"},
        "spec": {"selector": {"matchLabels": {"app": "api"}}, "template": {"metadata": {"labels": {"app": "api"}},
        "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    let (ok, _, stderr) = env.run(&["apply", "-f", &write(&env, "api", &deployment)]).await;
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains(r#"Warning: require-labels: missing label team: set to "unassigned""#),
        "{stderr}"
    );
    let stored = env
        .json(&["get", "deployment", "api", "-n", "team-a", "-o", "json"])
        .await;
    assert_eq!(stored["metadata"]["labels"]["team"], "unassigned", "{stored}");
    // Its Pod passed pod-security on its way in.
    listed(
        &env,
        "the Pod of api",
        &["get", "pods", "-n", "team-a", "-l", "app=api"],
        |p| p.len() == 1,
    )
    .await;

    // service-selector-guard: a Service selecting no Pod is refused; one
    // selecting the Pod above is stored.
    let service = |name: &str, app: &str| {
        json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"selector": {"app": app}, "ports": [{"port": 80}]}})
    };
    let (ok, _, stderr) = env
        .run(&[
            "create",
            "-f",
            &write(&env, "nowhere", &service("nowhere", "nothing")),
        ])
        .await;
    assert!(!ok, "refused");
    assert!(
        stderr.contains("the selector app=nothing matches no Pod in namespace team-a"),
        "{stderr}"
    );
    let (ok, _, stderr) = env
        .run(&["create", "-f", &write(&env, "web-svc", &service("web", "web"))])
        .await;
    assert!(ok, "{stderr}");
    // A dry run reaches the plugin and stores nothing.
    let (ok, _, stderr) = env
        .run(&[
            "create",
            "--dry-run=server",
            "-f",
            &write(&env, "dry", &service("dry", "nothing")),
        ])
        .await;
    assert!(!ok && stderr.contains("matches no Pod"), "{stderr}");

    // wink stops; its webhooks (failurePolicy Fail) stay registered. A Pod
    // in another namespace is refused, but wink's own namespace is never
    // sent to them, so wink's own Pods can start again.
    drop(wink);
    let plain = |name: &str, ns: &str| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
        "spec": {"containers": [{"name": "c", "image": "i"}]}})
    };
    let (ok, _, stderr) = env
        .run(&[
            "create",
            "-f",
            &write(&env, "elsewhere", &plain("elsewhere", "team-a")),
        ])
        .await;
    assert!(!ok && stderr.contains("failed calling webhook"), "{stderr}");
    let (ok, _, stderr) = env
        .run(&[
            "create",
            "-f",
            &write(&env, "wink-0", &plain("wink-0", "default")),
        ])
        .await;
    assert!(ok, "wink's namespace is never locked: {stderr}");

    // So a Deployment in wink's namespace gets its new Pod; one elsewhere
    // scaled up (the scale subresource, which no webhook takes) does not:
    // its ReplicaSet records why.
    env.ok(&["create", "deployment", "wink-next", "--image=i", "-n", "default"])
        .await;
    listed(
        &env,
        "the Pod of wink-next",
        &["get", "pods", "-n", "default", "-l", "app=wink-next"],
        |p| p.len() == 1,
    )
    .await;
    env.ok(&["scale", "deployment", "api", "-n", "team-a", "--replicas=2"])
        .await;
    let events = listed(
        &env,
        "FailedCreate in team-a",
        &[
            "get",
            "events",
            "-n",
            "team-a",
            "--field-selector",
            "reason=FailedCreate",
        ],
        |e| !e.is_empty(),
    )
    .await;
    let message = events[0]["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with("Error creating: ")
            && message.contains(r#"failed calling webhook "fail.shared.validate.wink.dev""#),
        "{events:?}"
    );
    assert_eq!(events[0]["involvedObject"]["kind"], "ReplicaSet");
    let rss = listed(
        &env,
        "the ReplicaFailure condition",
        &["get", "replicasets", "-n", "team-a"],
        |r| {
            r.iter().any(|rs| {
                rs["status"]["conditions"].as_array().is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == "ReplicaFailure" && c["reason"] == "FailedCreate")
                })
            })
        },
    )
    .await;
    assert_eq!(rss.len(), 1);
    let pods = env.items(&["get", "pods", "-n", "team-a", "-l", "app=api"]).await;
    assert_eq!(pods.len(), 1, "no new Pod elsewhere: {pods:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_context_aware_answers_cost_the_api_server_nothing() {
    let sim = wink_sim::Sim::start(Default::default()).await.unwrap();
    for i in 0..200 {
        sim.insert(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("p{i}"), "namespace": "default", "labels": {"app": format!("a{}", i % 20)}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}))
            .unwrap();
    }
    let (_wink, port, ca, _s) = guard(&sim, "admission_context").await;
    // What wink could ask the API server about Pods and Services.
    let reads = || {
        ["pods", "services"]
            .iter()
            .map(|r| sim.request_count("list", r) + sim.request_count("get", r))
            .sum::<u64>()
    };
    // Warm: the first answer may wait for the plugin's instances.
    ask(port, &ca, GUARD, &service_review(0, "a1")).await;
    let before = reads();
    let (mut allowed, mut denied) = (0, 0);
    for i in 0..1000 {
        let app = if i % 2 == 0 {
            format!("a{}", i % 20)
        } else {
            "none".to_string()
        };
        let r = ask(port, &ca, GUARD, &service_review(i, &app)).await;
        assert_eq!(r["uid"], format!("uid-{i}"));
        if r["allowed"] == true {
            allowed += 1
        } else {
            denied += 1
        }
    }
    assert_eq!((allowed, denied), (500, 500), "each answer from the cache");
    assert_eq!(
        reads() - before,
        0,
        "no read reached the API server during 1,000 admission answers"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hot_reload_of_an_admitting_plugin_loses_no_request() {
    let sim = wink_sim::Sim::start(Default::default()).await.unwrap();
    sim.insert(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "i"}]}}))
        .unwrap();
    let (wink, port, ca, s) = guard(&sim, "admission_reload").await;
    let review = |uid: usize| service_review(uid, if uid.is_multiple_of(2) { "web" } else { "none" });
    // Requests go on while the plugin is reloaded three times (a new
    // config each time: a reload, with a new instance and admission pool),
    // and a while after the last reload.
    let dir = s.plugins.clone();
    let reloading = tokio::spawn(async move {
        for n in 0..3 {
            tokio::time::sleep(Duration::from_millis(300)).await;
            std::fs::write(dir.join("guard.json"), json!({"reload": n}).to_string()).unwrap();
        }
    });
    let reloaded = || {
        wink.lines()
            .iter()
            .filter(|l| l.contains("plugin reloaded"))
            .count()
    };
    let mut answers = Vec::new();
    let mut after_last = 0;
    let deadline = Instant::now() + WAIT;
    while after_last < 100 {
        let i = answers.len();
        answers.push((i, ask(port, &ca, GUARD, &review(i)).await));
        if reloading.is_finished() && reloaded() >= 3 {
            after_last += 1;
        }
        assert!(Instant::now() < deadline, "three reloads: {}", reloaded());
    }
    for (i, r) in &answers {
        assert_eq!(r["uid"], format!("uid-{i}"));
        let want = i % 2 == 0;
        assert_eq!(
            r["allowed"], want,
            "request {i} answered by the plugin, not a failure policy: {r}"
        );
    }
}
