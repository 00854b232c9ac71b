//! The `WinkPlugin` CustomResourceDefinition (`wink.dev/v1alpha1`,
//! cluster-scoped, plural `winkplugins`, short name `wp`): a structural
//! schema of the spec (source, config, grant, scope, admission, pull
//! Secret, cosign key) and status, the status subresource and the printer
//! columns `kubectl get winkplugins` shows (language and compiler with
//! `-o wide`). Installed by `wink run` when a
//! cluster lacks it; `wink manifests` ships the same definition.

use serde_json::{Value, json};

/// The API group.
pub const GROUP: &str = "wink.dev";
/// The served (and stored) version.
pub const VERSION: &str = "v1alpha1";
/// `apiVersion` of a WinkPlugin.
pub const API_VERSION: &str = "wink.dev/v1alpha1";
/// The kind.
pub const KIND: &str = "WinkPlugin";
/// The resource (plural).
pub const PLURAL: &str = "winkplugins";
/// The CRD's name.
pub const CRD_NAME: &str = "winkplugins.wink.dev";

/// The grant: the fields of a grants-file entry ([`wink_runtime::grants::PluginGrant`]).
fn grant() -> Value {
    let strings = json!({"type": "array", "items": {"type": "string"}});
    json!({
        "type": "object",
        "description": "What the plugin may do beyond reading what it watches: the fields of a grants-file entry.",
        "properties": {
            "mode": {"type": "string", "enum": ["enforce", "audit"]},
            "events": {"type": "boolean"},
            "secrets": {"type": "boolean"},
            "writes": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["apiVersion", "kind", "verbs"],
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "verbs": {"type": "array", "items": {"type": "string", "enum": ["create", "update", "patch", "delete"]}},
                        "namespaces": strings
                    }
                }
            },
            "rate": {
                "type": "object",
                "properties": {"qps": {"type": "number"}, "burst": {"type": "integer"}}
            },
            "limits": {
                "type": "object",
                "description": "Caps tighter than the daemon's: memory (bytes or 64Mi), callDeadline (ms or 500ms, 2s), queue (keys), cpu (a share of one core), fuel (WebAssembly instructions of one call, about).",
                "properties": {
                    "memory": {"x-kubernetes-int-or-string": true},
                    "callDeadline": {"x-kubernetes-int-or-string": true},
                    "queue": {"type": "integer"},
                    "cpu": {"type": "number"},
                    "fuel": {"type": "integer", "format": "int64"}
                }
            }
        }
    })
}

/// A label selector, as `metav1.LabelSelector`.
fn selector() -> Value {
    json!({
        "type": "object",
        "properties": {
            "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
            "matchExpressions": {
                "type": "array",
                "maxItems": 256,
                "items": {
                    "type": "object",
                    "required": ["key", "operator"],
                    "properties": {
                        "key": {"type": "string"},
                        "operator": {"type": "string", "enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                        "values": {"type": "array", "items": {"type": "string"}}
                    }
                }
            }
        }
    })
}

/// `match` or `exclude`: a [`wink_runtime::scope::Selection`].
fn selection(description: &str) -> Value {
    let strings = json!({"type": "array", "maxItems": 256, "items": {"type": "string"}});
    json!({
        "type": "object",
        "description": description,
        "properties": {
            "namespaceSelector": selector(),
            "objectSelector": selector(),
            "namespaces": strings,
            "kinds": strings
        }
    })
}

fn spec() -> Value {
    json!({
        "type": "object",
        "required": ["source"],
        "properties": {
            "source": {
                "type": "object",
                "description": "Where the component comes from: exactly one of oci and https.",
                "properties": {
                    "oci": {"type": "string", "maxLength": 1024, "description": "registry/repository:tag (resolved once and pinned) or registry/repository@sha256:..."},
                    "https": {"type": "string", "maxLength": 2048, "description": "An https:// URL of the component; sha256 required."},
                    "sha256": {"type": "string", "maxLength": 71, "description": "The component's digest (for https)."}
                }
            },
            "config": {
                "description": "The plugin's config: an object (handed over as JSON) or a string (as is).",
                "x-kubernetes-preserve-unknown-fields": true
            },
            "grant": grant(),
            "match": selection("Where the plugin applies (every field given must hold): its events, cache, writes, Events, reports and webhooks see only objects that match."),
            "exclude": selection("Where the plugin does not apply (every field given must hold)."),
            "admission": {
                "type": "object",
                "properties": {"failurePolicy": {"type": "string", "enum": ["Fail", "Ignore"]}}
            },
            "pullSecret": {"type": "string", "maxLength": 253, "description": "A kubernetes.io/dockerconfigjson Secret in wink's namespace, for a private registry."},
            "verify": {
                "type": "object",
                "description": "The signature an oci source must have before it is pulled or loaded.",
                "required": ["cosign"],
                "properties": {
                    "cosign": {
                        "type": "object",
                        "required": ["publicKey"],
                        "properties": {
                            "publicKey": {"type": "string", "maxLength": 16384, "description": "A cosign public key (PEM, ECDSA P-256: cosign.pub): the manifest's signature under the tag sha256-<hex>.sig must verify under it."}
                        }
                    }
                }
            }
        }
    })
}

fn status() -> Value {
    let condition = json!({
        "type": "object",
        "required": ["type", "status", "lastTransitionTime", "reason", "message"],
        "properties": {
            "type": {"type": "string"},
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "observedGeneration": {"type": "integer"},
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "reason": {"type": "string"},
            "message": {"type": "string"}
        }
    });
    json!({
        "type": "object",
        "properties": {
            "observedGeneration": {"type": "integer"},
            "source": {"type": "string"},
            "digest": {"type": "string"},
            "componentDigest": {"type": "string"},
            "language": {"type": "string"},
            "compiler": {"type": "string"},
            "mode": {"type": "string"},
            "ready": {"type": "string"},
            "lastError": {"type": "string"},
            "calls": {"type": "integer"},
            "crashes": {"type": "integer"},
            "conditions": {
                "type": "array",
                "items": condition,
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type"]
            }
        }
    })
}

/// The CustomResourceDefinition.
pub fn definition() -> Value {
    let column = |name: &str, path: &str, ty: &str| json!({"name": name, "type": ty, "jsonPath": path});
    // Shown by `kubectl get -o wide` only.
    let wide =
        |name: &str, path: &str| json!({"name": name, "type": "string", "jsonPath": path, "priority": 1});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME, "labels": {"app.kubernetes.io/part-of": "wink"}},
        "spec": {
            "group": GROUP,
            "scope": "Cluster",
            "names": {
                "kind": KIND,
                "listKind": "WinkPluginList",
                "plural": PLURAL,
                "singular": "winkplugin",
                "shortNames": ["wp"],
                "categories": ["wink"]
            },
            "versions": [{
                "name": VERSION,
                "served": true,
                "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    column("Source", ".status.source", "string"),
                    column("Digest", ".status.digest", "string"),
                    column("Mode", ".status.mode", "string"),
                    column("Ready", ".status.ready", "string"),
                    column("Age", ".metadata.creationTimestamp", "date"),
                    wide("Language", ".status.language"),
                    wide("Compiler", ".status.compiler")
                ],
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "description": "A plugin of wink: its component's source, config and grant.",
                    "required": ["spec"],
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": {"type": "object"},
                        "spec": spec(),
                        "status": status()
                    }
                }}
            }]
        }
    })
}
