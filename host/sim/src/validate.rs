//! Value checks the API server's validation makes on some built-in kinds
//! (422 Invalid, one cause per field), beyond names and namespaces
//! (`meta`, `object_meta`) and types (`decode`): a Lease's durations, the
//! keys of a ConfigMap's and a Secret's data, a Pod's containers and host
//! ports, Events (`validate_events`), workloads' replicas and a CronJob's
//! schedule (`validate_workloads`), webhook configurations
//! (`admission::config`).
//!
//! Owns: these checks and their wording. Must not touch: the store,
//! HTTP, when a write is checked (`write`).

use super::resources::ResourceDef;
use serde_json::Value;

/// The `field: detail` messages of what `body` (of `def`, in its stored
/// form) gets wrong; `old` is the object an update replaces.
pub fn values(def: &ResourceDef, body: &Value, old: Option<&Value>) -> Vec<String> {
    match (def.group.as_str(), def.plural.as_str()) {
        ("", "events") => super::validate_events::check(body, None),
        ("events.k8s.io", "events") => super::validate_events::check(body, Some(old)),
        ("coordination.k8s.io", "leases") => lease(body),
        ("", "configmaps") => keys(body, &["data", "binaryData"]),
        ("", "secrets") => keys(body, &["data", "stringData"]),
        ("", "pods") => pod(body),
        ("apps", "deployments" | "replicasets" | "statefulsets") | ("", "replicationcontrollers") => {
            super::validate_workloads::replicas(body)
        }
        ("batch", "cronjobs") => super::validate_workloads::cronjob(body),
        ("admissionregistration.k8s.io", _) => super::admission::config::validate(def, body),
        _ => Vec::new(),
    }
}

/// `ValidateLeaseSpec`: a positive duration, no negative transitions.
fn lease(body: &Value) -> Vec<String> {
    let int = |f: &str| body.pointer(&format!("/spec/{f}")).and_then(Value::as_i64);
    let mut errs = Vec::new();
    if let Some(n) = int("leaseDurationSeconds").filter(|n| *n <= 0) {
        errs.push(format!(
            "spec.leaseDurationSeconds: Invalid value: {n}: must be greater than 0"
        ));
    }
    if let Some(n) = int("leaseTransitions").filter(|n| *n < 0) {
        errs.push(format!(
            "spec.leaseTransitions: Invalid value: {n}: must be greater than or equal to 0"
        ));
    }
    errs
}

/// `ValidatePodSpec`, the part the simulator keeps: containers are
/// required, and on the host's network a port's `hostPort` is its
/// `containerPort`.
fn pod(body: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    let containers = body.pointer("/spec/containers").and_then(Value::as_array);
    if containers.is_none_or(Vec::is_empty) {
        errs.push("spec.containers: Required value".to_string());
    }
    if body.pointer("/spec/hostNetwork") == Some(&Value::Bool(true)) {
        for list in ["containers", "initContainers"] {
            let all = body.pointer(&format!("/spec/{list}")).and_then(Value::as_array);
            for (i, c) in all.into_iter().flatten().enumerate() {
                let ports = c.get("ports").and_then(Value::as_array);
                for (j, p) in ports.into_iter().flatten().enumerate() {
                    let (host, container) = (&p["hostPort"], &p["containerPort"]);
                    if !host.is_null() && host != container {
                        errs.push(format!(
                            "spec.{list}[{i}].ports[{j}].hostPort: Invalid value: {host}: must match \
                             `containerPort` when `hostNetwork` is true"
                        ));
                    }
                }
            }
        }
    }
    errs
}

/// `IsConfigMapKey` of every key of these maps.
fn keys(body: &Value, maps: &[&str]) -> Vec<String> {
    let mut errs = Vec::new();
    for m in maps {
        for k in body
            .get(*m)
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|o| o.keys())
        {
            let mut why = Vec::new();
            if k.len() > 253 {
                why.push("must be no more than 253 characters".to_string());
            }
            if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || "-._".contains(c)) {
                why.push(
                    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. \
                     'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
                        .to_string(),
                );
            }
            match k.as_str() {
                "." => why.push("must not be '.'".into()),
                ".." => why.push("must not be '..'".into()),
                k if k.starts_with("..") => why.push("must not start with '..'".into()),
                _ => {}
            }
            if !why.is_empty() {
                errs.push(format!("{m}[{k}]: Invalid value: {k:?}: {}", why.join("; ")));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;
    use serde_json::json;

    fn check(qualified: &str, body: Value) -> Vec<String> {
        values(Registry::with_builtins().get(qualified).unwrap(), &body, None)
    }

    #[test]
    fn leases_and_keys() {
        assert_eq!(
            check(
                "leases.coordination.k8s.io",
                json!({"spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1}})
            ),
            [
                "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
                "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0"
            ]
        );
        assert!(
            check(
                "leases.coordination.k8s.io",
                json!({"spec": {"leaseDurationSeconds": 15}})
            )
            .is_empty()
        );
        let e = check(
            "configmaps",
            json!({"data": {"a b": "x", "ok.key_1-2": "y", "..x": "z"}}),
        );
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(
            e[0].starts_with("data[..x]: Invalid value: \"..x\": must not start with '..'"),
            "{e:?}"
        );
        assert!(
            e[1].starts_with("data[a b]: Invalid value: \"a b\": a valid config key"),
            "{e:?}"
        );
        assert_eq!(check("secrets", json!({"stringData": {"/": "x"}})).len(), 1);
        assert!(
            check(
                "pods",
                json!({"data": {"a b": 1}, "spec": {"containers": [{"name": "c"}]}})
            )
            .is_empty()
        );
    }

    #[test]
    fn pods_need_containers_and_host_ports_match_on_the_host_network() {
        assert_eq!(
            check("pods", json!({"spec": {"containers": []}})),
            ["spec.containers: Required value"]
        );
        assert_eq!(check("pods", json!({})), ["spec.containers: Required value"]);
        let pod = |host: Value| {
            json!({"spec": {"hostNetwork": true, "containers": [{"name": "c",
                "ports": [{"containerPort": 80, "hostPort": host}]}]}})
        };
        assert!(check("pods", pod(json!(80))).is_empty());
        assert_eq!(
            check("pods", pod(json!(82))),
            [
                "spec.containers[0].ports[0].hostPort: Invalid value: 82: must match `containerPort` when `hostNetwork` is true"
            ]
        );
    }
}
