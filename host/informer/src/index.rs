//! Declarative index specs ([`IndexSpec`]) and the index functions they
//! compile to: label key, annotation key, owner reference (uid, or
//! `Kind/name`), field path. Owns only the mapping from spec to function;
//! the store maintains the indexes.

use super::object::CachedObject;
use super::store::IndexFunc;
use serde::Deserialize;
use std::sync::Arc;

/// What an index is computed from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum IndexSpec {
    /// The value of a label key.
    Label(String),
    /// The value of an annotation key.
    Annotation(String),
    /// Every owner reference's uid.
    OwnerUid,
    /// Every owner reference as `Kind/name`.
    OwnerKindName,
    /// A dotted field path, e.g. `spec.nodeName`.
    Field(String),
}

impl std::fmt::Display for IndexSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IndexSpec::Label(k) => write!(f, "label:{k}"),
            IndexSpec::Annotation(k) => write!(f, "annotation:{k}"),
            IndexSpec::OwnerUid => write!(f, "owner-uid"),
            IndexSpec::OwnerKindName => write!(f, "owner-kind-name"),
            IndexSpec::Field(p) => write!(f, "field:{p}"),
        }
    }
}

#[derive(Deserialize)]
struct MetaOnly {
    #[serde(default)]
    metadata: MetaFields,
}

#[derive(Deserialize, Default)]
struct MetaFields {
    #[serde(default)]
    annotations: std::collections::BTreeMap<String, String>,
    #[serde(default, rename = "ownerReferences")]
    owner_references: Vec<OwnerRef>,
}

#[derive(Deserialize)]
struct OwnerRef {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    uid: String,
}

fn meta_fields(obj: &CachedObject) -> Result<MetaFields, String> {
    serde_json::from_str::<MetaOnly>(&obj.json())
        .map(|m| m.metadata)
        .map_err(|e| format!("cannot parse metadata: {e}"))
}

fn field_value(obj: &CachedObject, path: &str) -> Result<Vec<String>, String> {
    let value: serde_json::Value = serde_json::from_str(&obj.json()).map_err(|e| e.to_string())?;
    let mut cur = &value;
    for part in path.split('.') {
        match cur.get(part) {
            Some(next) => cur = next,
            None => return Ok(Vec::new()),
        }
    }
    Ok(match cur {
        serde_json::Value::String(s) => vec![s.clone()],
        serde_json::Value::Number(n) => vec![n.to_string()],
        serde_json::Value::Bool(b) => vec![b.to_string()],
        _ => Vec::new(),
    })
}

impl IndexSpec {
    /// The index function this spec describes.
    pub fn func(&self) -> IndexFunc {
        match self.clone() {
            IndexSpec::Label(key) => {
                Arc::new(move |o: &CachedObject| Ok(o.label(&key).map(str::to_string).into_iter().collect()))
            }
            IndexSpec::Annotation(key) => Arc::new(move |o: &CachedObject| {
                Ok(meta_fields(o)?.annotations.remove(&key).into_iter().collect())
            }),
            IndexSpec::OwnerUid => Arc::new(|o: &CachedObject| {
                Ok(meta_fields(o)?
                    .owner_references
                    .into_iter()
                    .map(|r| r.uid)
                    .collect())
            }),
            IndexSpec::OwnerKindName => Arc::new(|o: &CachedObject| {
                Ok(meta_fields(o)?
                    .owner_references
                    .into_iter()
                    .map(|r| format!("{}/{}", r.kind, r.name))
                    .collect())
            }),
            IndexSpec::Field(path) => Arc::new(move |o: &CachedObject| field_value(o, &path)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::{CachePolicy, tests::pod_resource};
    use kube::api::DynamicObject;

    fn obj() -> Arc<CachedObject> {
        let d: DynamicObject = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "d", "labels": {"app": "web"},
                "annotations": {"team": "blue"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "u-1"}]},
            "spec": {"nodeName": "node-7", "priority": 5}
        }))
        .unwrap();
        CachedObject::from_dynamic(d, &pod_resource(), CachePolicy::default())
    }

    #[test]
    fn each_spec_indexes_what_it_says() {
        let o = obj();
        let run = |s: IndexSpec| (s.func())(&o).unwrap();
        assert_eq!(run(IndexSpec::Label("app".into())), ["web"]);
        assert!(run(IndexSpec::Label("nope".into())).is_empty());
        assert_eq!(run(IndexSpec::Annotation("team".into())), ["blue"]);
        assert_eq!(run(IndexSpec::OwnerUid), ["u-1"]);
        assert_eq!(run(IndexSpec::OwnerKindName), ["ReplicaSet/web-1"]);
        assert_eq!(run(IndexSpec::Field("spec.nodeName".into())), ["node-7"]);
        assert_eq!(run(IndexSpec::Field("spec.priority".into())), ["5"]);
        assert!(run(IndexSpec::Field("spec.missing.deep".into())).is_empty());
    }
}
