//! The authorization.k8s.io/v1 review resources: `selfsubjectaccessreviews`
//! (what `kubectl auth can-i VERB RESOURCE` creates) and
//! `selfsubjectrulesreviews` (`kubectl auth can-i --list`). The simulator
//! has no authorization, so every access review is allowed and every rules
//! review lists all verbs on everything. As on a real server a review is
//! answered and never stored: create (POST to the cluster-scoped collection)
//! is the only verb, any other method on the collection gets 405
//! MethodNotAllowed, and any other path (an item, a namespace) 404.
//!
//! Owns: the review types' discovery entries, OpenAPI paths and answers.
//! Must not touch: the store (nothing is written) or routing (`http`
//! dispatches here).

use super::status::ApiError;
use axum::http::Method;
use serde_json::{Map, Value, json};

pub const GROUP: &str = "authorization.k8s.io";
pub const VERSION: &str = "v1";

/// One review type, served at `/apis/authorization.k8s.io/v1/{plural}`.
#[derive(Debug)]
pub struct Review {
    pub plural: &'static str,
    pub kind: &'static str,
}

pub const REVIEWS: [Review; 2] = [
    Review {
        plural: "selfsubjectaccessreviews",
        kind: "SelfSubjectAccessReview",
    },
    Review {
        plural: "selfsubjectrulesreviews",
        kind: "SelfSubjectRulesReview",
    },
];

/// The reason of every access review's answer.
pub const REASON: &str = "the simulated API server authorizes every request";

/// The review type served at this path's group, version and resource.
pub fn review(group: &str, version: &str, plural: &str) -> Option<&'static Review> {
    (group == GROUP && version == VERSION)
        .then(|| REVIEWS.iter().find(|r| r.plural == plural))
        .flatten()
}

/// The `APIResource` entries of authorization.k8s.io/v1.
pub fn discovery_resources() -> Vec<Value> {
    REVIEWS
        .iter()
        .map(|r| {
            json!({"name": r.plural, "singularName": r.kind.to_ascii_lowercase(),
                "namespaced": false, "kind": r.kind, "verbs": ["create"]})
        })
        .collect()
}

/// The OpenAPI v3 paths of authorization.k8s.io/v1 (create only).
pub fn openapi_paths(paths: &mut Map<String, Value>) {
    let param =
        |n: &str| json!({"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": true}});
    let params = ["dryRun", "fieldManager", "fieldValidation", "pretty"].map(param);
    for r in &REVIEWS {
        paths.insert(
            format!("/apis/{GROUP}/{VERSION}/{}", r.plural),
            json!({
                "parameters": params,
                "post": {
                    "operationId": format!("createAuthorizationV1{}", r.kind),
                    "x-kubernetes-action": "post",
                    "x-kubernetes-group-version-kind": {"group": GROUP, "version": VERSION, "kind": r.kind},
                    "responses": {"201": {"description": "Created", "content": {"application/json": {"schema": {"type": "object"}}}}}
                }
            }),
        );
    }
}

/// Answer a request to a review path: `collection` is false for an item,
/// subresource or namespaced path. `parse` reads the body (JSON, YAML or
/// protobuf, as for any other create).
pub fn serve(
    r: &Review,
    method: &Method,
    collection: bool,
    parse: impl FnOnce() -> Result<Value, ApiError>,
) -> Result<(u16, Value), ApiError> {
    if !collection {
        return Err(ApiError::no_route());
    }
    if method != Method::POST {
        return Err(ApiError::method_not_allowed());
    }
    let mut v = parse()?;
    let status = match r.kind {
        "SelfSubjectAccessReview" => {
            check_access_spec(v.get("spec"))?;
            json!({"allowed": true, "reason": REASON})
        }
        _ => {
            if v.pointer("/spec/namespace")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                return Err(ApiError::bad_request("no namespace on request"));
            }
            // The real answer carries only the status, not the spec asked about.
            v = json!({"metadata": {}, "spec": {}});
            json!({
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                "incomplete": false
            })
        }
    };
    v["kind"] = json!(r.kind);
    v["apiVersion"] = json!(format!("{GROUP}/{VERSION}"));
    if v.get("metadata").is_none_or(Value::is_null) {
        v["metadata"] = json!({});
    }
    v["status"] = status;
    Ok((201, v))
}

/// The real validation: exactly one of resourceAttributes and
/// nonResourceAttributes (422 Invalid otherwise).
fn check_access_spec(spec: Option<&Value>) -> Result<(), ApiError> {
    let attr = |k: &str| spec.and_then(|s| s.get(k)).filter(|a| !a.is_null());
    let (field, message) = match (attr("resourceAttributes"), attr("nonResourceAttributes")) {
        (Some(_), None) | (None, Some(_)) => return Ok(()),
        (None, None) => (
            "spec.resourceAttributes",
            "Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified"
                .to_string(),
        ),
        (Some(_), Some(n)) => {
            let s = |k: &str| n.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            (
                "spec.nonResourceAttributes",
                format!(
                    "Invalid value: authorization.NonResourceAttributes{{Path:{:?}, Verb:{:?}}}: cannot be \
                     specified in combination with resourceAttributes",
                    s("path"),
                    s("verb")
                ),
            )
        }
    };
    Err(ApiError {
        details: Some(
            json!({"name": "", "group": GROUP, "kind": "SelfSubjectAccessReview",
            "causes": [{"reason": "FieldValueInvalid", "message": message, "field": field}]}),
        ),
        ..ApiError::new(
            422,
            "Invalid",
            format!("SelfSubjectAccessReview.{GROUP} \"\" is invalid: {field}: {message}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_reviews_are_allowed_and_only_created() {
        let r = review(GROUP, VERSION, "selfsubjectaccessreviews").unwrap();
        assert!(review(GROUP, "v1beta1", "selfsubjectaccessreviews").is_none());
        let body = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "metadata": {"creationTimestamp": null},
            "spec": {"resourceAttributes": {"verb": "create", "resource": "pods", "namespace": "default"}}});
        let (code, v) = serve(r, &Method::POST, true, || Ok(body.clone())).unwrap();
        assert_eq!(code, 201);
        assert_eq!(v["status"], json!({"allowed": true, "reason": REASON}));
        assert_eq!(v["spec"], body["spec"]);
        let e = serve(r, &Method::GET, true, || unreachable!()).unwrap_err();
        assert_eq!((e.code, e.reason), (405, "MethodNotAllowed"));
        assert_eq!(
            serve(r, &Method::GET, false, || unreachable!()).unwrap_err().code,
            404
        );
        let e = serve(r, &Method::POST, true, || Ok(json!({"spec": {}}))).unwrap_err();
        assert_eq!(e.code, 422);
        assert!(
            e.message
                .contains("exactly one of nonResourceAttributes or resourceAttributes")
        );
    }

    #[test]
    fn rules_reviews_list_everything() {
        let r = review(GROUP, VERSION, "selfsubjectrulesreviews").unwrap();
        let (_, v) = serve(r, &Method::POST, true, || {
            Ok(json!({"spec": {"namespace": "default"}}))
        })
        .unwrap();
        assert_eq!(v["status"]["resourceRules"][0]["verbs"], json!(["*"]));
        let e = serve(r, &Method::POST, true, || Ok(json!({"spec": {}}))).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (400, "no namespace on request"));
    }
}
