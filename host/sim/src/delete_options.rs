//! A delete's options: the DeleteOptions a request carries in its body
//! (JSON or protobuf) or query, read into the store's [`Preconditions`].
//!
//! Owns only that reading; the delete itself is the store's.

use super::response::qparam;
use super::status::ApiError;
use super::write::Preconditions;
use serde_json::{Value, json};
use std::collections::HashMap;

/// The DeleteOptions of a request: its body's (JSON or protobuf),
/// `propagationPolicy` (or the legacy `orphanDependents`) from the body or
/// the query.
pub fn preconditions(body: &[u8], ct: &str, q: &HashMap<String, String>) -> Result<Preconditions, ApiError> {
    let v: Value = match body.iter().all(u8::is_ascii_whitespace) {
        true => json!({}),
        false if ct.starts_with("application/vnd.kubernetes.protobuf") => super::proto::object(body)?,
        false => serde_json::from_slice(body).map_err(|e| ApiError::bad_request(e.to_string()))?,
    };
    let s = |k: &str| {
        v.pointer(&format!("/preconditions/{k}"))
            .and_then(Value::as_str)
            .map(String::from)
    };
    let orphan = v
        .get("orphanDependents")
        .and_then(Value::as_bool)
        .or(qparam(q, "orphanDependents").map(|o| o == "true"))
        == Some(true);
    let propagation = v
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .or(qparam(q, "propagationPolicy"))
        .map(String::from)
        .or(orphan.then(|| "Orphan".to_string()));
    if let Some(p) = propagation.as_deref()
        && !matches!(p, "Background" | "Foreground" | "Orphan")
    {
        return Err(ApiError::bad_request(format!(
            "propagationPolicy: Unsupported value: \"{p}\": supported values: \"Background\", \"Foreground\", \"Orphan\""
        )));
    }
    Ok(Preconditions {
        uid: s("uid"),
        resource_version: s("resourceVersion"),
        propagation,
    })
}
