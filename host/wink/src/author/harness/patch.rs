//! Patches as the API server applies them, for the captured writes of
//! `wink test`: JSON merge patches (RFC 7386; strategic merge patches are
//! applied as merge patches: lists are replaced, not merged by key) and
//! JSON patches (RFC 6902), and the check that what a write leaves is an
//! object the server would keep ([`object`]); the API server answers 422
//! to a patch that leaves anything else. Owns nothing but these functions.

use serde_json::Value;

/// Whether `doc` is what an API server keeps: a JSON object whose
/// `metadata`, if any, is an object.
pub fn object(doc: &Value) -> Result<(), String> {
    let Some(fields) = doc.as_object() else {
        return Err(format!("the object must be a JSON object, not {}", kind(doc)));
    };
    match fields.get("metadata") {
        None | Some(Value::Null | Value::Object(_)) => Ok(()),
        Some(other) => Err(format!("metadata must be a JSON object, not {}", kind(other))),
    }
}

/// A JSON value's type, as an error names it.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Apply a JSON merge patch (a JSON object, as the API server takes it)
/// to the object `doc`: all or nothing; the result is checked with [`object`].
pub fn merge_object(doc: &mut Value, patch: &Value) -> Result<(), String> {
    if !patch.is_object() {
        return Err(format!(
            "a merge patch must be a JSON object, not {}",
            kind(patch)
        ));
    }
    let mut out = doc.clone();
    merge(&mut out, patch);
    object(&out)?;
    *doc = out;
    Ok(())
}

/// Apply a JSON merge patch to `doc`.
pub fn merge(doc: &mut Value, patch: &Value) {
    let Value::Object(fields) = patch else {
        *doc = patch.clone();
        return;
    };
    if !doc.is_object() {
        *doc = Value::Object(Default::default());
    }
    let target = doc.as_object_mut().expect("an object");
    for (k, v) in fields {
        if v.is_null() {
            target.remove(k);
        } else {
            merge(target.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// The parent of `pointer` and its last token, unescaped.
fn split(pointer: &str) -> Result<(&str, String), String> {
    let (parent, last) = pointer
        .rsplit_once('/')
        .ok_or_else(|| format!("invalid JSON pointer {pointer:?}"))?;
    Ok((parent, last.replace("~1", "/").replace("~0", "~")))
}

fn add(doc: &mut Value, path: &str, value: Value) -> Result<(), String> {
    if path.is_empty() {
        *doc = value;
        return Ok(());
    }
    let (parent, last) = split(path)?;
    match doc.pointer_mut(parent) {
        Some(Value::Object(m)) => {
            m.insert(last, value);
            Ok(())
        }
        Some(Value::Array(a)) => {
            let at = if last == "-" {
                a.len()
            } else {
                last.parse::<usize>()
                    .ok()
                    .filter(|&i| i <= a.len())
                    .ok_or_else(|| format!("no index {last} in {parent:?}"))?
            };
            a.insert(at, value);
            Ok(())
        }
        _ => Err(format!("doc is missing path: {parent:?}")),
    }
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, String> {
    let (parent, last) = split(path)?;
    let removed = match doc.pointer_mut(parent) {
        Some(Value::Object(m)) => m.remove(&last),
        Some(Value::Array(a)) => last
            .parse::<usize>()
            .ok()
            .filter(|&i| i < a.len())
            .map(|i| a.remove(i)),
        _ => None,
    };
    removed.ok_or_else(|| format!("unable to remove nonexistent key: {path}"))
}

/// Apply a JSON patch (a list of operations) to `doc`: all or nothing;
/// the result is checked with [`object`].
pub fn json(doc: &mut Value, patch: &Value) -> Result<(), String> {
    let ops = patch.as_array().ok_or("a JSON patch is a list of operations")?;
    let mut out = doc.clone();
    for op in ops {
        let text = |k: &str| op[k].as_str().ok_or_else(|| format!("an operation needs {k:?}"));
        let path = text("path")?;
        match text("op")? {
            "add" => add(&mut out, path, op["value"].clone())?,
            "remove" => drop(remove(&mut out, path)?),
            "replace" if path.is_empty() => out = op["value"].clone(),
            "replace" => {
                remove(&mut out, path)?;
                add(&mut out, path, op["value"].clone())?;
            }
            "move" => {
                let v = remove(&mut out, text("from")?)?;
                add(&mut out, path, v)?;
            }
            "copy" => {
                let from = text("from")?;
                let v = out.pointer(from).cloned().ok_or(format!("no {from:?}"))?;
                add(&mut out, path, v)?;
            }
            "test" => {
                if out.pointer(path) != Some(&op["value"]) {
                    return Err(format!("testing value {path} failed"));
                }
            }
            other => return Err(format!("unknown operation {other:?}")),
        }
    }
    object(&out)?;
    *doc = out;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patches_add_replace_and_remove() {
        let mut doc = json!({"a": {"b": 1, "c": 2}, "l": [1, 2]});
        merge(&mut doc, &json!({"a": {"b": null, "d": 3}, "l": [3]}));
        assert_eq!(doc, json!({"a": {"c": 2, "d": 3}, "l": [3]}));
    }

    #[test]
    fn json_patches_apply_all_or_nothing() {
        let mut doc = json!({"metadata": {"labels": {"a": "1"}}, "l": [1]});
        let patch = json!([
            {"op": "add", "path": "/metadata/labels/b~1c", "value": "2"},
            {"op": "replace", "path": "/metadata/labels/a", "value": "3"},
            {"op": "add", "path": "/l/-", "value": 2},
            {"op": "test", "path": "/l/1", "value": 2},
        ]);
        json(&mut doc, &patch).unwrap();
        assert_eq!(
            doc,
            json!({"metadata": {"labels": {"a": "3", "b/c": "2"}}, "l": [1, 2]})
        );
        let failing = json!([{"op": "remove", "path": "/l/0"}, {"op": "remove", "path": "/nope"}]);
        assert!(json(&mut doc, &failing).is_err());
        assert_eq!(doc["l"], json!([1, 2]), "nothing applied");
    }

    #[test]
    fn patches_that_leave_no_object_are_refused_and_apply_nothing() {
        let before = json!({"metadata": {"name": "a"}, "data": {"k": "v"}});
        for patch in [
            json!("x"),
            json!(5),
            json!([1, 2]),
            json!(null),
            json!({"metadata": "x"}),
        ] {
            let mut doc = before.clone();
            let e = merge_object(&mut doc, &patch).expect_err(&patch.to_string());
            assert!(e.contains("must be a JSON object"), "{patch}: {e}");
            assert_eq!(doc, before, "{patch}: nothing applied");
        }
        for patch in [
            json!([{"op": "add", "path": "", "value": 5}]),
            json!([{"op": "replace", "path": "", "value": "x"}]),
            json!([{"op": "add", "path": "/metadata", "value": [1]}]),
        ] {
            let mut doc = before.clone();
            let e = json(&mut doc, &patch).expect_err(&patch.to_string());
            assert!(e.contains("must be a JSON object"), "{patch}: {e}");
            assert_eq!(doc, before, "{patch}: nothing applied");
        }
        let mut doc = before.clone();
        merge_object(&mut doc, &json!({"data": {"k": null}})).unwrap();
        assert_eq!(doc, json!({"metadata": {"name": "a"}, "data": {}}));
    }
}
