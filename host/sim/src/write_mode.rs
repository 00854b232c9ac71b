//! The query parameters that say how a write is to be made, read as the API
//! server reads them: `dryRun` (only `All` is a valid value) and
//! `fieldManager` (at most 128 characters; the operation is `Apply` for an
//! apply patch, else `Update`).
//!
//! Owns parsing them into a [`WriteMode`]; the store applies it.

use super::status::ApiError;
use super::store::WriteMode;
use axum::http::Method;
use std::collections::HashMap;

/// The write mode of a request.
pub fn of(q: &HashMap<String, String>, method: &Method, content_type: &str) -> Result<WriteMode, ApiError> {
    let dry_run = match q.get("dryRun").map(String::as_str) {
        None => false,
        Some("All") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "Invalid dryRun value: {other:?}; the only supported value is All"
            )));
        }
    };
    let field_manager = match q.get("fieldManager") {
        None => None,
        Some(m) if m.is_empty() || m.chars().count() > 128 => {
            return Err(ApiError::bad_request(format!(
                "fieldManager: Invalid value: {m:?}: must be between 1 and 128 characters"
            )));
        }
        Some(m) => {
            let apply = method == Method::PATCH && content_type.starts_with("application/apply-patch");
            Some((m.clone(), if apply { "Apply" } else { "Update" }))
        }
    };
    Ok(WriteMode {
        dry_run,
        field_manager,
        api_version: None,
    })
}

/// A DELETE may ask for its dry run in its `DeleteOptions` body instead.
pub fn with_delete_options(mut mode: WriteMode, body: &[u8]) -> WriteMode {
    let options: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    if options["dryRun"]
        .as_array()
        .is_some_and(|v| v.iter().any(|d| d == "All"))
    {
        mode.dry_run = true;
    }
    mode
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn dry_run_and_field_manager() {
        let m = of(
            &q(&[("dryRun", "All"), ("fieldManager", "wink-x")]),
            &Method::POST,
            "application/json",
        )
        .unwrap();
        assert!(m.dry_run);
        assert_eq!(m.field_manager, Some(("wink-x".into(), "Update")));
        let apply = of(
            &q(&[("fieldManager", "m")]),
            &Method::PATCH,
            "application/apply-patch+yaml",
        )
        .unwrap();
        assert_eq!(apply.field_manager, Some(("m".into(), "Apply")));
        assert!(of(&q(&[("dryRun", "Yes")]), &Method::POST, "").is_err());
        assert!(of(&q(&[("fieldManager", &"x".repeat(129))]), &Method::POST, "").is_err());
        assert!(!of(&q(&[]), &Method::POST, "").unwrap().dry_run);
    }
}
