//! The `admission.k8s.io/v1` AdmissionReview: the request the API server
//! sends (uid, kind, resource, subResource, requestKind/Resource/SubResource,
//! name, namespace, operation, userInfo, object, oldObject, dryRun, options)
//! and what its answer means (`VerifyAdmissionResponse`): a missing answer,
//! a wrong uid or kind, a patch without patchType are failures to call; a
//! denial becomes the Status `ToStatusErr` builds; warnings and a JSONPatch
//! are handed back.
//!
//! Owns: the wire form of reviews and the errors the dispatcher answers with.
//! Must not touch: transport (`call`), matching (`matching`).

use super::super::status::ApiError;
use super::matching::{Attrs, Invocation};
use base64::Engine;
use serde_json::{Value, json};

/// The user every client request is made as: the simulator authenticates nobody,
/// so requests are anonymous, as on a server allowing anonymous requests.
pub fn anonymous() -> Value {
    json!({"username": "system:anonymous", "groups": ["system:unauthenticated"]})
}

/// The user a controller's writes are made as: its service account
/// `NAMESPACE/NAME` (kube-controller-manager's per-controller credentials).
pub fn service_account(namespace: &str, name: &str) -> Value {
    json!({"username": format!("system:serviceaccount:{namespace}:{name}"),
        "groups": ["system:serviceaccounts", format!("system:serviceaccounts:{namespace}"), "system:authenticated"]})
}

/// What one webhook is asked about.
pub struct Question<'a> {
    pub attrs: &'a Attrs,
    pub invocation: Option<&'a Invocation>,
    pub object: Option<&'a Value>,
    pub old: Option<&'a Value>,
    pub dry_run: bool,
    pub options: &'a Value,
    pub user: &'a Value,
}

/// The AdmissionReview sent with `uid`.
pub fn request(uid: &str, q: &Question) -> Value {
    let a = q.attrs;
    let request_kind = json!({"group": a.group, "version": a.version, "kind": a.kind});
    let request_resource = json!({"group": a.group, "version": a.version, "resource": a.resource});
    let (kind, resource) = match q.invocation {
        Some(i) => (
            json!({"group": i.group, "version": i.version, "kind": i.kind}),
            json!({"group": i.group, "version": i.version, "resource": i.resource}),
        ),
        None => (request_kind.clone(), request_resource.clone()),
    };
    let mut r = json!({
        "uid": uid,
        "kind": kind,
        "resource": resource,
        "requestKind": request_kind,
        "requestResource": request_resource,
        "operation": a.operation,
        "userInfo": q.user,
        "object": q.object.cloned().unwrap_or(Value::Null),
        "oldObject": q.old.cloned().unwrap_or(Value::Null),
        "dryRun": q.dry_run,
        "options": q.options,
    });
    if !a.subresource.is_empty() {
        r["subResource"] = json!(a.subresource);
        r["requestSubResource"] = json!(a.subresource);
    }
    if !a.name.is_empty() {
        r["name"] = json!(a.name);
    }
    if !a.namespace.is_empty() {
        r["namespace"] = json!(a.namespace);
    }
    json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": r})
}

/// A webhook's verified answer.
#[derive(Debug, Default)]
pub struct Answer {
    pub allowed: bool,
    /// The decoded JSONPatch (mutating webhooks only).
    pub patch: Option<Value>,
    pub result: Option<Value>,
    pub warnings: Vec<String>,
}

/// `VerifyAdmissionResponse`: the answer, or why it is not one.
pub fn verify(uid: &str, mutating: bool, review: &Value) -> Result<Answer, String> {
    let Some(r) = review.get("response").filter(|r| r.is_object()) else {
        return Err("webhook response was absent".into());
    };
    let got = r.get("uid").and_then(Value::as_str).unwrap_or("");
    if got != uid {
        return Err(format!("expected response.uid={uid:?}, got {got:?}"));
    }
    let (av, kind) = (
        review.get("apiVersion").and_then(Value::as_str).unwrap_or(""),
        review.get("kind").and_then(Value::as_str).unwrap_or(""),
    );
    if av != "admission.k8s.io/v1" || kind != "AdmissionReview" {
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {av}, Kind={kind}"
        ));
    }
    let mut answer = Answer {
        allowed: r.get("allowed").and_then(Value::as_bool).unwrap_or(false),
        result: r.get("status").filter(|s| !s.is_null()).cloned(),
        warnings: r
            .get("warnings")
            .and_then(Value::as_array)
            .map(|w| w.iter().filter_map(Value::as_str).map(String::from).collect())
            .unwrap_or_default(),
        patch: None,
    };
    if !mutating {
        return Ok(answer);
    }
    let patch = r.get("patch").and_then(Value::as_str).filter(|p| !p.is_empty());
    let patch_type = r.get("patchType").filter(|p| !p.is_null());
    match (patch, patch_type) {
        (Some(_), None) => return Err("webhook returned response.patch but not response.patchType".into()),
        (None, Some(_)) => return Err("webhook returned response.patchType but not response.patch".into()),
        (Some(p), Some(t)) => {
            let t = t.as_str().unwrap_or("");
            if t != "JSONPatch" {
                return Err(format!("webhook returned invalid response.patchType of {t:?}"));
            }
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(p)
                .map_err(|e| format!("illegal base64 data: {e}"))?;
            let v: Value = serde_json::from_slice(&bytes)
                .map_err(|e| format!("received undecodable patch in webhook response: {e}"))?;
            answer.patch = Some(v);
        }
        (None, None) => {}
    }
    Ok(answer)
}

/// A reason as the `'static` string [`ApiError`] holds.
fn reason(s: &str) -> &'static str {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};
    static REASONS: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut set = REASONS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(r) = set.get(s) {
        return r;
    }
    if set.len() >= 1024 {
        return "";
    }
    let r: &'static str = Box::leak(s.to_string().into_boxed_str());
    set.insert(r);
    r
}

/// `ToStatusErr`: the Status of a webhook's denial (code 400 unless the
/// webhook gave 400 or more; its reason, details and message, prefixed).
pub fn denial(webhook: &str, result: Option<&Value>) -> ApiError {
    let empty = json!({});
    let r = result.unwrap_or(&empty);
    let code = r.get("code").and_then(Value::as_u64).unwrap_or(0);
    let code = if code < 400 { 400 } else { code.min(599) as u16 };
    let msg = r.get("message").and_then(Value::as_str).unwrap_or("");
    let why = r.get("reason").and_then(Value::as_str).unwrap_or("");
    let denied = format!("admission webhook {webhook:?} denied the request");
    let message = match (msg.is_empty(), why.is_empty()) {
        (false, _) => format!("{denied}: {msg}"),
        (true, false) => format!("{denied}: {why}"),
        (true, true) => format!("{denied} without explanation"),
    };
    ApiError {
        code,
        reason: reason(why),
        message,
        details: r.get("details").filter(|d| !d.is_null()).cloned(),
    }
}

/// `apierrors.NewInternalError(err)`.
pub fn internal(err: &str) -> ApiError {
    ApiError {
        details: Some(json!({"causes": [{"message": err}]})),
        ..ApiError::new(500, "InternalError", format!("Internal error occurred: {err}"))
    }
}

/// `ErrCallingWebhook` with failurePolicy Fail, as the dispatchers return it.
pub fn calling(webhook: &str, why: &str) -> ApiError {
    internal(&format!("failed calling webhook {webhook:?}: {why}"))
}

/// `NewDryRunUnsupportedErr`.
pub fn dry_run_unsupported(webhook: &str) -> ApiError {
    ApiError::bad_request(format!("admission webhook {webhook:?} does not support dry run"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_as_to_status_err_builds_them() {
        let e = denial(
            "deny.example.com",
            Some(&json!({"message": "no", "code": 403, "reason": "Forbidden"})),
        );
        assert_eq!(e.code, 403);
        assert_eq!(e.reason, "Forbidden");
        assert_eq!(
            e.message,
            "admission webhook \"deny.example.com\" denied the request: no"
        );
        let e = denial("d.e.f", None);
        assert_eq!((e.code, e.reason), (400, ""));
        assert_eq!(
            e.message,
            "admission webhook \"d.e.f\" denied the request without explanation"
        );
        assert_eq!(
            denial("d.e.f", Some(&json!({"code": 200, "reason": "Nope"}))).message,
            "admission webhook \"d.e.f\" denied the request: Nope"
        );
    }

    #[test]
    fn answers_are_verified() {
        let ok =
            |r: Value| json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": r});
        assert_eq!(
            verify("u", false, &json!({})).unwrap_err(),
            "webhook response was absent"
        );
        assert_eq!(
            verify("u", false, &ok(json!({"uid": "v", "allowed": true}))).unwrap_err(),
            "expected response.uid=\"u\", got \"v\""
        );
        assert!(
            verify("u", false, &ok(json!({"uid": "u", "allowed": true})))
                .unwrap()
                .allowed
        );
        assert_eq!(
            verify(
                "u",
                true,
                &ok(json!({"uid": "u", "allowed": true, "patch": "W10="}))
            )
            .unwrap_err(),
            "webhook returned response.patch but not response.patchType"
        );
        let a = verify(
            "u",
            true,
            &ok(
                json!({"uid": "u", "allowed": true, "patch": "W10=", "patchType": "JSONPatch",
            "warnings": ["w"]}),
            ),
        )
        .unwrap();
        assert_eq!(a.patch, Some(json!([])));
        assert_eq!(a.warnings, vec!["w".to_string()]);
    }
}
