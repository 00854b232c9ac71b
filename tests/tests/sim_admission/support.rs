//! What the sim_admission tests share: the test webhook (what it answers
//! on each path, what it saw), a simulator with kubectl, and webhook
//! configurations applied through kubectl.

use crate::kubectl_support::{self, Env};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wink_sim::SimConfig;
use wink_sim::webhook_testing::{Handler, WebhookCerts, WebhookServer, answer};

/// The reviews a webhook server received: (path, AdmissionReview).
pub type Seen = Arc<Mutex<Vec<(String, Value)>>>;

/// What the test webhook does, by path:
/// - `/validate`: refuses a ConfigMap with data key `forbidden` (403 Forbidden), warns on every ConfigMap;
/// - `/mutate`: labels the object `mutated: "yes"`;
/// - `/slow`: answers after 3 s;
/// - anything else: allows.
fn handler(seen: Seen) -> Handler {
    Arc::new(move |path: String, review: Value| {
        let seen = seen.clone();
        Box::pin(async move {
            seen.lock().unwrap().push((path.clone(), review.clone()));
            let obj = review.pointer("/request/object").cloned().unwrap_or_default();
            let route = path.split('?').next().unwrap_or("").to_string();
            match route.as_str() {
                "/validate" => {
                    let bad = obj.pointer("/data/forbidden").is_some();
                    let status = bad.then(|| {
                        json!({"code": 403, "reason": "Forbidden", "message": "data key forbidden is not allowed"})
                    });
                    answer(
                        &review,
                        !bad,
                        status,
                        None,
                        &["configmap checked by the test webhook"],
                    )
                }
                "/mutate" => {
                    let patch = match obj.pointer("/metadata/labels") {
                        Some(_) => json!([{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}]),
                        None => {
                            json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}])
                        }
                    };
                    answer(&review, true, None, Some(patch), &[])
                }
                "/second" => {
                    // Labels what it saw of the first mutation.
                    let saw = obj
                        .pointer("/metadata/labels/mutated")
                        .and_then(Value::as_str)
                        .unwrap_or("no");
                    let patch = json!([{"op": "add", "path": "/metadata/labels/second-saw", "value": saw}]);
                    answer(&review, true, None, Some(patch), &[])
                }
                "/keep" => {
                    let old = review.pointer("/request/oldObject").cloned().unwrap_or_default();
                    let keep = old.pointer("/data/keep").is_some();
                    let status = keep.then(|| json!({"message": "this one is kept"}));
                    answer(&review, !keep, status, None, &[])
                }
                "/slow" => {
                    tokio::time::sleep(Duration::from_secs(3)).await;
                    answer(&review, true, None, None, &[])
                }
                _ => answer(&review, true, None, None, &[]),
            }
        })
    })
}

pub struct Setup {
    pub env: Env,
    pub certs: WebhookCerts,
    pub server: WebhookServer,
    pub seen: Seen,
}

pub async fn setup(name: &str) -> Setup {
    setup_with(name, SimConfig::default()).await
}

/// [`setup`] on a simulator started with `config`.
pub async fn setup_with(name: &str, config: SimConfig) -> Setup {
    let env = kubectl_support::env(name, config).await;
    let certs = WebhookCerts::generate(&["hook.webhooks.svc"]).unwrap();
    let seen: Seen = Arc::default();
    let server = WebhookServer::start(&certs, handler(seen.clone())).await.unwrap();
    Setup {
        env,
        certs,
        server,
        seen,
    }
}

/// One webhook entry (rules: CREATE/UPDATE of core v1 configmaps unless `extra` says otherwise).
pub fn hook(name: &str, url: &str, ca_bundle: &str, extra: Value) -> Value {
    let mut h = json!({
        "name": name,
        "clientConfig": {"url": url, "caBundle": ca_bundle},
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        h[k] = v;
    }
    h
}

impl Setup {
    /// Write `v` as a JSON manifest named `file` and return its path.
    pub fn file(&self, file: &str, v: &Value) -> String {
        let p = self.env.dir.join(file);
        std::fs::write(&p, serde_json::to_string_pretty(v).unwrap()).unwrap();
        p.to_str().unwrap().to_string()
    }

    /// `kubectl apply` a webhook configuration of `kind` with `hooks`.
    pub async fn configure(&self, kind: &str, name: &str, hooks: Vec<Value>) {
        let cfg = json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": {"name": name},
            "webhooks": hooks,
        });
        let f = self.file(&format!("{name}.json"), &cfg);
        self.env.ok(&["apply", "-f", &f]).await;
    }

    /// A ConfigMap manifest in `ns` with `data`.
    pub fn configmap(&self, name: &str, ns: &str, data: Value) -> String {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns, "labels": {"app": name}}, "data": data});
        self.file(&format!("cm-{name}.json"), &cm)
    }

    pub fn seen_paths(&self) -> Vec<String> {
        self.seen.lock().unwrap().iter().map(|(p, _)| p.clone()).collect()
    }

    pub fn reviews_of(&self, name: &str) -> Vec<Value> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, r)| r.pointer("/request/name").and_then(Value::as_str) == Some(name))
            .map(|(_, r)| r.clone())
            .collect()
    }
}
