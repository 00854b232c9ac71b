//! What `wink manifests --exceptions` adds: the WinkException CRD and the
//! rights wink needs to honour them: list and watch WinkExceptions (in
//! every namespace: which ones count is `--exception-namespaces`' to say)
//! and patch their status. Who may create them is the cluster's RBAC on
//! `winkexceptions`, the operator's to grant.

use super::crd;
use serde_json::{Value, json};

/// The documents (`wink manifests` puts them in install order with the
/// deployment's).
pub fn documents(namespace: &str) -> Vec<Value> {
    let labels = json!({"app.kubernetes.io/name": "wink"});
    let name = "wink-winkexceptions";
    let subject = json!([{"kind": "ServiceAccount", "name": "wink", "namespace": namespace}]);
    vec![
        crd::definition(),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name, "labels": labels},
        "rules": [
            {"apiGroups": [crd::GROUP], "resources": [crd::PLURAL], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [crd::GROUP], "resources": [format!("{}/status", crd::PLURAL)], "verbs": ["get", "patch"]},
            {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "resourceNames": [crd::CRD_NAME], "verbs": ["get"]}
        ]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": subject}),
    ]
}

/// Give the wink of `docs`' Deployment `--exception-namespaces` with `namespaces`.
pub fn pass_flag(docs: &mut [Value], namespaces: &[String]) {
    let flag = format!("--exception-namespaces={}", namespaces.join(","));
    for d in docs.iter_mut().filter(|d| d["kind"] == "Deployment") {
        if let Some(args) = d
            .pointer_mut("/spec/template/spec/containers/0/args")
            .and_then(Value::as_array_mut)
        {
            args.push(Value::String(flag.clone()));
        }
    }
}
