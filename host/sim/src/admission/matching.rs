//! Which webhooks a request goes to, as kube-apiserver's predicates decide:
//! rules (operations, apiGroups, apiVersions, resources with their
//! `*`, `*/*`, `pods/*`, `*/status` forms, scope), the namespaceSelector (on
//! the labels of the request's namespace; for a Namespace, its own), the
//! objectSelector (on the object's or the old object's labels) and
//! matchPolicy Equivalent (core/v1 Events and events.k8s.io/v1 Events are
//! the one pair of equivalent resources the simulator serves).
//!
//! Owns: matching. Must not touch: calling webhooks or the store.

use serde_json::Value;

/// The attributes of one request that webhooks are matched against.
#[derive(Debug, Clone)]
pub struct Attrs {
    /// CREATE, UPDATE, DELETE.
    pub operation: &'static str,
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: String,
    pub kind: String,
    /// The request's namespace ("" for cluster-scoped; a Namespace's own name).
    pub namespace: String,
    pub name: String,
}

/// The resource a webhook is called for, when its rules only name an equivalent one.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    pub group: String,
    pub version: String,
    pub resource: String,
    pub kind: String,
}

fn strs(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn has(list: &[&str], want: &str) -> bool {
    list.iter().any(|x| *x == "*" || *x == want)
}

/// `resources` of a rule against `resource` and `sub` (`rules.Matcher.resource`).
fn resource_matches(list: &[&str], resource: &str, sub: &str) -> bool {
    let full = if sub.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}/{sub}")
    };
    list.iter().any(|r| match r.split_once('/') {
        _ if *r == full => true,
        None => *r == "*" && sub.is_empty(),
        Some(("*", "*")) => true,
        Some(("*", s)) => s == sub,
        Some((res, "*")) => res == resource && !sub.is_empty(),
        Some(_) => false,
    })
}

fn scope_matches(scope: &str, a: &Attrs) -> bool {
    let namespace_object = a.group.is_empty() && a.resource == "namespaces";
    match scope {
        "Namespaced" => !namespace_object && !a.namespace.is_empty(),
        "Cluster" => namespace_object || a.namespace.is_empty(),
        _ => true,
    }
}

fn rule_matches(rule: &Value, a: &Attrs, group: &str, version: &str, resource: &str) -> bool {
    has(&strs(rule.get("operations")), a.operation)
        && has(&strs(rule.get("apiGroups")), group)
        && has(&strs(rule.get("apiVersions")), version)
        && resource_matches(&strs(rule.get("resources")), resource, &a.subresource)
        && scope_matches(rule.get("scope").and_then(Value::as_str).unwrap_or("*"), a)
}

/// The resources the simulator serves with the same objects as `a`'s.
fn equivalents(a: &Attrs) -> Vec<Invocation> {
    match (a.group.as_str(), a.resource.as_str()) {
        ("", "events") => vec![Invocation {
            group: "events.k8s.io".into(),
            version: "v1".into(),
            resource: "events".into(),
            kind: "Event".into(),
        }],
        ("events.k8s.io", "events") => vec![Invocation {
            group: String::new(),
            version: "v1".into(),
            resource: "events".into(),
            kind: "Event".into(),
        }],
        _ => Vec::new(),
    }
}

/// Whether `hook`'s rules take this request: as it is (None), through an
/// equivalent resource (Some(Some)), or not at all (Some(None) is never
/// returned: the outer None is "no match").
pub fn rules(hook: &Value, a: &Attrs) -> Option<Option<Invocation>> {
    let rules = hook.get("rules").and_then(Value::as_array)?;
    if rules
        .iter()
        .any(|r| rule_matches(r, a, &a.group, &a.version, &a.resource))
    {
        return Some(None);
    }
    if hook.get("matchPolicy").and_then(Value::as_str) == Some("Exact") {
        return None;
    }
    equivalents(a)
        .into_iter()
        .find(|e| {
            rules
                .iter()
                .any(|r| rule_matches(r, a, &e.group, &e.version, &e.resource))
        })
        .map(Some)
}

/// A `metav1.LabelSelector` against `labels` (an empty selector matches everything).
pub fn selector(sel: Option<&Value>, labels: Option<&Value>) -> bool {
    let Some(sel) = sel.filter(|s| !s.is_null()) else {
        return true;
    };
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    let ml = sel.get("matchLabels").and_then(Value::as_object);
    if ml.into_iter().flatten().any(|(k, v)| get(k) != v.as_str()) {
        return false;
    }
    for e in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let values = strs(e.get("values"));
        let ok = match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" => get(key).is_some_and(|v| values.contains(&v)),
            "NotIn" => get(key).is_none_or(|v| !values.contains(&v)),
            "Exists" => get(key).is_some(),
            "DoesNotExist" => get(key).is_none(),
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    true
}

fn is_empty_selector(sel: Option<&Value>) -> bool {
    sel.is_none_or(|s| {
        s.is_null()
            || (s
                .get("matchLabels")
                .and_then(Value::as_object)
                .is_none_or(|m| m.is_empty())
                && s.get("matchExpressions")
                    .and_then(Value::as_array)
                    .is_none_or(|m| m.is_empty()))
    })
}

/// The namespaceSelector: `namespace_labels` are those of the request's
/// namespace (None when the request is cluster-scoped and not a Namespace).
pub fn namespace(hook: &Value, namespace_labels: Option<&Value>, cluster_scoped: bool) -> bool {
    let sel = hook.get("namespaceSelector");
    if cluster_scoped || is_empty_selector(sel) {
        return true;
    }
    selector(sel, namespace_labels)
}

/// The objectSelector: the new or the old object's labels match.
pub fn object(hook: &Value, object: Option<&Value>, old: Option<&Value>) -> bool {
    let sel = hook.get("objectSelector");
    if is_empty_selector(sel) {
        return true;
    }
    let labels = |o: Option<&Value>| o.and_then(|o| o.pointer("/metadata/labels")).cloned();
    [object, old]
        .into_iter()
        .flatten()
        .filter(|o| !o.is_null())
        .any(|o| selector(sel, labels(Some(o)).as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn attrs(op: &'static str, group: &str, resource: &str, sub: &str, ns: &str) -> Attrs {
        Attrs {
            operation: op,
            group: group.into(),
            version: "v1".into(),
            resource: resource.into(),
            subresource: sub.into(),
            kind: String::new(),
            namespace: ns.into(),
            name: "x".into(),
        }
    }

    #[test]
    fn rules_match_as_the_api_server_does() {
        let hook = |res: &str, scope: &str| {
            json!({"rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": [res], "scope": scope}]})
        };
        let pod = attrs("CREATE", "", "pods", "", "default");
        let status = attrs("CREATE", "", "pods", "status", "default");
        assert!(rules(&hook("pods", "*"), &pod).is_some());
        assert!(rules(&hook("pods", "*"), &status).is_none());
        assert!(rules(&hook("*", "*"), &pod).is_some());
        assert!(rules(&hook("*", "*"), &status).is_none());
        assert!(rules(&hook("*/*", "*"), &status).is_some());
        assert!(rules(&hook("pods/status", "*"), &status).is_some());
        assert!(rules(&hook("*/status", "*"), &status).is_some());
        assert!(rules(&hook("pods/*", "*"), &status).is_some());
        assert!(rules(&hook("pods/*", "*"), &pod).is_none());
        assert!(rules(&hook("pods", "Cluster"), &pod).is_none());
        assert!(rules(&hook("pods", "Namespaced"), &pod).is_some());
        assert!(rules(&hook("pods", "*"), &attrs("UPDATE", "", "pods", "", "default")).is_none());
        let ns = attrs("CREATE", "", "namespaces", "", "team");
        assert!(rules(&hook("namespaces", "Cluster"), &ns).is_some());
        assert!(rules(&hook("namespaces", "Namespaced"), &ns).is_none());
        let ev = json!({"matchPolicy": "Equivalent", "rules": [{"operations": ["*"], "apiGroups": ["events.k8s.io"],
            "apiVersions": ["v1"], "resources": ["events"]}]});
        let core_event = attrs("CREATE", "", "events", "", "default");
        assert_eq!(rules(&ev, &core_event).unwrap().unwrap().group, "events.k8s.io");
        let mut exact = ev.clone();
        exact["matchPolicy"] = json!("Exact");
        assert!(rules(&exact, &core_event).is_none());
    }

    #[test]
    fn selectors() {
        let hook = json!({"namespaceSelector": {"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]},
            "objectSelector": {"matchLabels": {"app": "web"}}});
        assert!(namespace(&hook, Some(&json!({"a": "b"})), false));
        assert!(!namespace(&hook, Some(&json!({"skip": "yes"})), false));
        assert!(namespace(&hook, Some(&json!({"skip": "yes"})), true));
        let web = json!({"metadata": {"labels": {"app": "web"}}});
        let db = json!({"metadata": {"labels": {"app": "db"}}});
        assert!(object(&hook, Some(&web), None));
        assert!(!object(&hook, Some(&db), None));
        assert!(object(&hook, Some(&db), Some(&web)));
        assert!(object(&hook, None, Some(&web)));
        assert!(object(&json!({"objectSelector": {}}), Some(&db), None));
    }
}
