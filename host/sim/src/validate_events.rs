//! What kube-apiserver's Event validation refuses (422 Invalid), read from
//! the stored (core v1) form, so the fields are named the internal way
//! whichever group the write came through (`reportingController`,
//! `message`): every Event passes the legacy checks (a namespace that
//! agrees with the involved object's; an Event with an eventTime names its
//! reporting controller and instance, action and reason, and a note of at
//! most 1 KiB); one written through events.k8s.io/v1 is held to the strict
//! ones too: created with an eventTime, type Normal or Warning, a series of
//! at least two and none of the deprecated fields; updated in its metadata
//! and series only.
//!
//! Owns: these checks and their wording. Must not touch: when a write is
//! checked (`write`), the conversion (`events`), the store.

use serde_json::Value;

const INSTANCE_LIMIT: usize = 128;
const ACTION_LIMIT: usize = 128;
const REASON_LIMIT: usize = 128;
const NOTE_LIMIT: usize = 1024;

fn text<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

fn set(v: &Value, ptr: &str) -> bool {
    v.pointer(ptr).is_some_and(|x| match x {
        Value::Null => false,
        Value::String(s) => !s.is_empty(),
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::Object(m) => !m.is_empty(),
        _ => true,
    })
}

/// `IsQualifiedName`'s complaints about `name` (`[prefix/]name`).
pub(super) fn qualified_name(name: &str) -> Vec<String> {
    let (prefix, part) = match name.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, name),
    };
    let mut errs = Vec::new();
    let alnum = |c: char| c.is_ascii_alphanumeric();
    let ok_part = !part.is_empty()
        && part.starts_with(alnum)
        && part.ends_with(alnum)
        && part.chars().all(|c| alnum(c) || "-_.".contains(c));
    if part.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if part.len() > 63 {
        errs.push("name part must be no more than 63 bytes".to_string());
    }
    if !part.is_empty() && !ok_part {
        errs.push(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an \
             alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is \
             '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
                .to_string(),
        );
    }
    if let Some(p) = prefix {
        let label = |l: &str| {
            !l.is_empty()
                && l.starts_with(alnum)
                && l.ends_with(alnum)
                && l.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        };
        if p.is_empty() {
            errs.push("prefix part must be non-empty".to_string());
        } else if p.len() > 253 || !p.split('.').all(label) {
            errs.push(
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
                 '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex \
                 used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
                    .to_string(),
            );
        }
    }
    errs
}

/// `legacyValidateEvent`: what every Event must be.
fn legacy(e: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    let ns = text(e, "/metadata/namespace");
    let involved = text(e, "/involvedObject/namespace");
    let mismatch =
        || format!("involvedObject.namespace: Invalid value: {involved:?}: does not match event.namespace");
    if !set(e, "/eventTime") {
        let agrees = match involved {
            "" => ns.is_empty() || ns == "default",
            i => i == ns,
        };
        if !agrees {
            errs.push(mismatch());
        }
        return errs;
    }
    if involved.is_empty() && ns != "default" && ns != "kube-system" {
        errs.push(mismatch());
    }
    let controller = text(e, "/reportingComponent");
    if controller.is_empty() {
        errs.push("reportingController: Required value".into());
    }
    for why in qualified_name(controller) {
        errs.push(format!(
            "reportingController: Invalid value: {controller:?}: {why}"
        ));
    }
    let mut bounded = |field: &str, value: &str, limit: usize, required: bool| {
        if required && value.is_empty() {
            errs.push(format!("{field}: Required value"));
        }
        if value.len() > limit {
            errs.push(format!(
                "{field}: Invalid value: \"\": can have at most {limit} characters"
            ));
        }
    };
    bounded(
        "reportingInstance",
        text(e, "/reportingInstance"),
        INSTANCE_LIMIT,
        true,
    );
    bounded("action", text(e, "/action"), ACTION_LIMIT, true);
    bounded("reason", text(e, "/reason"), REASON_LIMIT, true);
    bounded("message", text(e, "/message"), NOTE_LIMIT, false);
    errs
}

/// `validateV1EventSeries`.
fn series(e: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    if e.get("series").is_some_and(|s| !s.is_null()) {
        if e.pointer("/series/count").and_then(Value::as_i64).unwrap_or(0) < 2 {
            errs.push("series.count: Invalid value: \"\": should be at least 2".to_string());
        }
        if !set(e, "/series/lastObservedTime") {
            errs.push("series.lastObservedTime: Required value".to_string());
        }
    }
    errs
}

/// `ValidateEventCreate` of an Event created through events.k8s.io/v1.
fn strict_create(e: &Value) -> Vec<String> {
    let mut errs = series(e);
    if !set(e, "/eventTime") {
        errs.push("eventTime: Required value".into());
    }
    let ty = text(e, "/type");
    if ty != "Normal" && ty != "Warning" {
        errs.push(format!("type: Invalid value: \"\": has invalid value: {ty}"));
    }
    for (ptr, field) in [
        ("/firstTimestamp", "firstTimestamp"),
        ("/lastTimestamp", "lastTimestamp"),
        ("/count", "count"),
    ] {
        if set(e, ptr) {
            errs.push(format!("{field}: Invalid value: \"\": needs to be unset"));
        }
    }
    if set(e, "/source/component") || set(e, "/source/host") {
        errs.push("source: Invalid value: \"\": needs to be unset".into());
    }
    errs
}

/// The fields `ValidateEventUpdate` keeps as they were (internal names).
const IMMUTABLE: [(&str, &str); 13] = [
    ("involvedObject", "involvedObject"),
    ("reason", "reason"),
    ("message", "message"),
    ("source", "source"),
    ("firstTimestamp", "firstTimestamp"),
    ("lastTimestamp", "lastTimestamp"),
    ("count", "count"),
    ("type", "type"),
    ("eventTime", "eventTime"),
    ("action", "action"),
    ("related", "related"),
    ("reportingComponent", "reportingController"),
    ("reportingInstance", "reportingInstance"),
];

/// `ValidateEventUpdate` of an update through events.k8s.io/v1: a changed
/// series must be valid, everything else but metadata stays. A value is
/// shown as JSON (the real server prints the Go value).
fn strict_update(e: &Value, old: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    if e.get("series") != old.get("series") {
        errs.extend(series(e));
    }
    let empty = |v: Option<&Value>| v.is_none_or(|x| x.is_null() || x == "" || x == &serde_json::json!({}));
    for (field, path) in IMMUTABLE {
        let (new, was) = (e.get(field), old.get(field));
        if new != was && !(empty(new) && empty(was)) {
            let shown = new.map_or("null".to_string(), Value::to_string);
            errs.push(format!("{path}: Invalid value: {shown}: field is immutable"));
        }
    }
    errs
}

/// How the write through the events.k8s.io API is checked besides the
/// legacy checks: none (through core v1), a create's, an update's.
pub type Strict<'a> = Option<Option<&'a Value>>;

/// The `field: detail` causes of what a stored-form Event `e` gets wrong;
/// `strict`: written through events.k8s.io/v1, as a create (`Some(None)`)
/// or as an update of the old object (`Some(Some(old))`).
pub fn check(e: &Value, strict: Strict) -> Vec<String> {
    let mut errs = legacy(e);
    match strict {
        None => {}
        Some(None) => errs.extend(strict_create(e)),
        Some(Some(old)) => errs.extend(strict_update(e, old)),
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn recorded() -> Value {
        json!({"metadata": {"name": "w.1", "namespace": "team"}, "eventTime": "2026-01-01T00:00:00.000000Z",
            "reportingComponent": "wink.dev/require-labels", "reportingInstance": "wink-require-labels",
            "action": "Check", "reason": "MissingLabel", "message": "needs team", "type": "Warning",
            "involvedObject": {"kind": "Deployment", "namespace": "team", "name": "w"}, "source": {},
            "firstTimestamp": null, "lastTimestamp": null})
    }

    #[test]
    fn what_wink_records_passes_and_the_strict_checks_name_each_field() {
        assert!(check(&recorded(), Some(None)).is_empty());
        let mut bad = recorded();
        for f in ["reportingComponent", "action", "eventTime"] {
            bad.as_object_mut().unwrap().remove(f);
        }
        bad["type"] = json!("Info");
        bad["count"] = json!(2);
        bad["series"] = json!({"count": 1});
        assert_eq!(
            check(&bad, Some(None)),
            [
                "series.count: Invalid value: \"\": should be at least 2",
                "series.lastObservedTime: Required value",
                "eventTime: Required value",
                "type: Invalid value: \"\": has invalid value: Info",
                "count: Invalid value: \"\": needs to be unset",
            ]
        );
        let mut legacy = recorded();
        legacy.as_object_mut().unwrap().remove("action");
        legacy["reportingComponent"] = json!("Bad Name");
        legacy["message"] = json!("x".repeat(1025));
        let errs = check(&legacy, None);
        assert_eq!(errs.len(), 3, "{errs:?}");
        assert!(
            errs[0].starts_with("reportingController: Invalid value: \"Bad Name\": name part must consist")
        );
        assert_eq!(errs[1], "action: Required value");
        assert_eq!(
            errs[2],
            "message: Invalid value: \"\": can have at most 1024 characters"
        );
    }

    #[test]
    fn old_style_events_only_need_matching_namespaces() {
        let old = json!({"metadata": {"namespace": "team"}, "involvedObject": {"namespace": "team"}});
        assert!(check(&old, None).is_empty());
        let other = json!({"metadata": {"namespace": "team"}, "involvedObject": {"namespace": "prod"}});
        assert_eq!(
            check(&other, None),
            ["involvedObject.namespace: Invalid value: \"prod\": does not match event.namespace"]
        );
        let cluster = json!({"metadata": {"namespace": "default"}, "involvedObject": {"kind": "Node"}});
        assert!(check(&cluster, None).is_empty());
        let old = recorded();
        let mut next = old.clone();
        next["series"] = json!({"count": 2, "lastObservedTime": "2026-01-01T00:00:01.000000Z"});
        next["metadata"]["labels"] = json!({"a": "b"});
        assert!(
            check(&next, Some(Some(&old))).is_empty(),
            "a series and metadata may change"
        );
        next["message"] = json!("changed");
        assert_eq!(
            check(&next, Some(Some(&old))),
            ["message: Invalid value: \"changed\": field is immutable"]
        );
        assert!(
            check(&next, None).is_empty(),
            "core v1 updates are not held to it"
        );
        assert!(qualified_name("kubelet").is_empty());
        assert!(qualified_name("wink.dev/require-labels").is_empty());
        assert_eq!(qualified_name("Wink.dev/x").len(), 1);
    }
}
