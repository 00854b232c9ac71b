//! Which reviews a plugin's webhook is sent: the resources and operations
//! of its rules, outside `kube-system` and `kube-node-lease`, which the
//! configurations' namespace selector leaves out (with wink's own
//! namespace, which only the configuration keeps out). The webhook port is reachable by anything in the cluster
//! network, so a review outside them (one the API server would never have
//! sent) is answered without the plugin: it runs no guest code and leaves
//! no policy result. The namespace and object selectors are the API
//! server's to apply (wink may not know a namespace's labels), so they are
//! not checked here.
//!
//! So is a review about an object outside the plugin's scope set by the
//! operator ([`in_scope`]): its webhook's selectors carry the scope, and
//! what they cannot say (kinds, an exclude of several fields) is decided
//! here, with the namespace labels wink's Namespace informer holds.
//!
//! Owns only those decisions; the server answers.

use super::configurations::EXCLUDED;
use serde_json::Value;
use wink_runtime::bindings::types::{AdmissionRule, Operation, Scope, Webhook};

fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .try_fold(v, |v, k| v.get(*k))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn operation(o: &Operation) -> &'static str {
    match o {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
        Operation::Connect => "CONNECT",
    }
}

/// Whether `pattern` (`pods`, `pods/status`, `*`, `*/status`, `pods/*`,
/// `*/*`) names `resource` with `sub` (empty: the resource itself), as the
/// API server's rule matcher reads it.
fn resource_matches(pattern: &str, resource: &str, sub: &str) -> bool {
    let (res, res_sub) = pattern.split_once('/').unwrap_or((pattern, ""));
    let res_ok = res == "*" || res == resource;
    let sub_ok = match res_sub {
        "" => sub.is_empty(),
        "*" => true,
        s => s == sub,
    };
    res_ok && sub_ok
}

fn rule_matches(rule: &AdmissionRule, request: &Value) -> bool {
    let listed = |list: &[String], value: &str| list.iter().any(|x| x == "*" || x == value);
    let namespaced = !str_at(request, &["namespace"]).is_empty();
    rule.operations
        .iter()
        .any(|o| operation(o) == str_at(request, &["operation"]))
        && listed(&rule.api_groups, str_at(request, &["resource", "group"]))
        && listed(&rule.api_versions, str_at(request, &["resource", "version"]))
        && rule.resources.iter().any(|p| {
            resource_matches(
                p,
                str_at(request, &["resource", "resource"]),
                str_at(request, &["subResource"]),
            )
        })
        && match rule.scope {
            Scope::Any => true,
            Scope::Namespaced => namespaced,
            Scope::Cluster => !namespaced,
        }
}

/// Whether the API server would send the review `request` (its `request`
/// object) to `webhook`; else why not.
pub fn sent(webhook: &Webhook, request: &Value) -> Result<(), String> {
    // The namespace selector is matched against a Namespace object itself.
    let namespace = match str_at(request, &["resource", "resource"]) {
        "namespaces" if str_at(request, &["resource", "group"]).is_empty() => str_at(request, &["name"]),
        _ => str_at(request, &["namespace"]),
    };
    if EXCLUDED.contains(&namespace) {
        return Err(format!("no webhook of wink's sees the namespace {namespace:?}"));
    }
    if !webhook.rules.iter().any(|r| rule_matches(r, request)) {
        return Err(format!(
            "the webhook's rules do not match {} of {}/{} {}",
            str_at(request, &["operation"]),
            str_at(request, &["resource", "group"]),
            str_at(request, &["resource", "version"]),
            str_at(request, &["resource", "resource"]),
        ));
    }
    Ok(())
}

/// Whether the review `request` is about an object in the plugin's scope
/// set by the operator (an update: either version, as the API server
/// matches an object selector); else why not. Namespace labels are the
/// scope's own (the shared Namespace informer's).
pub fn in_scope(scope: &wink_runtime::scope::Scope, request: &Value) -> Result<(), String> {
    let versions = ["object", "oldObject"].map(|k| request.get(k));
    in_scope_with(scope, request, versions)
}

/// [`in_scope`] of a parsed request: its fields, and its `object` and
/// `oldObject` (which parsing keeps apart from the fields) read once here.
pub fn request_in_scope(
    scope: &wink_runtime::scope::Scope,
    request: &wink_runtime::admission::AdmissionRequest,
) -> Result<(), String> {
    let (object, old) = (request.object_value(), request.old_object_value());
    in_scope_with(scope, request.fields(), [Some(&object), Some(&old)])
}

/// Whether the review of `fields` about the object's `versions` (`object`,
/// `oldObject`; a missing or null one is not there) is in scope.
fn in_scope_with(
    scope: &wink_runtime::scope::Scope,
    request: &Value,
    versions: [Option<&Value>; 2],
) -> Result<(), String> {
    let group = str_at(request, &["kind", "group"]);
    let version = str_at(request, &["kind", "version"]);
    let kind = str_at(request, &["kind", "kind"]);
    let api_version = match group {
        "" => version.to_string(),
        g => format!("{g}/{version}"),
    };
    let namespace = Some(str_at(request, &["namespace"])).filter(|n| !n.is_empty());
    let name = str_at(request, &["name"]);
    let admits = |obj: Option<&Value>| {
        let labels = obj
            .and_then(|o| o.pointer("/metadata/labels"))
            .and_then(Value::as_object);
        scope.admits_parts(&api_version, kind, namespace, |k| match k {
            wink_runtime::scope::NAME_LABEL if kind == "Namespace" && namespace.is_none() => Some(name),
            k => labels.and_then(|l| l.get(k)).and_then(Value::as_str),
        })
    };
    let versions: Vec<&Value> = versions.into_iter().flatten().filter(|v| v.is_object()).collect();
    let inside = match versions.is_empty() {
        true => admits(None),
        false => versions.into_iter().any(|v| admits(Some(v))),
    };
    match inside {
        true => Ok(()),
        false => Err(format!(
            "{kind} {} is outside the plugin's scope (set by the operator)",
            namespace.map_or(name.to_string(), |ns| format!("{ns}/{name}"))
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use wink_runtime::bindings::types::{FailurePolicy, Hook, MatchPolicy};

    fn webhook() -> Webhook {
        Webhook {
            hook: Hook::Validate,
            rules: vec![AdmissionRule {
                operations: vec![Operation::Create, Operation::Update],
                api_groups: vec!["".into(), "apps".into()],
                api_versions: vec!["v1".into()],
                resources: vec!["pods".into(), "deployments/scale".into()],
                scope: Scope::Namespaced,
            }],
            namespace_selector: None,
            object_selector: None,
            failure_policy: FailurePolicy::Fail,
            timeout_seconds: 10,
            match_policy: MatchPolicy::Equivalent,
        }
    }

    fn request(op: &str, group: &str, resource: &str, sub: Option<&str>, ns: &str) -> Value {
        json!({"operation": op, "namespace": ns, "name": "x",
               "resource": {"group": group, "version": "v1", "resource": resource}, "subResource": sub})
    }

    #[test]
    fn only_what_the_rules_match_outside_the_excluded_namespaces_is_sent() {
        let w = webhook();
        assert!(sent(&w, &request("CREATE", "", "pods", None, "team")).is_ok());
        assert!(
            sent(
                &w,
                &request("UPDATE", "apps", "deployments", Some("scale"), "team")
            )
            .is_ok()
        );
        for (r, why) in [
            (request("CREATE", "", "secrets", None, "team"), "rules"),
            (request("DELETE", "", "pods", None, "team"), "rules"),
            (request("CREATE", "apps", "deployments", None, "team"), "rules"),
            (request("CREATE", "", "pods", Some("status"), "team"), "rules"),
            (request("CREATE", "", "pods", None, ""), "rules"),
            (request("CREATE", "", "pods", None, "kube-system"), "namespace"),
            (
                request("CREATE", "", "pods", None, "kube-node-lease"),
                "namespace",
            ),
        ] {
            let err = sent(&w, &r).unwrap_err();
            assert!(err.contains(why), "{r}: {err}");
        }
    }

    #[test]
    fn a_review_outside_the_scope_is_said_so() {
        let m: wink_runtime::scope::Selection =
            serde_json::from_value(json!({"namespaces": ["team"], "kinds": ["Pod"]})).unwrap();
        let e: wink_runtime::scope::Selection =
            serde_json::from_value(json!({"objectSelector": {"matchLabels": {"skip": "y"}}})).unwrap();
        let scope = wink_runtime::scope::Scope::new(Some(&m), Some(&e)).unwrap();
        let review = |ns: &str, kind: &str, labels: Value, old: Value| {
            json!({"namespace": ns, "name": "x", "kind": {"group": "", "version": "v1", "kind": kind},
                   "object": {"metadata": {"labels": labels}}, "oldObject": old})
        };
        assert!(in_scope(&scope, &review("team", "Pod", json!({}), Value::Null)).is_ok());
        assert!(in_scope(&scope, &review("other", "Pod", json!({}), Value::Null)).is_err());
        assert!(in_scope(&scope, &review("team", "ConfigMap", json!({}), Value::Null)).is_err());
        let skipped = review("team", "Pod", json!({"skip": "y"}), Value::Null);
        assert!(
            in_scope(&scope, &skipped)
                .unwrap_err()
                .contains("team/x is outside")
        );
        // An update is sent when either version is in scope.
        let leaving = review("team", "Pod", json!({"skip": "y"}), json!({"metadata": {}}));
        assert!(in_scope(&scope, &leaving).is_ok());
        // A parsed request's objects are kept apart from its fields: read too.
        let parsed = |v: &Value| wink_runtime::admission::AdmissionRequest::from_value(v.clone());
        assert!(request_in_scope(&scope, &parsed(&skipped)).is_err());
        assert!(request_in_scope(&scope, &parsed(&review("team", "Pod", json!({}), Value::Null))).is_ok());
        assert!(request_in_scope(&scope, &parsed(&leaving)).is_ok());
    }

    #[test]
    fn resource_patterns_read_as_the_api_server_reads_them() {
        assert!(resource_matches("*", "pods", ""));
        assert!(!resource_matches("*", "pods", "status"));
        assert!(resource_matches("*/*", "pods", "status"));
        assert!(resource_matches("pods/*", "pods", "log"));
        assert!(resource_matches("*/status", "deployments", "status"));
        assert!(!resource_matches("pods", "pods", "status"));
    }
}
