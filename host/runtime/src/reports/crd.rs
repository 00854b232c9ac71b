//! The `wgpolicyk8s.io/v1alpha2` CustomResourceDefinitions (PolicyReport and
//! ClusterPolicyReport, as the Policy WG publishes them: the schema of the
//! fields wink writes, and the printer columns `kubectl get` shows), and
//! their installation when a cluster lacks them. `wink manifests` ships the
//! same definitions.

use serde_json::{Value, json};

/// The CRD names.
pub const NAMES: [&str; 2] = [
    "policyreports.wgpolicyk8s.io",
    "clusterpolicyreports.wgpolicyk8s.io",
];

fn object_reference() -> Value {
    json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "namespace": {"type": "string"},
            "name": {"type": "string"},
            "uid": {"type": "string"},
            "fieldPath": {"type": "string"},
            "resourceVersion": {"type": "string"}
        },
        "x-kubernetes-map-type": "atomic"
    })
}

fn schema() -> Value {
    let count = json!({"type": "integer"});
    json!({
        "type": "object",
        "description": "Policy results about the objects of a namespace (or of the cluster).",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "scope": object_reference(),
            "scopeSelector": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "summary": {
                "type": "object",
                "properties": {"pass": count, "fail": count, "warn": count, "error": count, "skip": count}
            },
            "results": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["policy"],
                    "properties": {
                        "source": {"type": "string"},
                        "policy": {"type": "string"},
                        "rule": {"type": "string"},
                        "category": {"type": "string"},
                        "message": {"type": "string"},
                        "result": {"type": "string", "enum": ["pass", "fail", "warn", "error", "skip"]},
                        "severity": {"type": "string", "enum": ["critical", "high", "low", "medium", "info"]},
                        "scored": {"type": "boolean"},
                        "properties": {"type": "object", "additionalProperties": {"type": "string"}},
                        "resources": {"type": "array", "items": object_reference()},
                        "resourceSelector": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "timestamp": {
                            "type": "object",
                            "properties": {
                                "seconds": {"type": "integer", "format": "int64"},
                                "nanos": {"type": "integer", "format": "int32"}
                            }
                        }
                    }
                }
            }
        }
    })
}

fn column(name: &str, path: &str, priority: u32) -> Value {
    json!({"name": name, "type": "integer", "jsonPath": path, "priority": priority})
}

fn crd(kind: &str, plural: &str, short: &str, namespaced: bool) -> Value {
    let mut columns = vec![
        json!({"name": "Kind", "type": "string", "jsonPath": ".scope.kind", "priority": 1}),
        json!({"name": "Name", "type": "string", "jsonPath": ".scope.name", "priority": 1}),
    ];
    for (name, path) in [
        ("Pass", ".summary.pass"),
        ("Fail", ".summary.fail"),
        ("Warn", ".summary.warn"),
        ("Error", ".summary.error"),
        ("Skip", ".summary.skip"),
    ] {
        columns.push(column(name, path, 0));
    }
    columns.push(json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}));
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": format!("{plural}.wgpolicyk8s.io"),
            "labels": {"app.kubernetes.io/part-of": "wink"},
        },
        "spec": {
            "group": "wgpolicyk8s.io",
            "names": {
                "kind": kind,
                "listKind": format!("{kind}List"),
                "plural": plural,
                "singular": kind.to_lowercase(),
                "shortNames": [short],
            },
            "scope": if namespaced { "Namespaced" } else { "Cluster" },
            "versions": [{
                "name": "v1alpha2",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": schema()},
                "additionalPrinterColumns": columns,
            }],
        }
    })
}

/// Both definitions, PolicyReport first.
pub fn definitions() -> [Value; 2] {
    [
        crd("PolicyReport", "policyreports", "polr", true),
        crd("ClusterPolicyReport", "clusterpolicyreports", "cpolr", false),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_definitions_name_what_the_writer_writes() {
        let [ns, cluster] = definitions();
        assert_eq!(ns["metadata"]["name"], NAMES[0]);
        assert_eq!(cluster["metadata"]["name"], NAMES[1]);
        assert_eq!(ns["spec"]["scope"], "Namespaced");
        assert_eq!(cluster["spec"]["scope"], "Cluster");
        let v = &ns["spec"]["versions"][0];
        assert_eq!(v["name"], "v1alpha2");
        let cols: Vec<&str> = v["additionalPrinterColumns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            cols,
            ["Kind", "Name", "Pass", "Fail", "Warn", "Error", "Skip", "Age"]
        );
    }
}
