//! The simulated API server's answers and query parameters, shared by the
//! request router ([`super::http`]) and the list handler ([`super::list`]):
//! JSON responses, Status errors with their Retry-After, and the selectors of
//! a query. Owns no routing and no state.

use super::fields::Fields;
use super::resources::ResourceDef;
use super::status::ApiError;
use axum::body::Body;
use axum::http::{Response, header};
use bytes::Bytes;
use serde_json::Value;
use std::collections::HashMap;
use wink_selector::LabelSelector;

/// An answer of the simulated server.
pub type Resp = Response<Body>;

/// A JSON answer with status `code`.
pub fn json_response(code: u16, body: impl Into<Bytes>) -> Resp {
    Response::builder()
        .status(code)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.into()))
        .expect("response")
}

/// `v` as a JSON answer with status `code`.
pub fn value_response(code: u16, v: &Value) -> Resp {
    json_response(code, v.to_string())
}

/// `e` as a Status answer (with Retry-After when it says when to retry).
pub fn error_response(e: &ApiError) -> Resp {
    let mut r = value_response(e.code, &e.to_json());
    // The real server turns details.retryAfterSeconds into Retry-After.
    if let Some(secs) = e
        .details
        .as_ref()
        .and_then(|d| d.get("retryAfterSeconds"))
        .and_then(Value::as_u64)
        && let Ok(v) = header::HeaderValue::from_str(&secs.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// Query parameter `k`, when given and not empty.
pub fn qparam<'a>(q: &'a HashMap<String, String>, k: &str) -> Option<&'a str> {
    q.get(k).map(String::as_str).filter(|s| !s.is_empty())
}

/// The label and field selectors of query `q` on `def`.
pub fn selectors(
    def: &ResourceDef,
    q: &HashMap<String, String>,
) -> Result<(LabelSelector, Fields), ApiError> {
    let l = LabelSelector::parse(qparam(q, "labelSelector").unwrap_or("")).map_err(ApiError::bad_request)?;
    let f = Fields::parse(def, qparam(q, "fieldSelector").unwrap_or("")).map_err(ApiError::bad_request)?;
    Ok((l, f))
}
