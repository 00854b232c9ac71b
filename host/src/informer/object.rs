//! [`CachedObject`]: one version of one Kubernetes object as the cache holds
//! it: the JSON text, serialized once and shared by every reader, plus the
//! metadata parsed once. Owns the stripping policy (managedFields and the
//! last-applied annotation); knows nothing about stores or plugins.

use kube::api::{ApiResource, DynamicObject};
use kube::core::TypeMeta;
use std::sync::Arc;

/// The annotation `kubectl apply` writes; large and useless to handlers.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// A shared, immutable object version.
pub type ObjRef = Arc<CachedObject>;

/// The metadata every handler and index needs, parsed once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectMeta {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    /// Sorted by key.
    pub labels: Vec<(String, String)>,
}

/// One object version: parsed metadata plus its JSON text.
#[derive(Debug)]
pub struct CachedObject {
    pub meta: ObjectMeta,
    pub json: Box<str>,
}

/// What to strip before caching.
#[derive(Debug, Clone, Copy)]
pub struct StripPolicy {
    pub managed_fields: bool,
    pub last_applied: bool,
}

impl Default for StripPolicy {
    fn default() -> Self {
        StripPolicy {
            managed_fields: true,
            last_applied: true,
        }
    }
}

impl CachedObject {
    /// Build the cached form of a watched object. `ar` supplies apiVersion and
    /// kind, which list items do not carry.
    pub fn from_dynamic(mut obj: DynamicObject, ar: &ApiResource, strip: StripPolicy) -> ObjRef {
        if strip.managed_fields {
            obj.metadata.managed_fields = None;
        }
        if strip.last_applied
            && let Some(annotations) = obj.metadata.annotations.as_mut()
        {
            annotations.remove(LAST_APPLIED);
        }
        obj.types = Some(TypeMeta {
            api_version: ar.api_version.clone(),
            kind: ar.kind.clone(),
        });
        let json = serde_json::to_string(&obj).expect("a DynamicObject always serializes");
        let md = obj.metadata;
        let labels = md.labels.unwrap_or_default().into_iter().collect(); // BTreeMap: sorted
        Arc::new(CachedObject {
            meta: ObjectMeta {
                api_version: ar.api_version.clone(),
                kind: ar.kind.clone(),
                namespace: md.namespace,
                name: md.name.unwrap_or_default(),
                uid: md.uid.unwrap_or_default(),
                resource_version: md.resource_version.unwrap_or_default(),
                labels,
            },
            json: json.into_boxed_str(),
        })
    }

    /// The store key: `namespace/name`, or `name` when cluster-scoped.
    pub fn key(&self) -> String {
        key_of(self.meta.namespace.as_deref(), &self.meta.name)
    }

    /// One label's value.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.meta
            .labels
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .ok()
            .map(|i| self.meta.labels[i].1.as_str())
    }

    /// Bytes this entry holds on the heap (JSON, strings, labels).
    pub fn heap_bytes(&self) -> usize {
        let m = &self.meta;
        self.json.len()
            + m.api_version.len()
            + m.kind.len()
            + m.namespace.as_ref().map_or(0, String::len)
            + m.name.len()
            + m.uid.len()
            + m.resource_version.len()
            + m.labels
                .iter()
                .map(|(k, v)| k.len() + v.len() + 48)
                .sum::<usize>()
            + std::mem::size_of::<CachedObject>()
    }
}

/// client-go's `MetaNamespaceKeyFunc`.
pub fn key_of(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) if !ns.is_empty() => {
            // Not `format!`: this runs per delivery, and fmt is slow.
            let mut key = String::with_capacity(ns.len() + 1 + name.len());
            key.push_str(ns);
            key.push('/');
            key.push_str(name);
            key
        }
        _ => name.to_string(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use kube::core::GroupVersionKind;

    pub fn pod_resource() -> ApiResource {
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Pod"), "pods")
    }

    /// A pod as the cache would hold it, for unit tests.
    pub fn pod(ns: &str, name: &str, rv: u64, labels: &[(&str, &str)]) -> ObjRef {
        let labels: serde_json::Map<String, serde_json::Value> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
            .collect();
        let obj: DynamicObject = serde_json::from_value(serde_json::json!({
            "metadata": {"namespace": ns, "name": name, "uid": format!("uid-{name}"),
                         "resourceVersion": rv.to_string(), "labels": labels},
            "spec": {"nodeName": "node-1"}
        }))
        .unwrap();
        CachedObject::from_dynamic(obj, &pod_resource(), StripPolicy::default())
    }

    #[test]
    fn strips_managed_fields_and_last_applied_and_sets_type() {
        let obj: DynamicObject = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "a", "namespace": "default", "resourceVersion": "7",
                "managedFields": [{"manager": "kubectl"}],
                "annotations": {LAST_APPLIED: "{...}", "keep": "me"},
                "labels": {"b": "2", "a": "1"}},
        }))
        .unwrap();
        let c = CachedObject::from_dynamic(obj, &pod_resource(), StripPolicy::default());
        let v: serde_json::Value = serde_json::from_str(&c.json).unwrap();
        assert_eq!(v["apiVersion"], "v1");
        assert_eq!(v["kind"], "Pod");
        assert!(v["metadata"].get("managedFields").is_none());
        assert!(v["metadata"]["annotations"].get(LAST_APPLIED).is_none());
        assert_eq!(v["metadata"]["annotations"]["keep"], "me");
        assert_eq!(c.key(), "default/a");
        assert_eq!(
            c.meta.labels,
            vec![("a".into(), "1".into()), ("b".into(), "2".into())]
        );
        assert_eq!(c.label("b"), Some("2"));
        assert_eq!(c.label("c"), None);
    }

    #[test]
    fn keeps_fields_when_policy_says_so() {
        let obj: DynamicObject = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n", "managedFields": [{"manager": "x"}]},
        }))
        .unwrap();
        let keep = StripPolicy {
            managed_fields: false,
            last_applied: false,
        };
        let c = CachedObject::from_dynamic(obj, &pod_resource(), keep);
        assert!(c.json.contains("managedFields"));
        assert_eq!(c.key(), "n");
    }
}
