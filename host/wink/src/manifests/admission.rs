//! What `wink manifests` adds for admission webhooks: the Service the API
//! server calls (port 443 to the container's webhook port), the right to
//! read and create the CA Secret in wink's namespace, the right to keep
//! the two webhook configurations named `wink` (cluster), and the
//! container's flags and port. The configurations themselves are not
//! rendered: the leader writes them from what the plugins declare.
//!
//! Owns only these documents; the rest is [`super::render`]'s.

use crate::admission::configurations::NAME;
use serde_json::{Value, json};

/// The container port the webhook server listens on by default.
pub const DEFAULT_PORT: u16 = 8443;
/// The Service the webhook configurations point at.
pub const SERVICE: &str = "wink";
/// The Secret keeping wink's CA (the daemon's default).
pub const CA_SECRET: &str = "wink-admission-ca";

/// The container's arguments for a webhook server on `port`.
pub fn args(port: u16) -> Vec<String> {
    vec![
        format!("--admission-addr=0.0.0.0:{port}"),
        format!("--admission-service={SERVICE}"),
    ]
}

/// The container's port entry.
pub fn port(port: u16) -> Value {
    json!({"name": "webhook", "containerPort": port})
}

/// The Service, the Role and ClusterRole (with their bindings) for a
/// webhook server in `ns` (the Service targets the container port `webhook`).
pub fn documents(ns: &str, labels: &Value) -> Vec<Value> {
    let subject = json!([{"kind": "ServiceAccount", "name": "wink", "namespace": ns}]);
    let rbac = "rbac.authorization.k8s.io/v1";
    let role_ref =
        |kind: &str| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": "wink-admission"});
    let group = "admissionregistration.k8s.io";
    let configurations = ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"];
    vec![
        json!({"apiVersion": rbac, "kind": "Role",
        "metadata": {"name": "wink-admission", "namespace": ns, "labels": labels},
        "rules": [
            // The CA: read (and followed) by name; created when missing
            // (a create cannot be narrowed to a name).
            {"apiGroups": [""], "resources": ["secrets"], "resourceNames": [CA_SECRET], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
        ]}),
        json!({"apiVersion": rbac, "kind": "RoleBinding",
            "metadata": {"name": "wink-admission", "namespace": ns, "labels": labels},
            "roleRef": role_ref("Role"), "subjects": subject}),
        json!({"apiVersion": rbac, "kind": "ClusterRole",
        "metadata": {"name": "wink-admission", "labels": labels},
        "rules": [
            {"apiGroups": [group], "resources": configurations, "resourceNames": [NAME],
             "verbs": ["get", "update", "delete"]},
            {"apiGroups": [group], "resources": configurations, "verbs": ["create"]},
        ]}),
        json!({"apiVersion": rbac, "kind": "ClusterRoleBinding",
            "metadata": {"name": "wink-admission", "labels": labels},
            "roleRef": role_ref("ClusterRole"), "subjects": subject}),
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": SERVICE, "namespace": ns, "labels": labels},
            "spec": {"selector": labels,
                     "ports": [{"name": "webhook", "port": 443, "targetPort": "webhook"}]}}),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_service_maps_443_to_the_webhook_port_and_rbac_names_the_secret_and_configurations() {
        let docs = documents("wink-system", &json!({"app.kubernetes.io/name": "wink"}));
        let service = docs.iter().find(|d| d["kind"] == "Service").unwrap();
        assert_eq!(service["spec"]["ports"][0]["port"], 443);
        assert_eq!(service["spec"]["ports"][0]["targetPort"], "webhook");
        let role = docs.iter().find(|d| d["kind"] == "Role").unwrap();
        assert_eq!(role["metadata"]["namespace"], "wink-system");
        assert_eq!(role["rules"][0]["resourceNames"], json!([CA_SECRET]));
        let cluster = docs.iter().find(|d| d["kind"] == "ClusterRole").unwrap();
        assert_eq!(
            cluster["rules"][0]["resources"],
            json!(["validatingwebhookconfigurations", "mutatingwebhookconfigurations"])
        );
        assert_eq!(cluster["rules"][0]["resourceNames"], json!(["wink"]));
        assert_eq!(args(9443)[0], "--admission-addr=0.0.0.0:9443");
        assert_eq!(port(9443)["containerPort"], 9443);
    }

    #[test]
    fn a_deployment_with_webhooks_runs_the_server_and_one_without_does_not() {
        let d = |admission| super::super::Deployment {
            namespace: "wink-system".into(),
            image: "wink".into(),
            grants: None,
            admission,
            report_api: crate::reports::ReportApi::default(),
        };
        let docs = super::super::render(&[], &d(Some(DEFAULT_PORT)));
        let deployment = docs.iter().find(|x| x["kind"] == "Deployment").unwrap();
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        let args: Vec<&str> = container["args"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(args.contains(&"--admission-addr=0.0.0.0:8443"), "{args:?}");
        assert!(
            container["ports"]
                .as_array()
                .unwrap()
                .contains(&port(DEFAULT_PORT))
        );
        assert!(
            docs.iter()
                .any(|x| x["kind"] == "Service" && x["metadata"]["name"] == SERVICE)
        );
        let none = super::super::render(&[], &d(None));
        assert!(!none.iter().any(|x| x["metadata"]["name"] == "wink-admission"));
        assert!(
            !none
                .iter()
                .any(|x| x["kind"] == "Service" && x["metadata"]["name"] == SERVICE)
        );
    }
}
