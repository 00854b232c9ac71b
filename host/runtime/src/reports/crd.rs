//! The report CustomResourceDefinitions, one pair per [`ReportApi`]:
//! PolicyReport and ClusterPolicyReport (`wgpolicyk8s.io/v1alpha2`, as the
//! Policy WG publishes them), Report and ClusterReport
//! (`openreports.io/v1alpha1`, as openreports/reports-api publishes them):
//! the schema of the fields, the printer columns `kubectl get` shows, and
//! the short names. Installed when a cluster lacks them; `wink manifests`
//! ships the same definitions.

use super::api::ReportApi;
use serde_json::{Value, json};

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

/// A `metav1.LabelSelector`, as controller-gen renders it.
fn label_selector() -> Value {
    let strings = json!({"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "atomic"});
    json!({
        "type": "object",
        "properties": {
            "matchExpressions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["key", "operator"],
                    "properties": {
                        "key": {"type": "string"},
                        "operator": {"type": "string"},
                        "values": strings
                    }
                },
                "x-kubernetes-list-type": "atomic"
            },
            "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}
        },
        "x-kubernetes-map-type": "atomic"
    })
}

const OUTCOMES: [&str; 5] = ["pass", "fail", "warn", "error", "skip"];

/// The schema of one report of `api`.
fn schema(api: ReportApi) -> Value {
    match api {
        ReportApi::Wgpolicyk8s => wgpolicyk8s_schema(),
        ReportApi::OpenReports => openreports_schema(),
    }
}

/// `openreports.io/v1alpha1`: the Report of the wgpolicyk8s API with a
/// report-level `source`, a `configuration`, typed selectors and a
/// timestamp whose both fields are required. Per result only `policy` is
/// required (`source` is optional, and overrides the report's).
fn openreports_schema() -> Value {
    let count = json!({"type": "integer"});
    let summary: serde_json::Map<String, Value> =
        OUTCOMES.iter().map(|o| (o.to_string(), count.clone())).collect();
    json!({
        "type": "object",
        "description": "Policy results about the objects of a namespace (or of the cluster).",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "source": {"type": "string"},
            "scope": object_reference(),
            "scopeSelector": label_selector(),
            "configuration": {
                "type": "object",
                "required": ["limits"],
                "properties": {
                    "limits": {
                        "type": "object",
                        "properties": {
                            "maxResults": {"type": "integer"},
                            "statusFilter": {"type": "array", "items": {"type": "string", "enum": OUTCOMES}}
                        }
                    }
                }
            },
            "summary": {"type": "object", "properties": summary},
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
                        "result": {"type": "string", "enum": OUTCOMES},
                        "severity": {"type": "string", "enum": ["critical", "high", "low", "medium", "info"]},
                        "scored": {"type": "boolean"},
                        "properties": {"type": "object", "additionalProperties": {"type": "string"}},
                        "resources": {"type": "array", "items": object_reference()},
                        "resourceSelector": label_selector(),
                        "timestamp": {
                            "type": "object",
                            "required": ["nanos", "seconds"],
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

/// `wgpolicyk8s.io/v1alpha2`.
fn wgpolicyk8s_schema() -> Value {
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

fn crd(api: ReportApi, namespaced: bool) -> Value {
    let (kind, plural) = (api.kind(namespaced), api.plural(namespaced));
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
            "name": format!("{plural}.{}", api.group()),
            "labels": {"app.kubernetes.io/part-of": "wink"},
        },
        "spec": {
            "group": api.group(),
            "names": {
                "kind": kind,
                "listKind": format!("{kind}List"),
                "plural": plural,
                "singular": kind.to_lowercase(),
                "shortNames": [api.short_name(namespaced)],
            },
            "scope": if namespaced { "Namespaced" } else { "Cluster" },
            "versions": [{
                "name": api.version(),
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": schema(api)},
                "additionalPrinterColumns": columns,
            }],
        }
    })
}

/// The two definitions of `api`, the namespaced kind's first.
pub fn definitions(api: ReportApi) -> [Value; 2] {
    [crd(api, true), crd(api, false)]
}

#[cfg(test)]
#[path = "crd_tests.rs"]
mod tests;
