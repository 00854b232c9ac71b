//! Declarative index specs ([`IndexSpec`]) and the index functions they
//! compile to: label key, annotation key, owner reference (uid, or
//! `Kind/name`), field path (through lists: see `field_path`). Owns only
//! the mapping from spec to function and whether a spec can index;
//! the store maintains the indexes.

use super::field_path::FieldPath;
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
    /// A dotted field path, e.g. `spec.nodeName`; through lists
    /// (`spec.rules[*].host`, `spec.rules.host`) one value per element
    /// (see [`crate::field_path`]).
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

fn field_value(obj: &CachedObject, path: &FieldPath) -> Result<Vec<String>, String> {
    let value: serde_json::Value = serde_json::from_str(&obj.json()).map_err(|e| e.to_string())?;
    Ok(path.values(&value))
}

impl IndexSpec {
    /// Whether this spec can index: a field path must parse (see
    /// [`crate::field_path`]); the error names the path and says why not.
    pub fn check(&self) -> Result<(), String> {
        match self {
            IndexSpec::Field(path) => FieldPath::parse(path)
                .map(drop)
                .map_err(|why| format!("the field path {path:?} cannot index: {why}")),
            _ => Ok(()),
        }
    }

    /// The index function this spec describes (for a field path that does
    /// not parse, one that fails with [`IndexSpec::check`]'s error).
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
            IndexSpec::Field(path) => match FieldPath::parse(&path) {
                Ok(parsed) => Arc::new(move |o: &CachedObject| field_value(o, &parsed)),
                Err(_) => {
                    let why = self.check().unwrap_err();
                    Arc::new(move |_: &CachedObject| Err(why.clone()))
                }
            },
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
            "spec": {"nodeName": "node-7", "priority": 5, "containers": [
                {"name": "web", "image": "nginx:1", "ports": [{"containerPort": 80}]},
                {"name": "proxy", "image": "envoy:2", "ports": [{"containerPort": 9901}, {"containerPort": 80}]}]}
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
        assert_eq!(
            run(IndexSpec::Field("spec.containers[*].image".into())),
            ["nginx:1", "envoy:2"]
        );
        assert_eq!(
            run(IndexSpec::Field("spec.containers.image".into())),
            ["nginx:1", "envoy:2"]
        );
        assert_eq!(
            run(IndexSpec::Field(
                "spec.containers[*].ports[*].containerPort".into()
            )),
            ["80", "9901"]
        );
    }

    #[test]
    fn field_paths_that_cannot_index_are_refused_naming_the_path() {
        IndexSpec::Field("spec.rules[*].host".into()).check().unwrap();
        IndexSpec::Label("a..b".into()).check().unwrap();
        for (path, why) in [
            ("spec..host", "segment 2 is empty"),
            ("spec.rules[0", "never closed"),
            ("spec.rules[]", "'[]' selects nothing"),
        ] {
            let spec = IndexSpec::Field(path.into());
            let e = spec.check().unwrap_err();
            assert!(
                e.starts_with(&format!("the field path {path:?} cannot index: ")) && e.contains(why),
                "{e}"
            );
            assert_eq!(
                (spec.func())(&obj()).unwrap_err(),
                e,
                "the function fails as the check does"
            );
        }
    }
}
