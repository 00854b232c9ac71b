//! What `wink manifests --winkplugins` adds: the WinkPlugin CRD and the
//! rights the controller needs: get, list and watch WinkPlugins, update
//! and patch their status, and read Secrets in wink's own namespace (the
//! pull Secrets WinkPlugins name; which ones is the objects' to say, so
//! the Role is on that namespace only), and list and watch Namespaces (a
//! WinkPlugin's `spec.match`/`spec.exclude` and the team policy's
//! `teams.namespaceSelector` may select namespaces by label, which one
//! shared Namespace informer serves; the objects are not known
//! when the manifests are rendered). wink's default `--winkplugins=auto`
//! then watches them. NamespacedWinkPlugins (team plugins) get the same:
//! their CRD, and get, list and watch them and patch their status in every
//! namespace; a team's pull Secret is read in its own namespace, which
//! needs a Role there that the manifests do not grant.

use super::{crd, namespaced};
use serde_json::{Value, json};

/// The documents (`wink manifests` puts them in install order with the
/// deployment's).
pub fn documents(namespace: &str) -> Vec<Value> {
    let labels = json!({"app.kubernetes.io/name": "wink"});
    let name = "wink-winkplugins";
    let subject = json!([{"kind": "ServiceAccount", "name": "wink", "namespace": namespace}]);
    vec![
        crd::definition(),
        namespaced::definition(),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name, "labels": labels},
        "rules": [
            {"apiGroups": [crd::GROUP], "resources": [crd::PLURAL], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [crd::GROUP], "resources": [format!("{}/status", crd::PLURAL)], "verbs": ["get", "patch", "update"]},
            {"apiGroups": [crd::GROUP], "resources": [namespaced::PLURAL], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [crd::GROUP], "resources": [format!("{}/status", namespaced::PLURAL)], "verbs": ["get", "patch", "update"]},
            {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "resourceNames": [crd::CRD_NAME, namespaced::CRD_NAME], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list", "watch"]}
        ]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": subject}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": subject}),
    ]
}
