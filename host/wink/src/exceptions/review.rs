//! Exceptions at the door: which WinkException excepts the object of an
//! admission review from a plugin's webhook. The object is the review's
//! `object` (its `oldObject` for a DELETE), with the kind, namespace and
//! name the review gives; an excepted review is let in without asking the
//! plugin, with a warning naming the exception.

use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;
use wink_runtime::admission::{AdmissionRequest, Decision};
use wink_runtime::exceptions::{Exception, ExceptionSet, Target};

fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .try_fold(v, |v, k| v.get(*k))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// What an exception reads of a review's object.
#[derive(Default, serde::Deserialize)]
struct Object {
    #[serde(default)]
    metadata: Metadata,
}

#[derive(Default, serde::Deserialize)]
struct Metadata {
    #[serde(default)]
    name: String,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

/// The exception that excepts the review `request` from `plugin`'s
/// `webhook` (`validate`, `mutate`) at `now`, if one does.
pub fn excepted(
    set: &ExceptionSet,
    plugin: &str,
    webhook: &str,
    request: &AdmissionRequest,
    now: SystemTime,
) -> Option<Arc<Exception>> {
    if set.is_empty() {
        return None;
    }
    let fields = request.fields();
    let group = str_at(fields, &["kind", "group"]);
    let version = str_at(fields, &["kind", "version"]);
    let api_version = match group {
        "" => version.to_string(),
        g => format!("{g}/{version}"),
    };
    // An object that does not parse has no labels: the exceptions that read
    // none may still except it.
    let object: Object = request
        .object()
        .or(request.old_object())
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default();
    // A CREATE may leave the name to generateName: the object's own then.
    let name = match str_at(fields, &["name"]) {
        "" => object.metadata.name.as_str(),
        n => n,
    };
    let labels = &object.metadata.labels;
    let target = Target {
        api_version: &api_version,
        kind: str_at(fields, &["kind", "kind"]),
        namespace: Some(str_at(fields, &["namespace"])).filter(|n| !n.is_empty()),
        name,
        labels: |k: &str| labels.get(k).map(String::as_str),
    };
    set.excepting(plugin, Some(webhook), &target, now)
}

/// The answer to a review `e` excepts: allowed, with the warning naming it.
pub fn allowed(e: &Exception) -> Decision {
    Decision {
        warnings: vec![e.message()],
        ..Decision::allow()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_review_of_an_excepted_object_is_allowed_with_a_warning() {
        let set = ExceptionSet::default();
        let e = Exception::from_object(&json!({
            "metadata": {"namespace": "ops", "name": "legacy"},
            "spec": {"plugins": [{"name": "pod-security"}],
                     "match": {"kinds": ["Pod"], "objectSelector": {"matchLabels": {"app": "legacy"}}},
                     "reason": "hostPath until Q3"}}))
        .unwrap();
        set.put(e);
        let review = |labels: Value, op: &str| {
            let obj = json!({"metadata": {"name": "p", "namespace": "team", "labels": labels}});
            let key = if op == "DELETE" { "oldObject" } else { "object" };
            let review = json!({"kind": {"group": "", "version": "v1", "kind": "Pod"}, "namespace": "team",
                   "name": "p", "operation": op, key: obj});
            AdmissionRequest::from_value(review)
        };
        let now = SystemTime::now();
        for op in ["CREATE", "DELETE"] {
            let hit = excepted(
                &set,
                "pod-security",
                "validate",
                &review(json!({"app": "legacy"}), op),
                now,
            )
            .expect(op);
            let d = allowed(&hit);
            assert!(d.allowed);
            assert_eq!(
                d.warnings,
                ["excepted by WinkException ops/legacy: hostPath until Q3"]
            );
        }
        assert!(
            excepted(
                &set,
                "pod-security",
                "validate",
                &review(json!({"app": "web"}), "CREATE"),
                now
            )
            .is_none()
        );
        assert!(
            excepted(
                &set,
                "other",
                "validate",
                &review(json!({"app": "legacy"}), "CREATE"),
                now
            )
            .is_none()
        );
    }
}
