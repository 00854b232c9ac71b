//! API errors as the real server reports them: `meta/v1 Status` objects with
//! the real HTTP codes, reasons and message wording.
//!
//! Owns: [`ApiError`] and its JSON form. Must not touch: storage or routing.

use serde_json::{Value, json};

/// The `StatusCause` of one `field: Type: detail` message: its field, the
/// reason of its type and the rest as its message (no field: the whole
/// message, reason FieldValueInvalid).
pub fn cause(message: &str) -> Value {
    const TYPES: [(&str, &str); 9] = [
        ("Required value", "FieldValueRequired"),
        ("Invalid value", "FieldValueInvalid"),
        ("Unsupported value", "FieldValueNotSupported"),
        ("Duplicate value", "FieldValueDuplicate"),
        ("Not found", "FieldValueNotFound"),
        ("Forbidden", "FieldValueForbidden"),
        ("Too long", "FieldValueTooLong"),
        ("Too many", "FieldValueTooMany"),
        ("Internal error", "InternalError"),
    ];
    let mut at = 0;
    while let Some(i) = message[at..].find(": ") {
        let (field, rest) = (&message[..at + i], &message[at + i + 2..]);
        if let Some((_, reason)) = TYPES.iter().find(|(t, _)| {
            rest.strip_prefix(t)
                .is_some_and(|r| r.is_empty() || r.starts_with(':'))
        }) {
            return json!({"reason": reason, "message": rest, "field": field});
        }
        at += i + 2;
    }
    match TYPES.iter().find(|(t, _)| message.starts_with(t)) {
        Some((_, reason)) => json!({"reason": reason, "message": message}),
        None => json!({"reason": "FieldValueInvalid", "message": message}),
    }
}

/// A failed request, rendered as a `Status` object.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
}

fn details(qualified: &str, name: &str) -> Value {
    let (kind, group) = qualified.split_once('.').unwrap_or((qualified, ""));
    let mut d = json!({"name": name, "kind": kind});
    if !group.is_empty() {
        d["group"] = json!(group);
    }
    d
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    /// `pods "x" not found` (404 NotFound).
    pub fn not_found(qualified: &str, name: &str) -> Self {
        ApiError {
            details: Some(details(qualified, name)),
            ..Self::new(404, "NotFound", format!("{qualified} \"{name}\" not found"))
        }
    }

    /// `pods "x" already exists` (409 AlreadyExists).
    pub fn already_exists(qualified: &str, name: &str) -> Self {
        ApiError {
            details: Some(details(qualified, name)),
            ..Self::new(
                409,
                "AlreadyExists",
                format!("{qualified} \"{name}\" already exists"),
            )
        }
    }

    /// Stale resourceVersion on update (409 Conflict).
    pub fn conflict(qualified: &str, name: &str) -> Self {
        ApiError {
            details: Some(details(qualified, name)),
            ..Self::new(
                409,
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on {qualified} \"{name}\": the object has been \
                     modified; please apply your changes to the latest version and try again"
                ),
            )
        }
    }

    /// 422 Invalid, with one cause per `field: Type: detail` message (as
    /// `field.Error` prints them): the cause names the field, its reason is
    /// the type's (`Required value` is `FieldValueRequired`...), and the
    /// message joins them as `ToAggregate` does (`[a, b]` for several).
    pub fn invalid(qualified: &str, kind: &str, name: &str, causes: &[String]) -> Self {
        let mut d = if qualified.is_empty() {
            json!({})
        } else {
            let mut d = details(qualified, name);
            d["kind"] = json!(kind);
            d
        };
        d["causes"] = causes.iter().map(|c| cause(c)).collect();
        let all = match causes {
            [one] => one.clone(),
            _ => format!("[{}]", causes.join(", ")),
        };
        // The API server names the kind with its group (`Deployment.apps`;
        // a core kind alone), as `schema.GroupKind` prints; events.k8s.io is
        // served by the core Event's storage, whose errors name `Event`.
        let shown = match qualified.split_once('.') {
            Some((_, group)) if !kind.contains('.') && group != "events.k8s.io" => format!("{kind}.{group}"),
            _ => kind.to_string(),
        };
        ApiError {
            details: Some(d),
            ..Self::new(422, "Invalid", format!("{shown} \"{name}\" is invalid: {all}"))
        }
    }

    /// 422 Invalid of one field, as the API server's `field.Invalid`:
    /// `{kind} "{name}" is invalid: {field}: {detail}`, the cause naming the
    /// field. `qualified` and `kind` may be empty (a patch that does not
    /// decode is reported against no kind: ` "" is invalid: patch: ...`).
    pub fn invalid_field(qualified: &str, kind: &str, name: &str, field: &str, detail: &str) -> Self {
        Self::invalid(qualified, kind, name, &[format!("{field}: {detail}")])
    }

    /// 422 Invalid of a request's options (`CreateOptions`, `PatchOptions`...
    /// of group `meta.k8s.io`), as the API server refuses a bad `dryRun` or
    /// an apply without `fieldManager`.
    pub fn invalid_options(options: &str, cause: &str) -> Self {
        let mut e = Self::invalid(
            &format!("{options}.meta.k8s.io"),
            options,
            "",
            &[cause.to_string()],
        );
        if let Some(d) = e.details.as_mut().and_then(Value::as_object_mut) {
            d.remove("name");
        }
        e.message = format!("{options}.meta.k8s.io \"\" is invalid: {cause}");
        e
    }

    /// 415 for a body or patch of a media type the server does not read.
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        ApiError {
            details: Some(json!({})),
            ..Self::new(415, "UnsupportedMediaType", message)
        }
    }

    /// `namespaces "default" is forbidden: this namespace may not be deleted` (403 Forbidden).
    pub fn forbidden(qualified: &str, name: &str, why: &str) -> Self {
        ApiError {
            details: Some(details(qualified, name)),
            ..Self::new(
                403,
                "Forbidden",
                format!("{qualified} \"{name}\" is forbidden: {why}"),
            )
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 405 for a method a path does not serve (the real server's router
    /// answer, with the router's message as a cause).
    pub fn method_not_allowed() -> Self {
        ApiError {
            details: Some(json!({"causes": [{"reason": "UnexpectedServerResponse",
                "message": "405: Method Not Allowed"}]})),
            ..Self::new(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            )
        }
    }

    /// The plain 404 for a path nothing serves.
    pub fn no_route() -> Self {
        ApiError {
            details: Some(json!({})),
            ..Self::new(
                404,
                "NotFound",
                "the server could not find the requested resource",
            )
        }
    }

    /// 410 Expired for a watch from a compacted resourceVersion.
    pub fn too_old(requested: u64, oldest: u64) -> Self {
        Self::new(
            410,
            "Expired",
            format!("too old resource version: {requested} ({oldest})"),
        )
    }

    /// 410 Expired for a continue token whose snapshot left the history.
    pub fn continue_expired() -> Self {
        Self::new(
            410,
            "Expired",
            "The provided continue parameter is too old to display a consistent list result. You \
             can start a new list without the continue parameter, or use the continue token in \
             this response to retrieve the remainder of the results. Continuing with the provided \
             token results in an inconsistent list - objects that were created, modified, or \
             deleted between the time the first chunk was returned and now may show up in the list.",
        )
    }

    /// 504 for a resourceVersion the server has not reached.
    pub fn too_large(requested: u64, current: u64) -> Self {
        ApiError {
            details: Some(json!({"causes": [{"reason": "ResourceVersionTooLarge",
                "message": "Too large resource version"}], "retryAfterSeconds": 1})),
            ..Self::new(
                504,
                "Timeout",
                format!("Timeout: Too large resource version: {requested}, current: {current}"),
            )
        }
    }

    /// The injected failure of `Faults::fail_next`.
    pub fn injected(code: u16) -> Self {
        let reason = match code {
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            409 => "Conflict",
            410 => "Expired",
            422 => "Invalid",
            429 => "TooManyRequests",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "InternalError",
        };
        let mut e = Self::new(
            code,
            reason,
            format!("injected failure ({code}) by the simulator"),
        );
        if code == 429 {
            e.message = "Too many requests, please try again later.".into();
            e.details = Some(json!({"retryAfterSeconds": 1}));
        }
        e
    }

    /// The `Status` object.
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            v["details"] = d.clone();
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_objects_use_real_wording() {
        let e = ApiError::not_found("deployments.apps", "web").to_json();
        assert_eq!(e["message"], "deployments.apps \"web\" not found");
        assert_eq!(e["details"]["group"], "apps");
        assert_eq!(e["details"]["kind"], "deployments");
        assert_eq!(e["code"], 404);
        assert_eq!(ApiError::too_old(3, 9).message, "too old resource version: 3 (9)");
        assert_eq!(ApiError::injected(429).to_json()["reason"], "TooManyRequests");
    }
}
