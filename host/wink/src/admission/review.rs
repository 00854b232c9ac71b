//! The `admission.k8s.io/v1` AdmissionReview on the wire: a request body
//! read into the review's `request` (or a clear reason why it is not one),
//! and a runtime [`Decision`] written as the review's `response` (the
//! request's uid echoed; a denial's Status; warnings; audit annotations;
//! a mutation's JSON Patch, base64). Owns only these translations: it
//! never asks a plugin and never serves HTTP.

use base64::Engine;
use serde_json::Value;
use serde_json::value::RawValue;
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
    let (api_version, kind, request) = match envelope(body) {
        Some(read) => read,
        None => envelope_by_member(body)?,
    };
    if api_version != API_VERSION || kind != KIND {
        return Err(format!(
            "expected apiVersion {API_VERSION} and kind {KIND}, got {api_version:?} and {kind:?} \
             (admissionReviewVersions must be [v1])"
        ));
    }
    let Some(request) = request.filter(|r| r.get().starts_with('{')) else {
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

/// A review's `apiVersion`, `kind` (each empty unless a string) and
/// `request` text.
type Envelope<'a> = (String, String, Option<&'a RawValue>);

/// [`Envelope`] read in one pass, when `body` is a JSON object whose
/// members the pass accepts (no member twice, `apiVersion` and `kind`
/// strings or absent); `None` sends it to [`envelope_by_member`].
fn envelope(body: &[u8]) -> Option<Envelope<'_>> {
    #[derive(serde::Deserialize)]
    struct Review<'a> {
        #[serde(rename = "apiVersion", default)]
        api_version: String,
        #[serde(default)]
        kind: String,
        #[serde(borrow, default)]
        request: Option<&'a RawValue>,
    }
    let starts = body.iter().find(|b| !b.is_ascii_whitespace());
    if starts != Some(&b'{') {
        return None;
    }
    let review: Review = serde_json::from_slice(body).ok()?;
    Some((review.api_version, review.kind, review.request))
}

/// [`Envelope`] member by member (a member named twice: its last), or why
/// the body is not a JSON object.
fn envelope_by_member(body: &[u8]) -> Result<Envelope<'_>, String> {
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
    Ok((
        member("apiVersion"),
        member("kind"),
        members.get("request").copied(),
    ))
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

/// The AdmissionReview answering `uid` with `decision`, as the body sent.
pub fn response(uid: &str, decision: &Decision) -> Vec<u8> {
    use std::collections::BTreeMap;
    #[derive(serde::Serialize)]
    struct Review<'a> {
        #[serde(rename = "apiVersion")]
        api_version: &'static str,
        kind: &'static str,
        response: Response<'a>,
    }
    #[derive(serde::Serialize)]
    struct Response<'a> {
        uid: &'a str,
        allowed: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        status: Option<Status<'a>>,
        #[serde(skip_serializing_if = "<[String]>::is_empty")]
        warnings: &'a [String],
        /// A key given twice: its last value.
        #[serde(rename = "auditAnnotations", skip_serializing_if = "BTreeMap::is_empty")]
        audit_annotations: BTreeMap<&'a str, &'a str>,
        #[serde(rename = "patchType", skip_serializing_if = "Option::is_none")]
        patch_type: Option<&'static str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        patch: Option<String>,
    }
    #[derive(serde::Serialize)]
    struct Status<'a> {
        code: u16,
        #[serde(skip_serializing_if = "str::is_empty")]
        reason: &'a str,
        #[serde(skip_serializing_if = "str::is_empty")]
        message: &'a str,
    }
    let status = (!decision.allowed).then(|| Status {
        code: match decision.code {
            0 | 200 => 403,
            code => code,
        },
        reason: &decision.reason,
        message: &decision.message,
    });
    let patch = decision
        .patch
        .as_ref()
        .filter(|p| decision.allowed && p.as_array().is_some_and(|ops| !ops.is_empty()))
        .map(|patch| {
            let text = serde_json::to_vec(patch).unwrap_or_default();
            base64::engine::general_purpose::STANDARD.encode(text)
        });
    let review = Review {
        api_version: API_VERSION,
        kind: KIND,
        response: Response {
            uid,
            allowed: decision.allowed,
            status,
            warnings: &decision.warnings,
            audit_annotations: decision
                .audit_annotations
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect(),
            patch_type: patch.is_some().then_some("JSONPatch"),
            patch,
        },
    };
    serde_json::to_vec(&review).expect("an answer serializes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    /// The answer's body, read back.
    fn answered(uid: &str, decision: &Decision) -> Value {
        serde_json::from_slice(&response(uid, decision)).expect("JSON")
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
        let r = answered("u-1", &denied);
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
        let r = answered("u-2", &mutated);
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
            answered("u", &empty)["response"].get("patchType").is_none(),
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
