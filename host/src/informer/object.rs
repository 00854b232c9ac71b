//! [`CachedObject`]: one version of one Kubernetes object as the cache holds
//! it: the JSON text, serialized once and shared by every reader, plus where
//! its metadata strings are in that text (located once), so each string is
//! held once. Owns the stripping policy (managedFields and the
//! last-applied annotation); knows nothing about stores or plugins.

use kube::api::{ApiResource, DynamicObject};
use kube::core::TypeMeta;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The annotation `kubectl apply` writes; large and useless to handlers.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// A shared, immutable object version.
pub type ObjRef = Arc<CachedObject>;

/// An object's apiVersion and kind, shared by every object of an informer.
#[derive(Debug, PartialEq, Eq)]
pub struct TypeName {
    pub api_version: String,
    pub kind: String,
}

impl TypeName {
    /// The type of the objects of `ar`.
    pub fn of(ar: &ApiResource) -> Arc<TypeName> {
        Arc::new(TypeName {
            api_version: ar.api_version.clone(),
            kind: ar.kind.clone(),
        })
    }
}

/// A byte range of an object's JSON text that holds one string value.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: u32,
    end: u32,
}

/// Where the metadata strings are: byte ranges of the JSON text (always, for
/// valid Kubernetes objects), or their own strings when one was escaped in
/// the JSON and so cannot be sliced out of it.
#[derive(Debug)]
enum Meta {
    Spans {
        namespace: Option<Span>,
        name: Span,
        uid: Span,
        resource_version: Span,
        /// Sorted by key.
        labels: Box<[(Span, Span)]>,
    },
    Owned(Box<OwnedMeta>),
}

#[derive(Debug)]
struct OwnedMeta {
    namespace: Option<String>,
    name: String,
    uid: String,
    resource_version: String,
    /// Sorted by key.
    labels: Vec<(String, String)>,
}

/// The metadata strings as slices of the JSON text; deserializing fails if
/// one of them was escaped there.
#[derive(serde::Deserialize)]
struct SlicedMeta<'a> {
    #[serde(borrow, default)]
    namespace: Option<&'a str>,
    #[serde(borrow, default)]
    name: Option<&'a str>,
    #[serde(borrow, default)]
    uid: Option<&'a str>,
    #[serde(borrow, default, rename = "resourceVersion")]
    resource_version: Option<&'a str>,
    #[serde(borrow, default)]
    labels: Option<BTreeMap<&'a str, &'a str>>,
}

/// The same metadata, unescaped into owned strings.
#[derive(serde::Deserialize)]
struct UnescapedMeta {
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    uid: Option<String>,
    #[serde(default, rename = "resourceVersion")]
    resource_version: Option<String>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
}

#[derive(serde::Deserialize)]
struct Top<M> {
    metadata: M,
}

/// One object version: its JSON text, and its metadata as ranges of it.
/// Each string is held once: in the JSON.
#[derive(Debug)]
pub struct CachedObject {
    pub json: Box<str>,
    type_name: Arc<TypeName>,
    meta: Meta,
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

impl Meta {
    /// Locate the metadata in `json`.
    fn locate(json: &str) -> Meta {
        let base = json.as_ptr() as usize;
        let span = |v: &str| {
            let start = (v.as_ptr() as usize - base) as u32;
            Span {
                start,
                end: start + v.len() as u32,
            }
        };
        let empty = Span { start: 0, end: 0 };
        if let Ok(Top { metadata: m }) = serde_json::from_str::<Top<SlicedMeta<'_>>>(json) {
            return Meta::Spans {
                namespace: m.namespace.map(span),
                name: m.name.map_or(empty, span),
                uid: m.uid.map_or(empty, span),
                resource_version: m.resource_version.map_or(empty, span),
                labels: m
                    .labels
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (span(k), span(v)))
                    .collect(),
            };
        }
        let m = serde_json::from_str::<Top<UnescapedMeta>>(json)
            .expect("the JSON was just serialized from an object with metadata")
            .metadata;
        Meta::Owned(Box::new(OwnedMeta {
            namespace: m.namespace,
            name: m.name.unwrap_or_default(),
            uid: m.uid.unwrap_or_default(),
            resource_version: m.resource_version.unwrap_or_default(),
            labels: m.labels.unwrap_or_default().into_iter().collect(),
        }))
    }
}

impl CachedObject {
    /// Build the cached form of a watched object. `ar` supplies apiVersion and
    /// kind, which list items do not carry.
    pub fn from_dynamic(obj: DynamicObject, ar: &ApiResource, strip: StripPolicy) -> ObjRef {
        Self::from_dynamic_typed(obj, &TypeName::of(ar), strip)
    }

    /// [`CachedObject::from_dynamic`] with the informer's shared type name.
    pub fn from_dynamic_typed(
        mut obj: DynamicObject,
        type_name: &Arc<TypeName>,
        strip: StripPolicy,
    ) -> ObjRef {
        if strip.managed_fields {
            obj.metadata.managed_fields = None;
        }
        if strip.last_applied
            && let Some(annotations) = obj.metadata.annotations.as_mut()
        {
            annotations.remove(LAST_APPLIED);
        }
        obj.types = Some(TypeMeta {
            api_version: type_name.api_version.clone(),
            kind: type_name.kind.clone(),
        });
        let json = serde_json::to_string(&obj).expect("a DynamicObject always serializes");
        let meta = Meta::locate(&json);
        Arc::new(CachedObject {
            json: json.into_boxed_str(),
            type_name: type_name.clone(),
            meta,
        })
    }

    fn at(&self, span: Span) -> &str {
        &self.json[span.start as usize..span.end as usize]
    }

    /// `apiVersion`.
    pub fn api_version(&self) -> &str {
        &self.type_name.api_version
    }

    /// `kind`.
    pub fn kind(&self) -> &str {
        &self.type_name.kind
    }

    /// `metadata.namespace`; none for cluster-scoped objects.
    pub fn namespace(&self) -> Option<&str> {
        match &self.meta {
            Meta::Spans { namespace, .. } => namespace.map(|s| self.at(s)),
            Meta::Owned(m) => m.namespace.as_deref(),
        }
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        match &self.meta {
            Meta::Spans { name, .. } => self.at(*name),
            Meta::Owned(m) => &m.name,
        }
    }

    /// `metadata.uid`.
    pub fn uid(&self) -> &str {
        match &self.meta {
            Meta::Spans { uid, .. } => self.at(*uid),
            Meta::Owned(m) => &m.uid,
        }
    }

    /// `metadata.resourceVersion`.
    pub fn resource_version(&self) -> &str {
        match &self.meta {
            Meta::Spans { resource_version, .. } => self.at(*resource_version),
            Meta::Owned(m) => &m.resource_version,
        }
    }

    /// `metadata.labels` as (key, value) pairs, sorted by key.
    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        (0..self.label_count()).map(|i| self.label_at(i))
    }

    fn label_count(&self) -> usize {
        match &self.meta {
            Meta::Spans { labels, .. } => labels.len(),
            Meta::Owned(m) => m.labels.len(),
        }
    }

    fn label_at(&self, i: usize) -> (&str, &str) {
        match &self.meta {
            Meta::Spans { labels, .. } => (self.at(labels[i].0), self.at(labels[i].1)),
            Meta::Owned(m) => (&m.labels[i].0, &m.labels[i].1),
        }
    }

    /// The store key: `namespace/name`, or `name` when cluster-scoped.
    pub fn key(&self) -> String {
        key_of(self.namespace(), self.name())
    }

    /// One label's value.
    pub fn label(&self, key: &str) -> Option<&str> {
        let (mut lo, mut hi) = (0, self.label_count());
        while lo < hi {
            let mid = (lo + hi) / 2;
            let (k, v) = self.label_at(mid);
            match k.cmp(key) {
                std::cmp::Ordering::Equal => return Some(v),
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
            }
        }
        None
    }

    /// Bytes this entry holds on the heap: the JSON, the entry itself, and
    /// the label ranges (or the strings, for an object whose metadata had to
    /// be unescaped).
    pub fn heap_bytes(&self) -> usize {
        let meta = match &self.meta {
            Meta::Spans { labels, .. } => labels.len() * std::mem::size_of::<(Span, Span)>(),
            Meta::Owned(m) => {
                std::mem::size_of::<OwnedMeta>()
                    + m.namespace.as_ref().map_or(0, String::len)
                    + m.name.len()
                    + m.uid.len()
                    + m.resource_version.len()
                    + m.labels
                        .iter()
                        .map(|(k, v)| k.len() + v.len() + 48)
                        .sum::<usize>()
            }
        };
        self.json.len() + meta + std::mem::size_of::<CachedObject>()
    }
}

impl crate::selector::Labels for CachedObject {
    fn label(&self, key: &str) -> Option<&str> {
        CachedObject::label(self, key)
    }
}

/// client-go's `MetaNamespaceKeyFunc`.
pub fn key_of(namespace: Option<&str>, name: &str) -> String {
    // Not `format!`: this runs per delivery, and fmt is slow.
    let mut key = String::with_capacity(namespace.map_or(0, |ns| ns.len() + 1) + name.len());
    push_key_of(&mut key, namespace, name);
    key
}

/// Append [`key_of`]`(namespace, name)` to `out`.
pub fn push_key_of(out: &mut String, namespace: Option<&str>, name: &str) {
    if let Some(ns) = namespace.filter(|ns| !ns.is_empty()) {
        out.push_str(ns);
        out.push('/');
    }
    out.push_str(name);
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
        assert_eq!(c.labels().collect::<Vec<_>>(), vec![("a", "1"), ("b", "2")]);
        assert_eq!(
            (c.name(), c.namespace(), c.resource_version()),
            ("a", Some("default"), "7")
        );
        assert_eq!(c.label("b"), Some("2"));
        assert_eq!(c.label("c"), None);
    }

    #[test]
    fn metadata_is_sliced_from_the_json_or_kept_apart_when_escaped() {
        let plain = pod("ns", "p", 3, &[("app", "web")]);
        assert!(matches!(plain.meta, Meta::Spans { .. }));
        // A JSON escape (not valid in a real name) cannot be sliced out.
        let obj: DynamicObject = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "we\"ird", "namespace": "ns", "uid": "u", "resourceVersion": "9",
                         "labels": {"k": "v"}},
        }))
        .unwrap();
        let odd = CachedObject::from_dynamic(obj, &pod_resource(), StripPolicy::default());
        assert!(matches!(odd.meta, Meta::Owned(_)));
        assert_eq!(
            (odd.name(), odd.namespace(), odd.uid()),
            ("we\"ird", Some("ns"), "u")
        );
        assert_eq!((odd.resource_version(), odd.label("k")), ("9", Some("v")));
        assert_eq!(odd.key(), "ns/we\"ird");
        // Held once: the plain object's entry is its JSON plus a fixed part.
        assert!(
            plain.heap_bytes() < plain.json.len() + 128,
            "{}",
            plain.heap_bytes()
        );
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
