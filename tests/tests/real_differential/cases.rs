//! The requests played on both servers, in order (later ones see what
//! earlier ones stored): what wink, kubectl and client-go send.

use http::Method;
use serde_json::{Value, json};

/// One request: its method, path (`{ns}` is the test's namespace), body
/// and content type.
pub(super) struct Case {
    pub(super) name: &'static str,
    pub(super) method: Method,
    pub(super) path: String,
    pub(super) body: Option<Value>,
    pub(super) content_type: &'static str,
}

const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";
const APPLY: &str = "application/apply-patch+yaml";

fn case(name: &'static str, method: Method, path: &str, body: Option<Value>) -> Case {
    let content_type = match method {
        Method::PATCH => MERGE,
        _ => JSON,
    };
    Case {
        name,
        method,
        path: path.to_string(),
        body,
        content_type,
    }
}

fn patch(name: &'static str, path: &str, content_type: &'static str, body: Value) -> Case {
    Case {
        content_type,
        ..case(name, Method::PATCH, path, Some(body))
    }
}

fn config_map(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": {"k": "v"}})
}

fn webhook_configuration(name: &str, hook: &str) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [{"name": hook, "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "clientConfig": {"url": "https://127.0.0.1:9/x"},
            // Matches no namespace: the shared server's other tests create Pods.
            "namespaceSelector": {"matchLabels": {"wink.dev/diff": "never"}},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]}]})
}

/// [`webhook_configuration`] reaching its webhook through a Service's `path`.
fn service_webhook_configuration(name: &str, path: &str) -> Value {
    let mut c = webhook_configuration(name, "diff.validate.wink.dev");
    c["webhooks"][0]["clientConfig"] =
        json!({"service": {"namespace": "default", "name": "wink", "path": path, "port": 443}});
    c
}

fn crd(plural: &str, versions: Value) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.diff.wink.dev")},
        "spec": {"group": "diff.wink.dev", "scope": "Namespaced",
            "names": {"plural": plural, "singular": plural.trim_end_matches('s'), "kind": "Widget", "listKind": "WidgetList"},
            "versions": versions}})
}

/// The requests, in order (later ones see what earlier ones stored).
pub(super) fn cases() -> Vec<Case> {
    let cms = "/api/v1/namespaces/{ns}/configmaps";
    let vwc = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let leases = "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases";
    let schema = json!({"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}});
    vec![
        // Names and labels.
        case(
            "create a ConfigMap",
            Method::POST,
            cms,
            Some(config_map("a", json!({"app": "web"}))),
        ),
        case(
            "create it again",
            Method::POST,
            cms,
            Some(config_map("a", json!({}))),
        ),
        case(
            "an uppercase name",
            Method::POST,
            cms,
            Some(config_map("Bad", json!({}))),
        ),
        case(
            "a name with _",
            Method::POST,
            cms,
            Some(config_map("pod_security", json!({}))),
        ),
        case(
            "a name of 254 characters",
            Method::POST,
            cms,
            Some(config_map(&"a".repeat(254), json!({}))),
        ),
        case(
            "a bad label key",
            Method::POST,
            cms,
            Some(config_map("b", json!({"-x": "1"}))),
        ),
        case(
            "a bad label value",
            Method::POST,
            cms,
            Some(config_map("c", json!({"x": "a b"}))),
        ),
        case(
            "a label value of 64 characters",
            Method::POST,
            cms,
            Some(config_map("d", json!({"x": "v".repeat(64)}))),
        ),
        case(
            "no name",
            Method::POST,
            cms,
            Some(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}})),
        ),
        case(
            "a generateName",
            Method::POST,
            cms,
            Some(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}})),
        ),
        case(
            "a kind that is not the resource's",
            Method::POST,
            cms,
            Some(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "e"}})),
        ),
        case(
            "a body that is not JSON",
            Method::POST,
            cms,
            Some(json!("not an object")),
        ),
        // Reads.
        case(
            "get it",
            Method::GET,
            "/api/v1/namespaces/{ns}/configmaps/a",
            None,
        ),
        case(
            "get a missing one",
            Method::GET,
            "/api/v1/namespaces/{ns}/configmaps/missing",
            None,
        ),
        case(
            "list by label",
            Method::GET,
            "/api/v1/namespaces/{ns}/configmaps?labelSelector=app%3Dweb",
            None,
        ),
        case(
            "list by a bad label selector",
            Method::GET,
            "/api/v1/namespaces/{ns}/configmaps?labelSelector=app%3D%3D%3Dweb",
            None,
        ),
        case(
            "list by set selector",
            Method::GET,
            "/api/v1/namespaces/{ns}/configmaps?labelSelector=app%20in%20(web,db)",
            None,
        ),
        case(
            "list by an unsupported field",
            Method::GET,
            "/api/v1/namespaces/{ns}/configmaps?fieldSelector=data.k%3Dv",
            None,
        ),
        case(
            "list by metadata.name",
            Method::GET,
            "/api/v1/namespaces/{ns}/configmaps?fieldSelector=metadata.name%3Da",
            None,
        ),
        case(
            "an unknown resource",
            Method::GET,
            "/api/v1/namespaces/{ns}/widgets",
            None,
        ),
        // Writes on what exists.
        case(
            "update with a stale resourceVersion",
            Method::PUT,
            "/api/v1/namespaces/{ns}/configmaps/a",
            Some(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "1"}}),
            ),
        ),
        case(
            "update with another name",
            Method::PUT,
            "/api/v1/namespaces/{ns}/configmaps/a",
            Some(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "z"}})),
        ),
        patch(
            "a merge patch",
            "/api/v1/namespaces/{ns}/configmaps/a",
            MERGE,
            json!({"data": {"m": "1"}}),
        ),
        patch(
            "a strategic merge patch",
            "/api/v1/namespaces/{ns}/configmaps/a",
            STRATEGIC,
            json!({"metadata": {"labels": {"s": "1"}}}),
        ),
        patch(
            "a JSON patch",
            "/api/v1/namespaces/{ns}/configmaps/a",
            JSON_PATCH,
            json!([{"op": "add", "path": "/data/j", "value": "1"}]),
        ),
        patch(
            "a JSON patch whose test fails",
            "/api/v1/namespaces/{ns}/configmaps/a",
            JSON_PATCH,
            json!([{"op": "test", "path": "/data/k", "value": "no"}]),
        ),
        patch(
            "a JSON patch of a missing path",
            "/api/v1/namespaces/{ns}/configmaps/a",
            JSON_PATCH,
            json!([{"op": "replace", "path": "/nothing/here", "value": "1"}]),
        ),
        patch(
            "a merge patch making a bad label",
            "/api/v1/namespaces/{ns}/configmaps/a",
            MERGE,
            json!({"metadata": {"labels": {"x": "a b"}}}),
        ),
        patch(
            "a patch of a missing object",
            "/api/v1/namespaces/{ns}/configmaps/missing",
            MERGE,
            json!({"data": {"m": "1"}}),
        ),
        Case {
            path: "/api/v1/namespaces/{ns}/configmaps/a?fieldManager=diff".into(),
            ..patch(
                "server-side apply",
                "",
                APPLY,
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"applied": "1"}}),
            )
        },
        patch(
            "server-side apply without a field manager",
            "/api/v1/namespaces/{ns}/configmaps/a",
            APPLY,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"applied": "2"}}),
        ),
        Case {
            path: "/api/v1/namespaces/{ns}/configmaps/applied?fieldManager=diff".into(),
            ..patch(
                "server-side apply creating",
                "",
                APPLY,
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}}),
            )
        },
        Case {
            content_type: "text/plain",
            ..patch(
                "a patch of an unsupported type",
                "/api/v1/namespaces/{ns}/configmaps/a",
                MERGE,
                json!({}),
            )
        },
        // Dry runs store nothing.
        case(
            "a dry-run create",
            Method::POST,
            "/api/v1/namespaces/{ns}/configmaps?dryRun=All",
            Some(config_map("dry", json!({}))),
        ),
        case(
            "get what a dry run made",
            Method::GET,
            "/api/v1/namespaces/{ns}/configmaps/dry",
            None,
        ),
        case(
            "a dry run of an unknown kind",
            Method::POST,
            "/api/v1/namespaces/{ns}/configmaps?dryRun=Some",
            Some(config_map("dry2", json!({}))),
        ),
        case(
            "delete a missing one",
            Method::DELETE,
            "/api/v1/namespaces/{ns}/configmaps/missing",
            None,
        ),
        case(
            "delete it",
            Method::DELETE,
            "/api/v1/namespaces/{ns}/configmaps/applied",
            None,
        ),
        // Webhook configurations: the name a plugin file's stem once made.
        case(
            "a webhook named with _",
            Method::POST,
            vwc,
            Some(webhook_configuration(
                "diff-bad",
                "pod_security.validate.wink.dev",
            )),
        ),
        case(
            "a webhook name with two labels",
            Method::POST,
            vwc,
            Some(webhook_configuration("diff-short", "pod.security")),
        ),
        case(
            "a valid webhook configuration",
            Method::POST,
            vwc,
            Some(webhook_configuration(
                "diff-good",
                "pod-security.validate.wink.dev",
            )),
        ),
        // Service paths: each segment a DNS subdomain (a shared webhook's
        // names its plugins joined by dots).
        case(
            "a Service path with a _ segment",
            Method::POST,
            vwc,
            Some(service_webhook_configuration(
                "diff-path-bad",
                "/admission/pod_security/validate",
            )),
        ),
        case(
            "a Service path with an empty segment",
            Method::POST,
            vwc,
            Some(service_webhook_configuration(
                "diff-path-empty",
                "/admission//validate",
            )),
        ),
        case(
            "a shared webhook's Service path",
            Method::POST,
            vwc,
            Some(service_webhook_configuration(
                "diff-path-good",
                "/admission/pod-security.require-probes/validate",
            )),
        ),
        // CustomResourceDefinitions.
        case(
            "a CRD without versions",
            Method::POST,
            crds,
            Some(crd("nothings", json!([]))),
        ),
        case(
            "a CRD",
            Method::POST,
            crds,
            Some(crd(
                "widgets",
                json!([{"name": "v1", "served": true, "storage": true, "schema": schema}]),
            )),
        ),
        case(
            "a CRD with two storage versions",
            Method::POST,
            crds,
            Some(crd(
                "gadgets",
                json!([
            {"name": "v1", "served": true, "storage": true, "schema": schema},
            {"name": "v2", "served": true, "storage": true, "schema": schema}]),
            )),
        ),
        // Leases, as leader election writes them.
        case(
            "a Lease",
            Method::POST,
            leases,
            Some(json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "wink"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}})),
        ),
        case(
            "a Lease with a negative duration",
            Method::POST,
            leases,
            Some(json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "neg"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": -1}})),
        ),
        case(
            "a Lease updated from a stale version",
            Method::PUT,
            "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/wink",
            Some(json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "wink", "resourceVersion": "1"}, "spec": {"holderIdentity": "b"}})),
        ),
        // Events in both groups.
        case(
            "a core Event",
            Method::POST,
            "/api/v1/namespaces/{ns}/events",
            Some(json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "e1"}, "involvedObject": {"kind": "ConfigMap", "name": "a", "namespace": "{ns}"},
            "reason": "Tested", "message": "m", "type": "Normal", "source": {"component": "wink"}})),
        ),
        case(
            "a core Event with no involved object",
            Method::POST,
            "/api/v1/namespaces/{ns}/events",
            Some(json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "e2"}, "reason": "Tested", "message": "m", "type": "Normal"})),
        ),
        case(
            "an events.k8s.io Event",
            Method::POST,
            "/apis/events.k8s.io/v1/namespaces/{ns}/events",
            Some(json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e3"}, "regarding": {"kind": "ConfigMap", "name": "a", "namespace": "{ns}"},
            "reason": "Tested", "note": "n", "type": "Normal", "action": "Test", "reportingController": "wink.dev/wink",
            "reportingInstance": "wink-0", "eventTime": "2026-01-01T00:00:00.000000Z"})),
        ),
        case(
            "an events.k8s.io Event without eventTime",
            Method::POST,
            "/apis/events.k8s.io/v1/namespaces/{ns}/events",
            Some(json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e4"}, "regarding": {"kind": "ConfigMap", "name": "a", "namespace": "{ns}"},
            "reason": "Tested", "note": "n", "type": "Normal", "action": "Test", "reportingController": "wink.dev/wink",
            "reportingInstance": "wink-0"})),
        ),
        case(
            "an Event of a bad type",
            Method::POST,
            "/api/v1/namespaces/{ns}/events",
            Some(json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "e5"}, "involvedObject": {"kind": "ConfigMap", "name": "a", "namespace": "{ns}"},
            "reason": "Tested", "message": "m", "type": "Loud", "source": {"component": "wink"}})),
        ),
        // Namespaces and Pods.
        case(
            "an uppercase Namespace",
            Method::POST,
            "/api/v1/namespaces",
            Some(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "Diff"}})),
        ),
        case(
            "a Pod without containers",
            Method::POST,
            "/api/v1/namespaces/{ns}/pods",
            Some(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p0"}, "spec": {"containers": []}})),
        ),
        case(
            "a Pod",
            Method::POST,
            "/api/v1/namespaces/{ns}/pods",
            Some(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p1"}, "spec": {"containers": [{"name": "c", "image": "i"}]}})),
        ),
        // Watches: one resumed from a resource version long compacted.
        case(
            "a watch from resourceVersion 1",
            Method::GET,
            "/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion=1&timeoutSeconds=1",
            None,
        ),
    ]
}
