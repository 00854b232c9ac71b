//! The `admission.k8s.io/v1` AdmissionReview on the wire: a request body
//! read into the review's `request` (or a clear reason why it is not one),
//! and a runtime [`Decision`] written as the review's `response` (the
//! request's uid echoed; a denial's Status; warnings; audit annotations;
//! a mutation's JSON Patch, base64). Owns only these translations: it
//! never asks a plugin and never serves HTTP.

use base64::Engine;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use wink_runtime::admission::{AdmissionRequest, Decision};

/// The only API version served (the webhook configurations name it alone
/// in `admissionReviewVersions`).
pub const API_VERSION: &str = "admission.k8s.io/v1";
pub const KIND: &str = "AdmissionReview";

/// A review's request: its uid and the request itself.
#[derive(Debug)]
pub struct Asked {
    pub uid: String,
    pub request: AdmissionRequest,
}

/// The deepest object a review may carry: what serde_json parses (its
/// recursion limit of 128 counts the outermost value too).
pub const MAX_OBJECT_DEPTH: usize = 127;

/// Read an AdmissionReview's body; the error says what is wrong with it,
/// in a sentence for the caller (answered with 400). The request's objects
/// stay text ([`AdmissionRequest`]).
pub fn parse(body: &[u8]) -> Result<Asked, String> {
    // The object (two levels down) must parse as a tree for a mutation's
    // patch: refused here rather than read as nothing and patched as such.
    if wink_input::depth::json_too_deep(body, MAX_OBJECT_DEPTH + 2) {
        return Err(format!(
            "the reviewed object is nested deeper than {MAX_OBJECT_DEPTH} levels (the JSON parser's limit)"
        ));
    }
    let review: &RawValue = serde_json::from_slice(body).map_err(|e| format!("the body is not JSON: {e}"))?;
    let not_object = || "the body is not a JSON object (an admission.k8s.io/v1 AdmissionReview)".to_string();
    if !review.get().starts_with('{') {
        return Err(not_object());
    }
    let members: HashMap<String, &RawValue> = serde_json::from_str(review.get()).map_err(|_| not_object())?;
    let member = |key: &str| -> String {
        members
            .get(key)
            .and_then(|raw| serde_json::from_str::<String>(raw.get()).ok())
            .unwrap_or_default()
    };
    let (api_version, kind) = (member("apiVersion"), member("kind"));
    if api_version != API_VERSION || kind != KIND {
        return Err(format!(
            "expected apiVersion {API_VERSION} and kind {KIND}, got {api_version:?} and {kind:?} \
             (admissionReviewVersions must be [v1])"
        ));
    }
    let Some(request) = members.get("request").filter(|r| r.get().starts_with('{')) else {
        return Err("the AdmissionReview has no request object".into());
    };
    let request = AdmissionRequest::parse(request.get())?;
    let fields = request.fields();
    let uid = fields.get("uid").and_then(Value::as_str).unwrap_or_default();
    if uid.is_empty() {
        return Err("the AdmissionReview's request has no uid".into());
    }
    let operation = fields
        .get("operation")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !matches!(operation, "CREATE" | "UPDATE" | "DELETE" | "CONNECT") {
        return Err(format!(
            "the request's operation {operation:?} is not CREATE, UPDATE, DELETE or CONNECT"
        ));
    }
    for key in ["kind", "resource"] {
        if !fields.get(key).is_some_and(Value::is_object) {
            return Err(format!("the request has no {key} object"));
        }
    }
    Ok(Asked {
        uid: uid.to_string(),
        request,
    })
}

/// Whether `request` is about a Lease (`coordination.k8s.io`): never asked
/// of a plugin, always allowed, so no webhook can stop leader elections or
/// node heartbeats.
pub fn is_lease(request: &Value) -> bool {
    let group = |key: &str| {
        request
            .get(key)
            .and_then(|r| r.get("group"))
            .and_then(Value::as_str)
    };
    group("resource") == Some("coordination.k8s.io")
        && request
            .get("resource")
            .and_then(|r| r.get("resource"))
            .and_then(Value::as_str)
            == Some("leases")
}

/// The AdmissionReview answering `uid` with `decision`.
pub fn response(uid: &str, decision: &Decision) -> Value {
    let mut response = Map::new();
    response.insert("uid".into(), json!(uid));
    response.insert("allowed".into(), json!(decision.allowed));
    if !decision.allowed {
        let code = if decision.code == 0 || decision.code == 200 {
            403
        } else {
            decision.code
        };
        let mut status = Map::new();
        status.insert("code".into(), json!(code));
        if !decision.reason.is_empty() {
            status.insert("reason".into(), json!(decision.reason));
        }
        if !decision.message.is_empty() {
            status.insert("message".into(), json!(decision.message));
        }
        response.insert("status".into(), Value::Object(status));
    }
    if !decision.warnings.is_empty() {
        response.insert("warnings".into(), json!(decision.warnings));
    }
    if !decision.audit_annotations.is_empty() {
        let annotations: Map<String, Value> = decision
            .audit_annotations
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        response.insert("auditAnnotations".into(), Value::Object(annotations));
    }
    let patch = decision
        .patch
        .as_ref()
        .filter(|p| decision.allowed && p.as_array().is_some_and(|ops| !ops.is_empty()));
    if let Some(patch) = patch {
        let text = serde_json::to_vec(patch).unwrap_or_default();
        response.insert("patchType".into(), json!("JSONPatch"));
        response.insert(
            "patch".into(),
            json!(base64::engine::general_purpose::STANDARD.encode(text)),
        );
    }
    json!({"apiVersion": API_VERSION, "kind": KIND, "response": Value::Object(response)})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn review(request: Value) -> Vec<u8> {
        json!({"apiVersion": API_VERSION, "kind": KIND, "request": request})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn an_object_nested_past_the_parsers_limit_is_refused_not_read_as_nothing() {
        let nested = |depth: usize| {
            let mut v = json!("leaf");
            for _ in 0..depth {
                v = json!({"a": v});
            }
            v
        };
        let mut deep = request();
        deep["object"] = nested(MAX_OBJECT_DEPTH + 1);
        let Err(err) = parse(&review(deep)) else {
            panic!("refused")
        };
        assert!(err.contains("nested deeper than 127 levels"), "{err}");
        let mut fine = request();
        fine["object"] = nested(MAX_OBJECT_DEPTH);
        let asked = parse(&review(fine)).expect("at the limit");
        assert_ne!(asked.request.object_value(), Value::Null, "its tree is read");
    }

    fn request() -> Value {
        json!({"uid": "u-1", "operation": "CREATE",
               "kind": {"group": "", "version": "v1", "kind": "Pod"},
               "resource": {"group": "", "version": "v1", "resource": "pods"},
               "object": {"metadata": {"name": "p"}}})
    }

    #[test]
    fn a_review_is_read_and_each_malformed_one_says_why() {
        let asked = parse(&review(request())).unwrap();
        assert_eq!(asked.uid, "u-1");
        let cases: [(&[u8], &str); 6] = [
            (b"{", "not JSON"),
            (b"[1]", "not a JSON object"),
            (
                br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview"}"#,
                "expected apiVersion",
            ),
            (
                br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#,
                "no request",
            ),
            (&review(json!({"operation": "CREATE"})), "no uid"),
            (
                &review(json!({"uid": "x", "operation": "PATCH"})),
                "operation \"PATCH\"",
            ),
        ];
        for (body, why) in cases {
            let err = parse(body).unwrap_err();
            assert!(err.contains(why), "{err}");
        }
    }

    #[test]
    fn a_denial_carries_its_status_and_an_allowance_its_patch() {
        let denied = Decision {
            allowed: false,
            code: 403,
            reason: "Forbidden".into(),
            message: "no team".into(),
            warnings: vec!["w".into()],
            audit_annotations: vec![("k".into(), "v".into())],
            ..Decision::allow()
        };
        let r = response("u-1", &denied);
        assert_eq!(r["apiVersion"], API_VERSION);
        assert_eq!(r["kind"], KIND);
        assert_eq!(r["response"]["uid"], "u-1");
        assert_eq!(r["response"]["allowed"], false);
        assert_eq!(
            r["response"]["status"],
            json!({"code": 403, "reason": "Forbidden", "message": "no team"})
        );
        assert_eq!(r["response"]["warnings"], json!(["w"]));
        assert_eq!(r["response"]["auditAnnotations"], json!({"k": "v"}));
        assert!(r["response"].get("patch").is_none());

        let ops = json!([{"op": "add", "path": "/metadata/labels/team", "value": "a"}]);
        let mutated = Decision {
            patch: Some(ops.clone()),
            ..Decision::allow()
        };
        let r = response("u-2", &mutated);
        assert_eq!(r["response"]["patchType"], "JSONPatch");
        let text = base64::engine::general_purpose::STANDARD
            .decode(r["response"]["patch"].as_str().unwrap())
            .unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&text).unwrap(), ops);
        assert!(r["response"].get("status").is_none());
        let empty = Decision {
            patch: Some(json!([])),
            ..Decision::allow()
        };
        assert!(
            response("u", &empty)["response"].get("patchType").is_none(),
            "no change, no patch"
        );
    }

    #[test]
    fn leases_are_recognised() {
        let mut r = request();
        assert!(!is_lease(&r));
        r["resource"] = json!({"group": "coordination.k8s.io", "version": "v1", "resource": "leases"});
        assert!(is_lease(&r));
    }
}
