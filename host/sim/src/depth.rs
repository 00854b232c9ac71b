//! Nesting-depth pre-scan of request bodies: JSON and YAML nested deeper
//! than [`MAX_DEPTH`] are refused with 400 before a parser sees them.
//!
//! Owns the limit for request bodies and the API server's wording; the scan
//! itself is `wink_input::depth`'s (shared with the daemon's files). Must
//! not touch: parsing proper (`http::parse_body`, `patch`), the body size
//! limit (`limits`).

use super::status::ApiError;
use wink_input::depth::{json_too_deep, yaml_too_deep};

/// The deepest nesting a request body may have (collections inside collections).
pub const MAX_DEPTH: usize = 1000;

/// Refuse a body nested deeper than [`MAX_DEPTH`], YAML or JSON by `content_type`.
pub fn check(content_type: &str, body: &[u8]) -> Result<(), ApiError> {
    if content_type.contains("protobuf") || content_type.contains("cbor") {
        return Ok(());
    }
    if content_type.contains("yaml") {
        if yaml_too_deep(body, MAX_DEPTH) {
            return Err(ApiError::bad_request(format!(
                "error converting YAML to JSON: yaml: exceeded max depth of {MAX_DEPTH}"
            )));
        }
    } else if json_too_deep(body, MAX_DEPTH) {
        return Err(ApiError::bad_request(format!(
            "json parse error: exceeded max depth of {MAX_DEPTH}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_nested_too_deep_get_the_api_servers_400() {
        let e = check("application/json", "[".repeat(MAX_DEPTH + 1).as_bytes()).unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(e.message, "json parse error: exceeded max depth of 1000");
        assert!(check("application/json", "[".repeat(MAX_DEPTH).as_bytes()).is_ok());
        let e = check("application/yaml", "{a: ".repeat(60_000).as_bytes()).unwrap_err();
        assert_eq!(
            e.message,
            "error converting YAML to JSON: yaml: exceeded max depth of 1000"
        );
        assert!(check("application/apply-patch+yaml", "[".repeat(1001).as_bytes()).is_err());
        assert!(check("application/vnd.kubernetes.protobuf", "[".repeat(1001).as_bytes()).is_ok());
    }
}
