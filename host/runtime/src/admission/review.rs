//! An `admission.k8s.io/v1` AdmissionRequest (JSON) as the guest's WIT
//! request, and the guest's answer as a [`Decision`]: the verdict, and for
//! a mutation the JSON Patch from the request's object to the changed one.
//! Owns only these translations; it never calls a guest.

use super::{AdmissionRequest, Decision};
use crate::bindings::admission::{GroupVersionKind, GroupVersionResource, Request, UserInfo, Verdict};
use crate::bindings::types::Operation;
use crate::capabilities::ObjectHandle;
use crate::instance::Asked;
use serde_json::Value;
use std::sync::Arc;
use wasmtime::component::Resource;
use wink_informer::ObjRef;
use wink_informer::object::{CachePolicy, CachedObject, RawObject, TypeName};

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn gvk(v: &Value) -> GroupVersionKind<'_> {
    GroupVersionKind {
        group: text(v, "group"),
        version: text(v, "version"),
        kind: text(v, "kind"),
    }
}

fn gvr(v: &Value) -> GroupVersionResource<'_> {
    GroupVersionResource {
        group: text(v, "group"),
        version: text(v, "version"),
        resource: text(v, "resource"),
    }
}

fn operation(op: &str) -> Result<Operation, String> {
    Ok(match op {
        "CREATE" => Operation::Create,
        "UPDATE" => Operation::Update,
        "DELETE" => Operation::Delete,
        "CONNECT" => Operation::Connect,
        "" => return Err("the request names no operation: CREATE, UPDATE, DELETE or CONNECT".into()),
        other => {
            return Err(format!(
                "unknown operation {other:?}: CREATE, UPDATE, DELETE or CONNECT"
            ));
        }
    })
}

/// An object of the request as a cache object, typed by the request's
/// kind, with what the cache strips from a watched object stripped. Held
/// plain: it is read once, by this call, so compressing it would only cost
/// time.
fn object(text_of: Option<&str>, request: &Value) -> Result<Option<ObjRef>, String> {
    let Some(object) = text_of else {
        return Ok(None);
    };
    let null = Value::Null;
    let kind = request.get("kind").unwrap_or(&null);
    let (group, version) = (text(kind, "group"), text(kind, "version"));
    let type_name = Arc::new(TypeName {
        api_version: if group.is_empty() {
            version.to_string()
        } else {
            format!("{group}/{version}")
        },
        kind: text(kind, "kind").to_string(),
    });
    // The object's text as the cache holds a watched one (no tree in
    // between), typed as the request's `kind`.
    let raw: RawObject =
        serde_json::from_str(object).map_err(|e| format!("the request's object is not an object: {e}"))?;
    let policy = CachePolicy {
        compress: false,
        ..CachePolicy::default()
    };
    Ok(Some(CachedObject::from_raw(raw, &type_name, policy)))
}

/// The guest's request from an AdmissionRequest, or why it is malformed.
pub fn asked(request: &AdmissionRequest) -> Result<Asked<'_>, String> {
    let fields = request.fields();
    let operation = operation(text(fields, "operation"))?;
    let (object, old_object) = request.typed(|| {
        Ok((
            object(request.object(), fields)?,
            object(request.old_object(), fields)?,
        ))
    })?;
    Ok(Asked {
        operation,
        options: fields.get("options").map_or_else(String::new, Value::to_string),
        object,
        old_object,
        request: fields,
    })
}

/// `userInfo.groups` of a request.
pub fn groups(request: &Value) -> Vec<&str> {
    let user = request.get("userInfo");
    user.and_then(|u| u.get("groups"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// `userInfo.extra` of a request, as (key, values).
pub fn extra(request: &Value) -> Vec<(&str, Vec<&str>)> {
    let extra = request
        .get("userInfo")
        .and_then(|u| u.get("extra"))
        .and_then(Value::as_object);
    extra
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            let values = v.as_array().into_iter().flatten().filter_map(Value::as_str);
            (k.as_str(), values.collect())
        })
        .collect()
}

/// The WIT request of `asked`, borrowing its text; `groups` and `extra`
/// are [`groups`] and [`extra`] of its request.
pub fn request<'a>(
    asked: &'a Asked<'a>,
    groups: &'a [&'a str],
    extra: &'a [(&'a str, &'a [&'a str])],
    object: Option<Resource<ObjectHandle>>,
    old_object: Option<Resource<ObjectHandle>>,
) -> Request<'a> {
    let r = asked.request;
    let opt_text = |key: &str| Some(text(r, key)).filter(|s| !s.is_empty());
    let user = r.get("userInfo").unwrap_or(&Value::Null);
    Request {
        uid: text(r, "uid"),
        kind: gvk(r.get("kind").unwrap_or(&Value::Null)),
        resource: gvr(r.get("resource").unwrap_or(&Value::Null)),
        sub_resource: opt_text("subResource"),
        request_kind: r.get("requestKind").map(gvk),
        request_resource: r.get("requestResource").map(gvr),
        name: opt_text("name"),
        namespace: opt_text("namespace"),
        operation: asked.operation,
        user_info: UserInfo {
            username: text(user, "username"),
            uid: text(user, "uid"),
            groups,
            extra,
        },
        object,
        old_object,
        dry_run: r.get("dryRun").and_then(Value::as_bool).unwrap_or(false),
        options: asked.options.as_str(),
    }
}

/// The most warnings (and audit annotations) an answer carries; the API
/// server itself keeps a few kilobytes of warnings per request.
pub const MAX_WARNINGS: usize = 32;

/// The largest mutated object a guest may answer: the API server's own
/// limit on a stored object (3 MiB).
pub const MAX_OBJECT: usize = 3 << 20;

/// The longest message, reason, warning or annotation, in bytes.
pub const MAX_TEXT: usize = 4096;

/// `text` cut to at most `max` bytes, at a character boundary.
fn clip(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// The fields a mutation may not change: the API server refuses a patch of
/// the object's identity, and keeps `status` from a write of the main
/// resource (it would silently drop the change).
const IMMUTABLE: [&str; 4] = [
    "/metadata/name",
    "/metadata/namespace",
    "/metadata/uid",
    "/status",
];

/// Refuse a mutation that changes one of the [`IMMUTABLE`] fields.
fn identity_kept(before: &Value, after: &Value) -> Result<(), String> {
    for path in IMMUTABLE {
        if before.pointer(path) != after.pointer(path) {
            return Err(format!(
                "the mutation changes {}, which a webhook may not change: refused",
                path.trim_start_matches('/').replace('/', ".")
            ));
        }
    }
    Ok(())
}

/// The guest's verdict as a decision (its texts and lists capped, a denial
/// code outside 400–599 replaced by 403); `changed` (a mutation's whole object)
/// becomes the JSON Patch from the request's object.
pub fn decision(
    verdict: Verdict,
    changed: Option<String>,
    request: &AdmissionRequest,
) -> Result<Decision, String> {
    let patch = match changed {
        None => None,
        Some(text) if text.len() > MAX_OBJECT => {
            return Err(format!(
                "the mutated object is {} bytes; the API server stores at most {MAX_OBJECT}",
                text.len()
            ));
        }
        Some(text) => {
            let after: Value =
                serde_json::from_str(&text).map_err(|e| format!("the mutated object is not JSON: {e}"))?;
            let before = request.object_value();
            identity_kept(&before, &after)?;
            let patch = json_patch::diff(&before, &after);
            (!patch.0.is_empty()).then(|| serde_json::to_value(patch).unwrap_or(Value::Null))
        }
    };
    let mut warnings = verdict.warnings;
    warnings.truncate(MAX_WARNINGS);
    let mut annotations = verdict.audit_annotations;
    annotations.truncate(MAX_WARNINGS);
    let capped = |t: String| clip(t, MAX_TEXT);
    let code = verdict.code.filter(|c| (400..600).contains(c));
    Ok(Decision {
        allowed: verdict.allowed,
        code: code.unwrap_or(if verdict.allowed { 200 } else { 403 }),
        reason: capped(verdict.reason.unwrap_or_default()),
        message: capped(verdict.message),
        warnings: warnings.into_iter().map(capped).collect(),
        audit_annotations: annotations
            .into_iter()
            .map(|(k, v)| (capped(k), capped(v)))
            .collect(),
        patch: patch.filter(|_| verdict.allowed),
        fallback: None,
        unrecorded: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn verdict(allowed: bool) -> Verdict {
        Verdict {
            allowed,
            code: None,
            reason: None,
            message: "m".into(),
            warnings: vec!["w".into()],
            audit_annotations: vec![],
        }
    }

    #[test]
    fn a_mutation_becomes_the_json_patch_from_the_request_object() {
        let tree = json!({"object": {"metadata": {"name": "a", "labels": {"x": "1"}}}});
        let request = AdmissionRequest::from_value(tree.clone());
        let changed = json!({"metadata": {"name": "a", "labels": {"x": "1", "team": "t"}}}).to_string();
        let d = decision(verdict(true), Some(changed), &request).unwrap();
        assert_eq!(
            d.patch.unwrap(),
            json!([{"op": "add", "path": "/metadata/labels/team", "value": "t"}])
        );
        let same = tree["object"].to_string();
        assert!(
            decision(verdict(true), Some(same), &request)
                .unwrap()
                .patch
                .is_none()
        );
        let denied = decision(verdict(false), None, &request).unwrap();
        assert_eq!((denied.allowed, denied.code), (false, 403));
        assert!(decision(verdict(true), Some("{".into()), &request).is_err());
        let huge = format!("{{\"a\":\"{}\"}}", "x".repeat(MAX_OBJECT));
        let e = decision(verdict(true), Some(huge), &request).unwrap_err();
        assert!(e.contains("stores at most"), "{e}");
    }

    #[test]
    fn a_mutation_of_the_objects_identity_or_status_is_refused() {
        let object =
            json!({"metadata": {"name": "a", "namespace": "n", "uid": "u"}, "status": {"phase": "x"}});
        let request = AdmissionRequest::from_value(json!({"object": object}));
        for (path, value) in [
            ("/metadata/name", json!("b")),
            ("/metadata/namespace", json!("other")),
            ("/metadata/uid", json!("forged")),
            ("/status/phase", json!("y")),
        ] {
            let mut changed = object.clone();
            *changed.pointer_mut(path).unwrap() = value;
            let e = decision(verdict(true), Some(changed.to_string()), &request).unwrap_err();
            assert!(e.contains("which a webhook may not change"), "{path}: {e}");
        }
        let mut removed = object.clone();
        removed["metadata"].as_object_mut().unwrap().remove("uid");
        assert!(decision(verdict(true), Some(removed.to_string()), &request).is_err());
        let mut labelled = object.clone();
        labelled["metadata"]["labels"] = json!({"k": "v"});
        assert!(decision(verdict(true), Some(labelled.to_string()), &request).is_ok());
    }

    #[test]
    fn what_a_guest_answers_is_capped() {
        let mut v = verdict(false);
        v.code = Some(200);
        v.message = "é".repeat(MAX_TEXT);
        v.warnings = vec!["w".into(); 1000];
        v.audit_annotations = vec![("k".into(), "x".repeat(10_000)); 100];
        let d = decision(v, None, &AdmissionRequest::from_value(json!({}))).unwrap();
        assert_eq!(d.code, 403, "a denial is never a success code");
        assert!(d.message.len() <= MAX_TEXT && d.message.chars().all(|c| c == 'é'));
        assert_eq!(d.warnings.len(), MAX_WARNINGS);
        assert_eq!(d.audit_annotations.len(), MAX_WARNINGS);
        assert_eq!(d.audit_annotations[0].1.len(), MAX_TEXT);
    }

    #[test]
    fn a_request_is_read_with_its_objects() {
        let review = json!({
            "uid": "u1", "operation": "CREATE", "namespace": "default", "name": "web",
            "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
            "resource": {"group": "apps", "version": "v1", "resource": "deployments"},
            "userInfo": {"username": "alice", "groups": ["dev"], "extra": {"k": ["v"]}},
            "object": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"}},
            "dryRun": true,
        });
        let review = AdmissionRequest::from_value(review);
        let asked = asked(&review).unwrap();
        assert_eq!(asked.object.as_ref().unwrap().key(), "default/web");
        assert!(asked.old_object.is_none());
        let groups = groups(asked.request);
        let extra_values = extra(asked.request);
        let extra: Vec<(&str, &[&str])> = extra_values.iter().map(|(k, v)| (*k, v.as_slice())).collect();
        let r = request(&asked, &groups, &extra, None, None);
        assert_eq!((r.uid, r.dry_run, r.user_info.username), ("u1", true, "alice"));
        assert_eq!(r.user_info.groups, ["dev"]);
        assert_eq!(r.user_info.extra, [("k", &["v"][..])]);
        assert!(asked_err("BOGUS"));
    }

    fn asked_err(op: &str) -> bool {
        asked(&AdmissionRequest::from_value(json!({"operation": op}))).is_err()
    }
}
