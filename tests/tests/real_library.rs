//! On the real kube-apiserver (see `envtest`; a pair of its own, since
//! wink's webhook configurations are cluster-wide): one wink runs every
//! refusing policy of the library (`plugins/*`, `docs/src/library/`) at the
//! door, and for each the API server refuses one object, with the policy's
//! webhook and message, and admits one that every policy allows. The
//! policies of equal webhook settings share one validating webhook, so an
//! object two of them refuse is refused once, naming both. The
//! context-aware ones (unique Service selector, unique Ingress host,
//! required PodDisruptionBudget) answer from wink's informer cache, a
//! moment after the object they compare with is stored.

use crate::cache_support::{Setup, WAIT, free_port, wait_synced};
use crate::common::scratch;
use crate::envtest::{ControlPlane, Kubectl, Options};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const NS: &str = "lib";

/// `kubectl create` of `object`: (success, stderr).
async fn create(kubectl: &Kubectl, object: &Value) -> (bool, String) {
    let (ok, _, stderr) = kubectl
        .run_with(
            &["create", "--validate=false", "-f", "-"],
            Some(&object.to_string()),
        )
        .await;
    (ok, stderr)
}

async fn admitted(kubectl: &Kubectl, object: &Value) {
    let (ok, stderr) = create(kubectl, object).await;
    assert!(ok, "{object} was refused: {stderr}");
}

/// The name of the validating webhook serving `policy` in wink's
/// configuration on the server: the one whose path names it (alone, or
/// shared with others, `/admission/<a>.<b>.../validate`).
async fn webhook_of(kubectl: &Kubectl, policy: &str) -> String {
    let (ok, stdout, stderr) = kubectl
        .run_with(
            &["get", "validatingwebhookconfiguration", "wink", "-o", "json"],
            None,
        )
        .await;
    assert!(ok, "{stderr}");
    let config: Value = serde_json::from_str(&stdout).unwrap();
    let serves = |w: &&Value| {
        let url = w["clientConfig"]["url"].as_str().unwrap_or_default();
        let segment = url.rsplit('/').nth(1).unwrap_or_default();
        segment.split('.').any(|p| p == policy)
    };
    let found = config["webhooks"].as_array().unwrap().iter().find(serves);
    found.unwrap_or_else(|| panic!("no webhook serves {policy}: {config}"))["name"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `object` is refused by the webhook serving `policy`, with its message
/// (the policy named).
async fn refused(kubectl: &Kubectl, object: &Value, policy: &str) {
    let (ok, stderr) = create(kubectl, object).await;
    assert!(!ok, "{policy} admitted {object}");
    let webhook = webhook_of(kubectl, policy).await;
    assert!(
        stderr.contains(&format!(r#"admission webhook "{webhook}" denied the request: "#))
            && stderr.contains(&format!("{policy}: ")),
        "{policy}: {stderr}"
    );
}

/// Create `object(n)` for n = 1, 2, ... until the answer is `want` (the
/// informer sees what the policy compares with a moment after it is stored).
async fn until(kubectl: &Kubectl, want_ok: bool, object: impl Fn(u32) -> Value) -> String {
    let deadline = Instant::now() + WAIT;
    for n in 1.. {
        let (ok, stderr) = create(kubectl, &object(n)).await;
        if ok == want_ok {
            return stderr;
        }
        assert!(Instant::now() < deadline, "never {want_ok}: {stderr}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    unreachable!()
}

/// A container every policy allows, with `change` merged in.
fn container(change: Value) -> Value {
    let mut c = json!({"name": "app", "image": "registry.example.com/app:1.0",
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}},
        "livenessProbe": {"tcpSocket": {"port": 8080}}, "readinessProbe": {"tcpSocket": {"port": 8080}}});
    for (k, v) in change.as_object().unwrap() {
        match v.is_null() {
            true => c.as_object_mut().unwrap().remove(k),
            false => c.as_object_mut().unwrap().insert(k.clone(), v.clone()),
        };
    }
    c
}

fn pod(ns: &str, name: &str, change: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
        "spec": {"containers": [container(change)]}})
}

fn deployment(name: &str, app: &str, replicas: u32) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": app}},
            "template": {"metadata": {"labels": {"app": app}}, "spec": {"containers": [container(json!({}))]}}}})
}

fn service(name: &str, app: &str, kind: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": NS},
        "spec": {"type": kind, "selector": {"app": app}, "ports": [{"port": 80}]}})
}

fn ingress(name: &str, host: &str) -> Value {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": name, "namespace": NS},
        "spec": {"rules": [{"host": host}]}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_library_policy_refuses_and_admits_at_the_real_api_servers_door() {
    let Some(cp) = ControlPlane::start(&Options::default()) else {
        return;
    };
    let dir = scratch("real_library_kubectl");
    let kubectl = cp.kubectl(&dir);
    let s = Setup::with_kubeconfig("real_library", &cp.kubeconfig);
    let policies = [
        "disallow-latest-tag",
        "allowed-registries",
        "require-requests-limits",
        "require-probes",
        "block-service-types",
        "unique-ingress-host",
        "unique-service-selector",
        "block-wildcard-ingress-host",
        "replica-limits",
        "disallow-default-namespace",
        "require-pdb",
    ];
    for p in policies {
        let config = (p == "allowed-registries").then(|| json!({"registries": ["registry.example.com/"]}));
        s.install(&p.replace('-', "_"), p, config.as_ref());
    }
    for ns in ["wink-system", NS] {
        admitted(
            &kubectl,
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .await;
    }
    // What the ServiceAccount controller makes; no controller-manager runs.
    for ns in ["wink-system", NS, "default"] {
        admitted(
            &kubectl,
            &json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}}),
        )
        .await;
    }
    let port = free_port();
    let (addr, url) = (format!("127.0.0.1:{port}"), format!("https://127.0.0.1:{port}"));
    let mut wink = s.run(&[
        "--admission-addr",
        &addr,
        "--admission-webhook-url",
        &url,
        "--admission-namespace",
        "wink-system",
    ]);
    for p in policies {
        wait_synced(&wink, p);
    }
    let started = Instant::now();
    // Once the configurations are registered, a Pod on `latest` is refused.
    let stderr = until(&kubectl, false, |n| {
        pod(
            NS,
            &format!("latest-{n}"),
            json!({"image": "registry.example.com/app:latest"}),
        )
    })
    .await;
    assert!(
        stderr.contains("disallow-latest-tag: container app (spec.containers[0].image)"),
        "{stderr}"
    );
    // The policies of equal webhook settings share one webhook: the API
    // server sends a Pod's review once, and a Pod two policies refuse is
    // refused once, naming both.
    let (ok, stdout, _) = kubectl
        .run_with(
            &["get", "validatingwebhookconfiguration", "wink", "-o", "json"],
            None,
        )
        .await;
    assert!(ok);
    let config: Value = serde_json::from_str(&stdout).unwrap();
    let webhooks = config["webhooks"].as_array().unwrap();
    // (disallow-default-namespace's webhook has a namespace selector of
    // its own, `default` alone, so it is a webhook of its own.)
    let pod_policies = [
        "disallow-latest-tag",
        "allowed-registries",
        "require-requests-limits",
        "require-probes",
    ];
    let mut pod_webhooks: Vec<String> = Vec::new();
    for p in pod_policies {
        pod_webhooks.push(webhook_of(&kubectl, p).await);
    }
    pod_webhooks.dedup();
    assert_eq!(
        pod_webhooks.len(),
        1,
        "the Pod policies share one webhook: {config}"
    );
    println!(
        "{} policies served by {} validating webhook(s): {:?}",
        policies.len(),
        webhooks.len(),
        webhooks.iter().map(|w| &w["name"]).collect::<Vec<_>>()
    );
    let (ok, stderr) = create(
        &kubectl,
        &pod(NS, "twice", json!({"image": "docker.io/app:latest"})),
    )
    .await;
    assert!(!ok);
    assert!(
        stderr.contains(&format!(
            r#"admission webhook "{}" denied the request: "#,
            pod_webhooks[0]
        )) && stderr.contains("disallow-latest-tag: container app")
            && stderr.contains("allowed-registries: "),
        "{stderr}"
    );
    refused(
        &kubectl,
        &pod(NS, "untagged", json!({"image": "registry.example.com/app"})),
        "disallow-latest-tag",
    )
    .await;
    refused(
        &kubectl,
        &pod(NS, "elsewhere", json!({"image": "docker.io/app:1.0"})),
        "allowed-registries",
    )
    .await;
    refused(
        &kubectl,
        &pod(NS, "unbounded", json!({"resources": null})),
        "require-requests-limits",
    )
    .await;
    refused(
        &kubectl,
        &pod(NS, "unprobed", json!({"livenessProbe": null})),
        "require-probes",
    )
    .await;
    refused(
        &kubectl,
        &pod("default", "stray", json!({})),
        "disallow-default-namespace",
    )
    .await;
    admitted(&kubectl, &pod(NS, "fine", json!({}))).await;

    refused(
        &kubectl,
        &service("node", "node", "NodePort"),
        "block-service-types",
    )
    .await;
    admitted(&kubectl, &service("one", "one", "ClusterIP")).await;
    let stderr = until(&kubectl, false, |n| {
        service(&format!("two-{n}"), "one", "ClusterIP")
    })
    .await;
    assert!(
        stderr.contains(
            "unique-service-selector: spec.selector app=one is already the selector of the Service lib/one"
        ),
        "{stderr}"
    );

    refused(
        &kubectl,
        &ingress("wild", "*.example.com"),
        "block-wildcard-ingress-host",
    )
    .await;
    admitted(&kubectl, &ingress("shop", "shop.example.com")).await;
    let stderr = until(&kubectl, false, |n| {
        ingress(&format!("copy-{n}"), "shop.example.com")
    })
    .await;
    assert!(
        stderr.contains("unique-ingress-host: the host shop.example.com is already routed"),
        "{stderr}"
    );

    let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": NS},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}});
    admitted(&kubectl, &pdb).await;
    refused(&kubectl, &deployment("lonely", "lonely", 3), "require-pdb").await;
    until(&kubectl, true, |n| deployment(&format!("web-{n}"), "web", 3)).await;
    refused(&kubectl, &deployment("huge", "web", 51), "replica-limits").await;
    println!(
        "11 policies, refused and admitted at the door in {:?}",
        started.elapsed()
    );
    wink.terminate(Duration::from_secs(10));
}

/// wink's manifests with `--winkplugins` applied (the WinkPlugin CRD),
/// then `wink manifests --library` in one go on the real kube-apiserver
/// (the library's rights, the report CRDs, the WinkPlugins pinned by
/// digest): wink, run as the ServiceAccount the manifests bind (so with
/// those rights alone), pulls each from the registry they were pushed to
/// and reports it Ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_librarys_manifests_apply_in_one_go_and_run_with_their_own_rights() {
    use crate::common::{Wink, plugins_dir};
    use crate::registry_support::{Registry, push, wink_ok};
    let Some(cp) = crate::envtest::shared() else {
        return;
    };
    let dir = scratch("real_library_manifests");
    let kubectl = cp.kubectl(&dir);
    let ns = cp.namespace("wink-library").await;
    let reg = Registry::start("real_library_manifests_registry");
    let prefix = format!("{}/library", reg.host());
    let chosen = ["pod-security", "disallow-latest-tag", "require-labels"];
    let components = plugins_dir();
    let mut digests = Vec::new();
    for name in chosen {
        let file = components.join(format!("{}.wasm", name.replace('-', "_")));
        digests.push(push(&reg, &format!("{prefix}/{name}:v1"), &file));
    }
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let deployment = wink_ok(&[
        "manifests",
        "--winkplugins",
        "--namespace",
        &ns,
        "--plugins",
        plugins.to_str().unwrap(),
    ]);
    let (ok, stdout, stderr) = kubectl.apply(&deployment).await;
    assert!(ok, "kubectl apply failed:\n{stderr}\n{stdout}");
    let deadline = Instant::now() + WAIT;
    while !kubectl.run(&["get", "winkplugins"]).await.0 {
        assert!(Instant::now() < deadline, "the WinkPlugin CRD is never served");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let yaml = wink_ok(&[
        "manifests",
        "--namespace",
        &ns,
        "--library",
        &chosen.join(","),
        "--library-registry",
        &prefix,
        "--library-components",
        components.to_str().unwrap(),
    ]);
    let (ok, stdout, stderr) = kubectl.apply(&yaml).await;
    assert!(ok, "kubectl apply failed:\n{stderr}\n{stdout}");

    let kubeconfig = dir.join("wink.kubeconfig");
    cp.service_account_kubeconfig(&ns, "wink", &kubeconfig).await;
    let store = dir.join("store");
    let args = [
        "run",
        "--plugins",
        plugins.to_str().unwrap(),
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--winkplugins",
        "auto",
        "--plain-http",
        &reg.host(),
        "--oci-store",
        store.to_str().unwrap(),
    ];
    let env = [
        ("POD_NAMESPACE", std::ffi::OsStr::new(&ns)),
        ("POD_NAME", std::ffi::OsStr::new("wink-0")),
    ];
    let mut wink = Wink::spawn_with_env(&dir, &args, &env);
    for (name, digest) in chosen.iter().zip(&digests) {
        let deadline = Instant::now() + WAIT;
        loop {
            let (_, out, _) = kubectl.run(&["get", "winkplugin", name, "-o", "json"]).await;
            let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
            let ready = v["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            if ready {
                assert_eq!(v["status"]["digest"], digest.as_str(), "{v:#}");
                assert_eq!(v["spec"]["grant"]["mode"], "enforce", "{v:#}");
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{name} never Ready: {v:#}\n{}",
                wink.lines().join("\n")
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
    assert!(
        !wink.lines().iter().any(|l| l.contains("forbidden")),
        "{}",
        wink.lines().join("\n")
    );
    wink.terminate(Duration::from_secs(10));
}
