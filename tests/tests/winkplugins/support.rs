//! What the WinkPlugin suites share: `wink push` to the test registry
//! (the registry helpers', given on), Pods created, objects applied with
//! kubectl, WinkPlugin objects and their conditions waited for, and `wink
//! run` with the controller on.

use crate::cache_support::{Setup, WAIT, from_json};
use crate::common::Wink;
use crate::kubectl_support::Env;
pub use crate::registry_support::push;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};
use wink_sim::Sim;

pub async fn create_pod(sim: &Sim, name: &str) {
    let pods: Api<Pod> = Api::namespaced(sim.client(), "default");
    let pod: Pod =
        from_json(json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}]}}));
    pods.create(&PostParams::default(), &pod).await.unwrap();
}

/// `kubectl apply` of `object`.
pub async fn apply(env: &Env, object: &Value) {
    let file = env.dir.join("object.json");
    std::fs::write(&file, object.to_string()).unwrap();
    env.ok(&["apply", "-f", file.to_str().unwrap()]).await;
}

/// `kubectl apply` of a multi-document YAML stream, in one go.
pub async fn apply_all(env: &Env, yaml: &str) {
    let file = env.dir.join("objects.yaml");
    std::fs::write(&file, yaml).unwrap();
    env.ok(&["apply", "-f", file.to_str().unwrap()]).await;
}

pub fn winkplugin(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "wink.dev/v1alpha1", "kind": "WinkPlugin", "metadata": {"name": name}, "spec": spec})
}

/// The condition `kind` of the WinkPlugin `object`.
pub fn condition(object: &Value, kind: &str) -> Option<Value> {
    object["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == kind).cloned())
}

/// The WinkPlugin `name` as kubectl reads it (null when it cannot).
pub async fn get(env: &Env, name: &str) -> Value {
    let (_, out, _) = env.run(&["get", "winkplugin", name, "-o", "json"]).await;
    serde_json::from_str(&out).unwrap_or(Value::Null)
}

/// The WinkPlugin `name`, once its condition `kind` is there and `pred`
/// holds of it.
pub async fn wait_condition(env: &Env, name: &str, kind: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let object = get(env, name).await;
        if let Some(c) = condition(&object, kind)
            && pred(&c)
        {
            return object;
        }
        assert!(
            Instant::now() < deadline,
            "WinkPlugin {name}: no {kind} as wanted: {object:#}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `wink run` on `s` watching WinkPlugins (installing the CRD), `reg`
/// spoken to in plain HTTP, components kept in `store`.
pub fn run(s: &Setup, reg: &str, store: &Path) -> Wink {
    s.run(
        &run_args(reg, store)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    )
}

/// The arguments of [`run`] after `--plugins` and `--kubeconfig`.
pub fn run_args(reg: &str, store: &Path) -> Vec<String> {
    [
        "--winkplugins",
        "install",
        "--plain-http",
        reg,
        "--oci-store",
        store.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec()
}
