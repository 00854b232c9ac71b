//! What `ValidateObjectMeta` checks of every object's metadata beyond its
//! name: label keys (qualified names: a name part of at most 63 bytes of
//! `[A-Za-z0-9._-]`, beginning and ending alphanumeric, with an optional
//! DNS subdomain prefix and `/`), label values (at most 63 bytes, empty or
//! the same characters), annotation keys (qualified names, compared in
//! lower case) and the annotations' total size (256 KiB); and the empty
//! maps and lists Go's `omitempty` drops from what is stored.
//!
//! Owns: these checks and their wording. Must not touch: when a write is
//! checked (`write`).

use super::validate_events::qualified_name;
use serde_json::Value;

/// The annotations' total size limit (keys and values), in bytes.
pub const TOTAL_ANNOTATION_BYTES: usize = 256 * 1024;

const VALUE_MESSAGE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', \
     '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or \
     '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

const KEY_MESSAGE: &str = "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must \
     start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for \
     validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' \
     (e.g. 'example.com/MyName')";

fn map<'a>(body: &'a Value, f: &str) -> impl Iterator<Item = (&'a String, &'a Value)> {
    body.pointer(&format!("/metadata/{f}"))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
}

/// `IsQualifiedName` of a key, a key of more than one `/` in one message.
fn key_errors(key: &str) -> Vec<String> {
    match key.matches('/').count() > 1 {
        true => vec![KEY_MESSAGE.to_string()],
        false => qualified_name(key),
    }
}

/// The `field: Type: detail` causes of `body`'s labels and annotations.
pub fn errors(body: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    for (k, v) in map(body, "labels") {
        for why in key_errors(k) {
            errs.push(format!("metadata.labels: Invalid value: {k:?}: {why}"));
        }
        let v = v.as_str().unwrap_or("");
        let alnum = |c: char| c.is_ascii_alphanumeric();
        if v.len() > 63 {
            errs.push(format!(
                "metadata.labels: Invalid value: {v:?}: must be no more than 63 bytes"
            ));
        }
        let ok = v.is_empty()
            || (v.starts_with(alnum)
                && v.ends_with(alnum)
                && v.chars().all(|c| alnum(c) || "-_.".contains(c)));
        if !ok {
            errs.push(format!("metadata.labels: Invalid value: {v:?}: {VALUE_MESSAGE}"));
        }
    }
    let mut size = 0;
    for (k, v) in map(body, "annotations") {
        for why in key_errors(&k.to_ascii_lowercase()) {
            errs.push(format!("metadata.annotations: Invalid value: {k:?}: {why}"));
        }
        size += k.len() + v.as_str().map_or(0, str::len);
    }
    if size > TOTAL_ANNOTATION_BYTES {
        errs.push(format!(
            "metadata.annotations: Too long: may not be more than {TOTAL_ANNOTATION_BYTES} bytes"
        ));
    }
    errs
}

/// Drop the empty metadata maps and lists (`omitempty`): a create with
/// `labels: {}` stores no labels.
pub fn omit_empty(body: &mut Value) {
    let Some(m) = body.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    for f in [
        "labels",
        "annotations",
        "finalizers",
        "ownerReferences",
        "managedFields",
    ] {
        let empty = match m.get(f) {
            Some(Value::Object(o)) => o.is_empty(),
            Some(Value::Array(a)) => a.is_empty(),
            Some(Value::Null) => true,
            _ => false,
        };
        if empty {
            m.remove(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::cause;
    use serde_json::json;

    fn fields(body: Value) -> Vec<(String, String)> {
        errors(&body)
            .iter()
            .map(|e| {
                let c = cause(e);
                (
                    c["field"].as_str().unwrap().into(),
                    c["reason"].as_str().unwrap().into(),
                )
            })
            .collect()
    }

    #[test]
    fn labels_and_annotations_as_validate_object_meta_has_them() {
        let good = json!({"metadata": {"labels": {"app": "web", "wink.dev/team": "a_b.c-d", "e": ""},
            "annotations": {"Any.Case/Key_1": "anything at all"}}});
        assert!(errors(&good).is_empty(), "{:?}", errors(&good));
        let invalid = ("metadata.labels".to_string(), "FieldValueInvalid".to_string());
        for labels in [
            json!({"-x": "1"}),
            json!({"x": "a b"}),
            json!({"x": "v".repeat(64)}),
            json!({"k".repeat(64): "v"}),
            json!({"Ex.com/x": "v"}),
            json!({"a/b/c": "v"}),
            json!({"/x": "v"}),
            json!({"x": "-v"}),
        ] {
            assert_eq!(
                fields(json!({"metadata": {"labels": labels}})),
                std::slice::from_ref(&invalid),
                "{labels}"
            );
        }
        let e = errors(&json!({"metadata": {"labels": {"x": "a b"}}}));
        assert!(e[0].starts_with("metadata.labels: Invalid value: \"a b\": a valid label must be"));
        assert_eq!(
            fields(json!({"metadata": {"annotations": {"a": "x".repeat(TOTAL_ANNOTATION_BYTES)}}})),
            [("metadata.annotations".into(), "FieldValueTooLong".into())]
        );
        assert!(
            errors(&json!({"metadata": {"annotations": {"a": "x".repeat(TOTAL_ANNOTATION_BYTES - 1)}}}))
                .is_empty()
        );
        assert_eq!(
            fields(json!({"metadata": {"annotations": {"a b": "x"}}})).len(),
            1
        );
    }

    #[test]
    fn empty_maps_are_omitted() {
        let mut v = json!({"metadata": {"name": "a", "labels": {}, "annotations": {}, "finalizers": [],
            "ownerReferences": null}, "data": {}});
        omit_empty(&mut v);
        assert_eq!(v, json!({"metadata": {"name": "a"}, "data": {}}));
    }
}
