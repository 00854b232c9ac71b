//! Shared helpers of the cache end-to-end tests: objects to
//! create, a plugin directory with a kubeconfig for `wink run`, readers of
//! its log, and a minimal HTTP client for the cache view.

use crate::common::{Wink, plugin, scratch};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wink_sim::Sim;

pub const WAIT: Duration = Duration::from_secs(60);

pub fn from_json<T: k8s_openapi::serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).unwrap()
}

pub fn pod(ns: &str, name: &str, labels: Value, owner: Option<(&str, &str, &str)>) -> Pod {
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

pub fn deployment(ns: &str, name: &str, replicas: i32) -> Deployment {
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

pub fn config_map(ns: &str, name: &str, labels: Value) -> ConfigMap {
    from_json(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "data": {"k": "v"}
    }))
}

pub async fn namespace(sim: &Sim, name: &str) {
    let ns: Namespace =
        from_json(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}));
    Api::<Namespace>::all(sim.client())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

/// A scratch dir with a plugin dir and a kubeconfig for `sim`.
pub struct Setup {
    pub plugins: PathBuf,
    pub kubeconfig: PathBuf,
}

impl Setup {
    pub fn new(test: &str, sim: &Sim) -> Setup {
        let dir = scratch(test);
        let plugins = dir.join("plugins");
        std::fs::create_dir_all(&plugins).unwrap();
        let kubeconfig = dir.join("kubeconfig");
        sim.write_kubeconfig(&kubeconfig).unwrap();
        Setup { plugins, kubeconfig }
    }

    /// A scratch dir for a cluster reached through the kubeconfig file
    /// `kubeconfig` (a real API server's).
    pub fn with_kubeconfig(test: &str, kubeconfig: &std::path::Path) -> Setup {
        let dir = scratch(test);
        let plugins = dir.join("plugins");
        std::fs::create_dir_all(&plugins).unwrap();
        let copy = dir.join("kubeconfig");
        std::fs::copy(kubeconfig, &copy).unwrap();
        Setup {
            plugins,
            kubeconfig: copy,
        }
    }

    /// Install the built crate `crate_name` as plugin `name`, with a config.
    pub fn install(&self, crate_name: &str, name: &str, config: Option<&Value>) {
        std::fs::copy(plugin(crate_name), self.plugins.join(format!("{name}.wasm"))).unwrap();
        if let Some(config) = config {
            std::fs::write(self.plugins.join(format!("{name}.json")), config.to_string()).unwrap();
        }
    }

    pub fn run(&self, extra: &[&str]) -> Wink {
        Wink::run_on(&self.plugins, &self.kubeconfig, extra)
    }
}

/// A replica contending for leadership with short timings: lease 6 s,
/// renew deadline 3 s, retry 250 ms (the margins between them absorb a
/// loaded machine), plus `extra` arguments.
pub fn replica(s: &Setup, identity: &str, extra: &[&str]) -> Wink {
    let mut args = vec![
        "--leader-elect",
        "--leader-elect-identity",
        identity,
        "--lease-duration-ms",
        "6000",
        "--renew-deadline-ms",
        "3000",
        "--retry-period-ms",
        "250",
    ];
    args.extend_from_slice(extra);
    s.run(&args)
}

pub fn wait_synced(wink: &Wink, plugin: &str) {
    wink.wait_for_line(&format!("plugin synced plugin={plugin}"), WAIT);
}

/// The lines of `plugin` that start with `prefix`.
pub fn lines_starting(wink: &Wink, plugin: &str, prefix: &str) -> Vec<String> {
    wink.plugin_lines(plugin)
        .into_iter()
        .filter(|l| l.starts_with(prefix))
        .collect()
}

/// Minimal HTTP/1.1 GET (or another method) against the cache view; returns
/// (status, body).
pub async fn http(addr: &str, method: &str, path: &str) -> (u16, String) {
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

pub async fn get_json(addr: &str, path: &str) -> (u16, Value) {
    let (status, body) = http(addr, "GET", path).await;
    let v = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"));
    (status, v)
}

pub fn item_keys(list: &Value) -> Vec<String> {
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

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Poll the cache view until `path` lists `want` (the informer caught up).
pub async fn wait_view(addr: &str, path: &str, want: &[&str]) -> Value {
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

/// Install the CRD of `example.com/v1` Widgets (namespaced) on `sim`.
pub async fn create_widget_crd(sim: &Sim) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crd: CustomResourceDefinition = from_json(serde_json::json!({
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget", "singular": "widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}));
    kube::api::Api::<CustomResourceDefinition>::all(sim.client())
        .create(&kube::api::PostParams::default(), &crd)
        .await
        .unwrap();
}

/// The grant require-labels needs to act: patch Deployments, record Events.
pub const REQUIRE_LABELS_GRANT: &str = r#"
plugins:
  require-labels:
    events: true
    writes:
      - {apiVersion: apps/v1, kind: Deployment, verbs: [patch]}
"#;

/// `require-labels` set `team: unassigned` on the Deployment `name` (waited
/// for) with its own field manager.
pub async fn labeled_by_require_labels(
    deployments: &kube::api::Api<k8s_openapi::api::apps::v1::Deployment>,
    name: &str,
) {
    use kube::ResourceExt;
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let d = deployments.get(name).await.unwrap();
        if d.labels().get("team").map(String::as_str) == Some("unassigned") {
            assert!(
                d.managed_fields()
                    .iter()
                    .any(|m| m.manager.as_deref() == Some("wink-require-labels")),
                "the write is attributed to the plugin: {:?}",
                d.managed_fields()
            );
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for the label on {name}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
