//! The query parameters that say how a write is to be made, read as the API
//! server reads them: `dryRun` (only `All` is a valid value, else 422 on
//! the request's options) and `fieldManager` (at most 128 characters;
//! required of an apply patch, whose operation is `Apply`, else `Update`;
//! without one a write's manager is its User-Agent's first path segment).
//!
//! Owns parsing them into a [`WriteMode`]; the store applies it.

use super::status::ApiError;
use super::store::WriteMode;
use axum::http::Method;
use std::collections::HashMap;

/// The options a write's query parameters are read into (the kind a
/// refusal names).
fn options(method: &Method) -> Option<&'static str> {
    match *method {
        Method::POST => Some("CreateOptions"),
        Method::PUT => Some("UpdateOptions"),
        Method::PATCH => Some("PatchOptions"),
        Method::DELETE => Some("DeleteOptions"),
        _ => None,
    }
}

/// The write mode of a request: every write has a manager, its
/// `fieldManager` or else the User-Agent's first path segment; an apply
/// patch must name its `fieldManager`.
pub fn of(
    q: &HashMap<String, String>,
    method: &Method,
    content_type: &str,
    user_agent: &str,
) -> Result<WriteMode, ApiError> {
    let Some(options) = options(method) else {
        return Ok(WriteMode::default());
    };
    let dry_run = match q.get("dryRun").map(String::as_str) {
        None | Some("") => false,
        Some("All") => true,
        Some(other) => {
            return Err(ApiError::invalid_options(
                options,
                &format!("dryRun: Unsupported value: [{other:?}]: supported values: \"All\""),
            ));
        }
    };
    let apply = *method == Method::PATCH && content_type.starts_with("application/apply-patch");
    let operation = if apply { "Apply" } else { "Update" };
    let named = q.get("fieldManager").filter(|m| !m.is_empty());
    let manager = match named {
        Some(m) if m.chars().count() > 128 => {
            return Err(ApiError::invalid_options(
                options,
                "fieldManager: Too long: may not be more than 128 bytes",
            ));
        }
        Some(m) => m.clone(),
        None if apply => {
            return Err(ApiError::invalid_options(
                options,
                "fieldManager: Required value: is required for apply patch",
            ));
        }
        None => super::managed::manager_of_user_agent(user_agent),
    };
    // A deletion (even one that only marks the object) records no manager.
    let deleting = *method == Method::DELETE;
    Ok(WriteMode {
        dry_run,
        field_manager: (!deleting).then_some((manager, operation)),
        manager_named: named.is_some(),
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
    use serde_json::json;

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
            "kubectl/v1.36",
        )
        .unwrap();
        assert!(m.dry_run);
        assert_eq!(m.field_manager, Some(("wink-x".into(), "Update")));
        let apply = of(
            &q(&[("fieldManager", "m")]),
            &Method::PATCH,
            "application/apply-patch+yaml",
            "",
        )
        .unwrap();
        assert_eq!(apply.field_manager, Some(("m".into(), "Apply")));
        let e = of(&q(&[("dryRun", "Yes")]), &Method::POST, "", "").unwrap_err();
        assert_eq!((e.code, e.reason), (422, "Invalid"));
        let d = e.details.unwrap();
        assert_eq!(
            (&d["kind"], &d["group"]),
            (&json!("CreateOptions"), &json!("meta.k8s.io"))
        );
        assert_eq!(d["causes"][0]["field"], "dryRun");
        assert_eq!(d["causes"][0]["reason"], "FieldValueNotSupported");
        let e = of(&q(&[]), &Method::PATCH, "application/apply-patch+yaml", "").unwrap_err();
        let d = e.details.unwrap();
        assert_eq!(d["kind"], "PatchOptions");
        assert_eq!(d["causes"][0]["field"], "fieldManager");
        assert_eq!(d["causes"][0]["reason"], "FieldValueRequired");
        assert!(of(&q(&[("fieldManager", &"x".repeat(129))]), &Method::POST, "", "").is_err());
        let plain = of(&q(&[]), &Method::POST, "", "kubectl-create/v1.36.0 (linux/amd64)").unwrap();
        assert!(!plain.dry_run);
        assert_eq!(plain.field_manager, Some(("kubectl-create".into(), "Update")));
        assert_eq!(
            of(&q(&[("dryRun", "x")]), &Method::GET, "", "")
                .unwrap()
                .field_manager,
            None
        );
        assert_eq!(
            of(&q(&[]), &Method::DELETE, "", "kubectl/1")
                .unwrap()
                .field_manager,
            None
        );
    }
}
