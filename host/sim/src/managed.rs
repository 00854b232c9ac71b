//! `metadata.managedFields` as the API server keeps them: on every write
//! with a manager (the request's `fieldManager`, else its User-Agent's
//! first path segment), the manager's entry of its operation (`Update` or
//! `Apply`) gains the fields the write set or changed, other managers lose
//! them, fields the object no longer has leave every entry, and an entry
//! left with no field is dropped (an apply that sets nothing records none).
//! An object stored without managedFields gets none from an update; an
//! apply to it first gives its fields to the manager `before-first-apply`.
//!
//! Field sets are approximated without schemas: object fields are `f:`
//! keys, items of lists whose objects all carry a `name` are
//! `k:{"name":...}` keys, other lists are atomic; the server-owned metadata
//! (name, namespace, uid, resourceVersion, generation, creationTimestamp,
//! managedFields) and, for types with a status subresource, `status` are
//! never owned.
//!
//! Owns: field sets and the entries. Must not touch: when a write is
//! committed (`store`), request parsing (`write_mode`).

use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// A field path as FieldsV1 keys (`f:spec`, `k:{"name":"c"}`, ...).
type Path = Vec<String>;

const SERVER_OWNED: [&str; 8] = [
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
];

/// Who writes and how: the entry a write records.
pub struct Writer<'a> {
    pub manager: &'a str,
    pub operation: &'a str,
    pub api_version: Option<&'a str>,
    /// The type has a status subresource (its main resource's writers own
    /// no status).
    pub has_status: bool,
}

/// The manager a request without `fieldManager` is recorded under: its
/// User-Agent up to the first `/` (at most 128 characters).
pub fn manager_of_user_agent(user_agent: &str) -> String {
    let prefix = user_agent.split('/').next().unwrap_or("");
    prefix.chars().take(128).collect()
}

/// The key of one list item: `k:{"name":...}` when every item is an object
/// with a string `name`, else none (the list is atomic).
fn item_keys(items: &[Value]) -> Option<Vec<String>> {
    items
        .iter()
        .map(|i| {
            let name = i.get("name")?.as_str()?;
            Some(format!("k:{}", json!({ "name": name })))
        })
        .collect()
}

/// Whether `v` is a node with fields below it (not a leaf).
fn children(v: &Value) -> Vec<(String, &Value)> {
    match v {
        Value::Object(m) => m.iter().map(|(k, c)| (format!("f:{k}"), c)).collect(),
        Value::Array(a) if !a.is_empty() => match item_keys(a) {
            Some(keys) => keys.into_iter().zip(a.iter()).collect(),
            None => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// The child of `old` at `key` (as `children` names them).
fn child<'a>(old: &'a Value, key: &str) -> Option<&'a Value> {
    children(old).into_iter().find(|(k, _)| k == key).map(|(_, c)| c)
}

/// Whether the node `v` at `at` is a member of a field set itself (not
/// only through its fields): leaves, list items and maps of scalars (a
/// struct's node is not; the root's `metadata` never is).
fn member(at: &Path, v: &Value) -> bool {
    let scalar = |c: &Value| !c.is_object() && !c.is_array();
    children(v).is_empty()
        || at.last().is_some_and(|s| s.starts_with("k:"))
        || (at.as_slice() != ["f:metadata"] && v.as_object().is_some_and(|m| m.values().all(scalar)))
}

/// The paths under `at` of the fields of `new` that `old` lacks or holds
/// another value at.
fn changed(new: &Value, old: Option<&Value>, at: &mut Path, out: &mut BTreeSet<Path>) {
    for (k, c) in children(new) {
        let before = old.and_then(|o| child(o, &k));
        if before == Some(c) {
            continue;
        }
        at.push(k);
        if before.is_none() || children(c).is_empty() || before.is_some_and(|b| children(b).is_empty()) {
            if member(at, c) {
                out.insert(at.clone());
            }
            changed(c, None, at, out);
        } else {
            changed(c, before, at, out);
        }
        at.pop();
    }
}

/// Every path of `v`'s fields.
fn all(v: &Value, at: &mut Path, out: &mut BTreeSet<Path>) {
    changed(v, None, at, out)
}

/// The object's ownable fields: without apiVersion, kind, the
/// server-owned metadata and (when `has_status`) status.
fn ownable(v: &Value, has_status: bool) -> Value {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("apiVersion");
        o.remove("kind");
        if has_status {
            o.remove("status");
        }
        if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
            for f in SERVER_OWNED {
                m.remove(f);
            }
            if m.is_empty() {
                o.remove("metadata");
            }
        }
    }
    v
}

/// The paths of a FieldsV1 tree.
fn parse(fields: &Value, at: &mut Path, out: &mut BTreeSet<Path>) {
    let Some(m) = fields.as_object() else { return };
    for (k, c) in m {
        if k == "." {
            out.insert(at.clone());
            continue;
        }
        at.push(k.clone());
        if c.as_object().is_none_or(Map::is_empty) {
            out.insert(at.clone());
        } else {
            parse(c, at, out);
        }
        at.pop();
    }
}

/// The FieldsV1 tree of `paths` (a member with fields below it has `.`).
fn render(paths: &BTreeSet<Path>) -> Value {
    let mut root = Map::new();
    for p in paths {
        let mut node = &mut root;
        for seg in p {
            node = node
                .entry(seg.clone())
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .expect("object");
        }
    }
    fn dots(node: &mut Map<String, Value>, at: &mut Path, paths: &BTreeSet<Path>) {
        for (k, c) in node.iter_mut() {
            at.push(k.clone());
            let m = c.as_object_mut().expect("object");
            if !m.is_empty() {
                dots(m, at, paths);
                if paths.contains(at) {
                    m.insert(".".into(), json!({}));
                }
            }
            at.pop();
        }
    }
    dots(&mut root, &mut Vec::new(), paths);
    Value::Object(root)
}

/// Record `writer`'s write of `new` (replacing `old`, none for a create)
/// in `new`'s `metadata.managedFields`, the entries it had before taken
/// from `old`.
pub fn record(new: &mut Value, old: Option<&Value>, writer: &Writer) {
    let mut entries: Vec<Value> = old
        .and_then(|o| o.pointer("/metadata/managedFields"))
        .or_else(|| new.pointer("/metadata/managedFields"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let (Some(old), true) = (old, entries.is_empty()) {
        // An object nobody manages stays so through updates; an apply
        // first gives what it has to `before-first-apply`.
        if writer.operation != "Apply" {
            return;
        }
        let mut had = BTreeSet::new();
        all(&ownable(old, writer.has_status), &mut Vec::new(), &mut had);
        if !had.is_empty() {
            entries.push(json!({"manager": "before-first-apply", "operation": "Update",
                "apiVersion": old["apiVersion"], "time": super::meta::now(),
                "fieldsType": "FieldsV1", "fieldsV1": render(&had)}));
        }
    }
    let now_fields = ownable(new, writer.has_status);
    let mut present = BTreeSet::new();
    all(&now_fields, &mut Vec::new(), &mut present);
    let mut set = BTreeSet::new();
    let before = old.map(|o| ownable(o, writer.has_status));
    changed(&now_fields, before.as_ref(), &mut Vec::new(), &mut set);
    let mut out = Vec::new();
    let mut mine: Option<BTreeSet<Path>> = None;
    for e in entries {
        let mut paths = BTreeSet::new();
        parse(&e["fieldsV1"], &mut Vec::new(), &mut paths);
        paths.retain(|p| present.contains(p));
        if e["manager"] == writer.manager && e["operation"] == writer.operation {
            paths.extend(set.iter().cloned());
            mine = Some(paths);
            out.push(e);
            continue;
        }
        paths.retain(|p| !set.contains(p));
        if !paths.is_empty() {
            let mut e = e;
            e["fieldsV1"] = render(&paths);
            out.push(e);
        }
    }
    let mine = mine.unwrap_or_else(|| set.clone());
    let api_version = writer.api_version.map_or(new["apiVersion"].clone(), |v| json!(v));
    let entry = json!({
        "manager": writer.manager,
        "operation": writer.operation,
        "apiVersion": api_version,
        "time": super::meta::now(),
        "fieldsType": "FieldsV1",
        "fieldsV1": render(&mine),
    });
    match out
        .iter()
        .position(|e| e["manager"] == writer.manager && e["operation"] == writer.operation)
    {
        Some(i) if mine.is_empty() => {
            out.remove(i);
        }
        Some(i) => out[i] = entry,
        None if !mine.is_empty() => out.push(entry),
        None => {}
    }
    let m = super::meta::meta(new);
    match out.is_empty() {
        true => m.remove("managedFields"),
        false => m.insert("managedFields".into(), Value::Array(out)),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer<'a>(manager: &'a str, operation: &'a str) -> Writer<'a> {
        Writer {
            manager,
            operation,
            api_version: None,
            has_status: false,
        }
    }

    #[test]
    fn a_create_owns_what_it_set_and_updates_take_fields_over() {
        let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "uid": "u", "labels": {"app": "web"}}, "data": {"k": "v"}});
        record(&mut cm, None, &writer("kubectl-create", "Update"));
        let f = &cm["metadata"]["managedFields"];
        assert_eq!(f.as_array().unwrap().len(), 1);
        assert_eq!(f[0]["manager"], "kubectl-create");
        assert_eq!(f[0]["operation"], "Update");
        assert_eq!(f[0]["apiVersion"], "v1");
        assert_eq!(f[0]["fieldsType"], "FieldsV1");
        assert_eq!(
            f[0]["fieldsV1"],
            json!({"f:data": {".": {}, "f:k": {}}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}})
        );

        // Another manager changes data.k and adds data.m: it owns them, the
        // first keeps the label.
        let old = cm.clone();
        cm["data"] = json!({"k": "w", "m": "1"});
        record(&mut cm, Some(&old), &writer("wink", "Update"));
        let f = cm["metadata"]["managedFields"].as_array().unwrap().clone();
        assert_eq!(f.len(), 2);
        assert_eq!(
            f[0]["fieldsV1"],
            json!({"f:data": {}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}})
        );
        assert_eq!(f[1]["fieldsV1"], json!({"f:data": {"f:k": {}, "f:m": {}}}));

        // Removing the label leaves the first manager with only data.
        let old = cm.clone();
        cm["metadata"].as_object_mut().unwrap().remove("labels");
        record(&mut cm, Some(&old), &writer("wink", "Update"));
        let f = cm["metadata"]["managedFields"].as_array().unwrap().clone();
        assert_eq!(f[0]["fieldsV1"], json!({"f:data": {}}));
    }

    #[test]
    fn an_apply_that_sets_nothing_records_nothing_and_lists_keyed_by_name() {
        let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
        record(&mut cm, None, &writer("diff", "Apply"));
        assert!(cm["metadata"].get("managedFields").is_none());
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": "Pending"}});
        record(
            &mut pod,
            None,
            &Writer {
                has_status: true,
                ..writer("m", "Update")
            },
        );
        assert_eq!(
            pod["metadata"]["managedFields"][0]["fieldsV1"],
            json!({"f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}}}})
        );
        // Updates leave an unmanaged object unmanaged; an apply to it first
        // hands its fields to before-first-apply.
        let old = cm.clone();
        cm["data"] = json!({"k": "v"});
        record(&mut cm, Some(&old), &writer("kubectl", "Update"));
        assert!(cm["metadata"].get("managedFields").is_none());
        let old = cm.clone();
        cm["data"]["w"] = json!("3");
        record(&mut cm, Some(&old), &writer("ap", "Apply"));
        let f = cm["metadata"]["managedFields"].as_array().unwrap().clone();
        assert_eq!(
            (&f[0]["manager"], &f[0]["operation"]),
            (&json!("before-first-apply"), &json!("Update"))
        );
        assert_eq!(f[0]["fieldsV1"], json!({"f:data": {".": {}, "f:k": {}}}));
        assert_eq!(
            (&f[1]["manager"], &f[1]["fieldsV1"]),
            (&json!("ap"), &json!({"f:data": {"f:w": {}}}))
        );
        assert_eq!(
            manager_of_user_agent("kubectl-create/v1.36.0 (linux/amd64)"),
            "kubectl-create"
        );
        assert_eq!(manager_of_user_agent("kube-rs/5.0"), "kube-rs");
    }
}
