//! The `WinkException` CustomResourceDefinition (`wink.dev/v1alpha1`,
//! namespaced, plural `winkexceptions`, short name `wex`): a structural
//! schema of the spec (the plugins excepted from, the objects excepted, an
//! expiry, a required non-empty reason) and of the status (how many
//! objects each excepts now), the status subresource and the printer
//! columns `kubectl get winkexceptions` shows. Installed by the daemon when
//! `--exception-namespaces` is given and the cluster lacks it; `wink
//! manifests --exceptions` ships the same definition.

use serde_json::{Value, json};

/// The API group.
pub const GROUP: &str = "wink.dev";
/// `apiVersion` of a WinkException.
pub const API_VERSION: &str = "wink.dev/v1alpha1";
/// The kind.
pub const KIND: &str = "WinkException";
/// The resource (plural).
pub const PLURAL: &str = "winkexceptions";
/// The CRD's name.
pub const CRD_NAME: &str = "winkexceptions.wink.dev";

fn spec() -> Value {
    let strings = json!({"type": "array", "maxItems": 256, "items": {"type": "string", "minLength": 1, "maxLength": 317}});
    let mut names = strings.clone();
    names["description"] = json!("Object names; * matches any run of characters, ? one.");
    let selector = json!({
        "type": "object",
        "description": "The object's labels, as metav1.LabelSelector.",
        "properties": {
            "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
            "matchExpressions": {"type": "array", "maxItems": 256, "items": {
                "type": "object",
                "required": ["key", "operator"],
                "properties": {
                    "key": {"type": "string"},
                    "operator": {"type": "string", "enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                    "values": {"type": "array", "items": {"type": "string"}}
                }
            }}
        }
    });
    json!({
        "type": "object",
        "required": ["plugins", "match", "reason"],
        "properties": {
            "plugins": {
                "type": "array",
                "description": "The plugins whose policy the objects are excepted from.",
                "minItems": 1,
                "maxItems": 256,
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string", "minLength": 1},
                        "webhooks": {
                            "type": "array",
                            "description": "Only at these admission webhooks (and not in events or reports).",
                            "items": {"type": "string", "enum": ["validate", "mutate"]}
                        }
                    }
                }
            },
            "match": {
                "type": "object",
                "description": "The objects excepted: every field given must hold.",
                "minProperties": 1,
                "properties": {
                    "namespaces": strings,
                    "names": names,
                    "kinds": strings,
                    "objectSelector": selector
                }
            },
            "expires": {
                "type": "string",
                "format": "date-time",
                "description": "When the exception stops applying (RFC 3339)."
            },
            "reason": {
                "type": "string",
                "minLength": 1,
                "maxLength": 1024,
                "pattern": "\\S",
                "description": "Why: said in the warnings and report results it causes."
            }
        }
    })
}

/// The CustomResourceDefinition.
pub fn definition() -> Value {
    let column = |name: &str, path: &str, ty: &str| json!({"name": name, "type": ty, "jsonPath": path});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME, "labels": {"app.kubernetes.io/part-of": "wink"}},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": KIND,
                "listKind": "WinkExceptionList",
                "plural": PLURAL,
                "singular": "winkexception",
                "shortNames": ["wex"],
                "categories": ["wink"]
            },
            "versions": [{
                "name": "v1alpha1",
                "served": true,
                "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    column("Plugins", ".status.plugins", "string"),
                    column("Targets", ".status.targets", "string"),
                    column("Expires", ".spec.expires", "string"),
                    column("Excepting", ".status.excepting", "integer"),
                    column("Age", ".metadata.creationTimestamp", "date")
                ],
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "description": "An exception to wink plugins' policy: the objects it names are let in (with a warning), skipped in reports and not delivered to the plugins.",
                    "required": ["spec"],
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": {"type": "object"},
                        "spec": spec(),
                        "status": {
                            "type": "object",
                            "properties": {
                                "plugins": {"type": "string", "description": "The plugins it names, comma-separated."},
                                "excepting": {"type": "integer", "description": "How many objects of wink's cache it excepts now."},
                                "targets": {"type": "string", "description": "Its match, in a line."},
                                "active": {"type": "boolean", "description": "Whether it applies (honoured where it is, not expired)."}
                            }
                        }
                    }
                }}
            }]
        }
    })
}
