//! [`CachedObject`]: one version of one Kubernetes object as the cache holds
//! it: the JSON text, serialized once and shared by every reader, plus where
//! its metadata strings are in that text (located once), so each string is
//! held once. With compression on (the default) the JSON is held as an LZ4
//! block and the metadata strings beside it, uncompressed, so keys, metadata
//! reads, label and namespace indexes and plugin handles never decompress.
//! Owns the caching policy (managedFields and the last-applied annotation
//! stripped, compression); the metadata's representation is in `meta`.
//! Knows nothing about stores or plugins.

mod gate;
mod meta;
mod raw;

pub use gate::CompressionGate;
pub use raw::RawObject;

use kube::api::{ApiResource, DynamicObject};
use kube::core::TypeMeta;
use meta::{Meta, OwnedMeta, Span};
use std::borrow::Cow;
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

/// One object version: its JSON, and its metadata as ranges of a text.
/// Each string is held once.
#[derive(Debug)]
pub struct CachedObject {
    body: Body,
    type_name: Arc<TypeName>,
    meta: Meta,
}

/// The JSON as held.
#[derive(Debug)]
enum Body {
    /// The JSON text; the metadata spans index it.
    Plain(Box<str>),
    /// The JSON as one LZ4 block of `len` bytes once decompressed, and the
    /// metadata strings (what the spans index) apart from it.
    Compressed {
        lz4: Box<[u8]>,
        len: u32,
        meta: Box<str>,
    },
}

/// How objects are cached: what is stripped first, and whether the JSON is
/// compressed.
#[derive(Debug, Clone, Copy)]
pub struct CachePolicy {
    /// Drop `metadata.managedFields`.
    pub managed_fields: bool,
    /// Drop the `kubectl.kubernetes.io/last-applied-configuration` annotation.
    pub last_applied: bool,
    /// Hold the JSON compressed (LZ4): 0.63 x the JSON's bytes for a real
    /// cluster's Pod instead of 1.03 x, for a few µs per event and ~2 µs per
    /// whole-object read (`json()`). An object whose JSON does not shrink by
    /// a ninth is held plain.
    pub compress: bool,
}

impl Default for CachePolicy {
    fn default() -> Self {
        CachePolicy {
            managed_fields: true,
            last_applied: true,
            compress: true,
        }
    }
}

fn decompress(lz4: &[u8], len: u32) -> String {
    let bytes =
        lz4_flex::block::decompress(lz4, len as usize).expect("a block this process compressed decompresses");
    String::from_utf8(bytes).expect("the block holds the JSON text it was made from")
}

impl CachedObject {
    /// Build the cached form of a watched object. `ar` supplies apiVersion and
    /// kind, which list items do not carry.
    pub fn from_dynamic(obj: DynamicObject, ar: &ApiResource, policy: CachePolicy) -> ObjRef {
        Self::from_dynamic_typed(obj, &TypeName::of(ar), policy)
    }

    /// [`CachedObject::from_dynamic`] with the informer's shared type name.
    pub fn from_dynamic_typed(
        mut obj: DynamicObject,
        type_name: &Arc<TypeName>,
        policy: CachePolicy,
    ) -> ObjRef {
        if policy.managed_fields {
            obj.metadata.managed_fields = None;
        }
        if policy.last_applied
            && let Some(annotations) = obj.metadata.annotations.as_mut()
        {
            annotations.remove(LAST_APPLIED);
        }
        obj.types = Some(TypeMeta {
            api_version: type_name.api_version.clone(),
            kind: type_name.kind.clone(),
        });
        let json = serde_json::to_string(&obj).expect("a DynamicObject always serializes");
        Self::from_text(json, None, type_name, policy)
    }

    /// Build the cached form of an object the watcher decoded as text: the
    /// text is used as it is, or rewritten at its top level (see `raw`),
    /// never parsed into a tree (unless its keys are escaped).
    pub fn from_raw(obj: RawObject, type_name: &Arc<TypeName>, policy: CachePolicy) -> ObjRef {
        let (meta, managed_fields) = match obj.found {
            Some(found) => (Some(found.meta), found.managed_fields),
            None => (None, None),
        };
        let types = obj.types.as_ref();
        match raw::cached_text(obj.json, types, obj.untyped, managed_fields, type_name, policy) {
            Ok(raw::Cached::AsSent(json)) => Self::from_text(json, meta, type_name, policy),
            Ok(raw::Cached::Cut(json, cut)) => {
                Self::from_text(json, meta.map(|m| m.after_cut(cut)), type_name, policy)
            }
            Ok(raw::Cached::Rewritten(json)) => Self::from_text(json, None, type_name, policy),
            Err(json) => {
                let obj: DynamicObject =
                    serde_json::from_str(&json).expect("the watcher decoded this text as an object");
                Self::from_dynamic_typed(obj, type_name, policy)
            }
        }
    }

    /// The cached form of `json`, the final text, whose metadata is
    /// `located` when the decoding found it already.
    fn from_text(
        json: String,
        located: Option<Meta>,
        type_name: &Arc<TypeName>,
        policy: CachePolicy,
    ) -> ObjRef {
        let mut meta = located.unwrap_or_else(|| Meta::locate(&json));
        // Text that does not compress (random payloads, already-encoded
        // data) is held plain: its metadata then needs no copy of its own.
        let lz4 = policy
            .compress
            .then(|| lz4_flex::block::compress(json.as_bytes()))
            .filter(|lz4| lz4.len() + lz4.len() / 8 < json.len());
        let body = match lz4 {
            Some(lz4) => Body::Compressed {
                lz4: lz4.into_boxed_slice(),
                len: json.len() as u32,
                meta: meta.relocate(&json),
            },
            None => Body::Plain(json.into_boxed_str()),
        };
        Arc::new(CachedObject {
            body,
            type_name: type_name.clone(),
            meta,
        })
    }

    /// The text the metadata spans index.
    fn text(&self) -> &str {
        match &self.body {
            Body::Plain(json) => json,
            Body::Compressed { meta, .. } => meta,
        }
    }

    fn at(&self, span: Span) -> &str {
        &self.text()[span.start as usize..span.end as usize]
    }

    /// The whole object as JSON text (apiVersion and kind included):
    /// borrowed when held plain, decompressed when held compressed.
    pub fn json(&self) -> Cow<'_, str> {
        match &self.body {
            Body::Plain(json) => Cow::Borrowed(json),
            Body::Compressed { lz4, len, .. } => Cow::Owned(decompress(lz4, *len)),
        }
    }

    /// The length of [`CachedObject::json`] in bytes.
    pub fn json_len(&self) -> usize {
        match &self.body {
            Body::Plain(json) => json.len(),
            Body::Compressed { len, .. } => *len as usize,
        }
    }

    /// Whether the JSON is held compressed.
    pub fn is_compressed(&self) -> bool {
        matches!(self.body, Body::Compressed { .. })
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

    /// `metadata.generation`, 0 when the object has none (the API server
    /// sets it from 1 on every object whose spec it versions).
    pub fn generation(&self) -> i64 {
        match &self.meta {
            Meta::Spans {
                generation: meta::GENERATION_ELSEWHERE,
                ..
            } => serde_json::from_str::<serde_json::Value>(&self.json())
                .ok()
                .and_then(|v| {
                    v.pointer("/metadata/generation")
                        .and_then(serde_json::Value::as_i64)
                })
                .unwrap_or(0),
            Meta::Spans { generation, .. } => i64::from(*generation),
            Meta::Owned(m) => m.generation,
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

    /// Bytes this entry holds on the heap: the JSON (or its LZ4 block and
    /// the metadata strings), the entry itself, and the label ranges (or the
    /// strings, for an object whose metadata had to be unescaped).
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
        let body = match &self.body {
            Body::Plain(json) => json.len(),
            Body::Compressed { lz4, meta, .. } => lz4.len() + meta.len(),
        };
        body + meta + std::mem::size_of::<CachedObject>()
    }
}

impl wink_selector::Labels for CachedObject {
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
        CachedObject::from_dynamic(obj, &pod_resource(), CachePolicy::default())
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
        let c = CachedObject::from_dynamic(obj, &pod_resource(), CachePolicy::default());
        let v: serde_json::Value = serde_json::from_str(&c.json()).unwrap();
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

    const PLAIN: CachePolicy = CachePolicy {
        managed_fields: true,
        last_applied: true,
        compress: false,
    };

    #[test]
    fn metadata_is_sliced_from_the_json_or_kept_apart_when_escaped() {
        let obj: DynamicObject = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "3",
                         "labels": {"app": "web"}, "generation": 4},
        }))
        .unwrap();
        let plain = CachedObject::from_dynamic(obj, &pod_resource(), PLAIN);
        assert!(matches!(plain.meta, Meta::Spans { .. }));
        assert_eq!(plain.generation(), 4);
        assert!(matches!(plain.json(), Cow::Borrowed(_)));
        // A JSON escape (not valid in a real name) cannot be sliced out.
        let obj: DynamicObject = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "we\"ird", "namespace": "ns", "uid": "u", "resourceVersion": "9",
                         "labels": {"k": "v"}, "generation": 7},
            "spec": {"pad": "a".repeat(400)},
        }))
        .unwrap();
        let odd = CachedObject::from_dynamic(obj, &pod_resource(), PLAIN);
        assert!(matches!(odd.meta, Meta::Owned(_)));
        assert_eq!(
            (odd.name(), odd.namespace(), odd.uid()),
            ("we\"ird", Some("ns"), "u")
        );
        assert_eq!(
            (odd.resource_version(), odd.label("k"), odd.generation()),
            ("9", Some("v"), 7)
        );
        assert_eq!(odd.key(), "ns/we\"ird");
        // Compressed, the escaped strings are kept apart the same way.
        let obj: DynamicObject = serde_json::from_str(&odd.json()).unwrap();
        let packed = CachedObject::from_dynamic(obj, &pod_resource(), CachePolicy::default());
        assert!(packed.is_compressed() && matches!(packed.meta, Meta::Owned(_)));
        // Text that would not shrink is held plain even when compressing.
        let tiny: DynamicObject =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "t", "uid": "u"}})).unwrap();
        assert!(!CachedObject::from_dynamic(tiny, &pod_resource(), CachePolicy::default()).is_compressed());
        assert_eq!(
            (packed.key(), packed.label("k"), packed.generation()),
            (odd.key(), Some("v"), 7)
        );
        let none: DynamicObject =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "n"}})).unwrap();
        assert_eq!(
            CachedObject::from_dynamic(none, &pod_resource(), PLAIN).generation(),
            0
        );
        // A generation past 4 bytes is read from the JSON, plain or compressed.
        for policy in [PLAIN, CachePolicy::default()] {
            let big = |g: i64| {
                let obj: DynamicObject = serde_json::from_value(serde_json::json!({
                    "metadata": {"name": "b", "uid": "u", "generation": g}, "spec": {"pad": "a".repeat(400)}}))
                .unwrap();
                CachedObject::from_dynamic(obj, &pod_resource(), policy).generation()
            };
            for g in [i64::from(u32::MAX) - 1, i64::from(u32::MAX), 1 << 40] {
                assert_eq!(big(g), g);
            }
        }
        // The generation sits in what was padding: the metadata's size is
        // that of its spans and labels alone.
        #[cfg(target_pointer_width = "64")]
        assert_eq!(std::mem::size_of::<Meta>(), 56);
        assert_eq!(packed.json(), odd.json());
        // Held once: the plain object's entry is its JSON plus a fixed part.
        assert!(
            plain.heap_bytes() < plain.json_len() + 128,
            "{}",
            plain.heap_bytes()
        );
    }

    /// A pod of a realistic size: four containers with env, resources, ports.
    fn big_pod(policy: CachePolicy, name: &str) -> ObjRef {
        let containers: Vec<serde_json::Value> = (0..4)
            .map(|c| {
                serde_json::json!({"name": format!("c{c}"), "image": format!("registry.example.com/app-{c}:v1"),
                    "env": (0..6).map(|e| serde_json::json!({"name": format!("ENV_{e}"), "value": format!("v{e}")})).collect::<Vec<_>>(),
                    "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}}})
            })
            .collect();
        let obj: DynamicObject = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "team-a", "uid": "0b1c-77", "resourceVersion": "1234",
                         "labels": {"app": "web", "tier": "front", "pod-template-hash": "5d8f7c"}},
            "spec": {"nodeName": "node-1", "containers": containers},
            "status": {"phase": "Running"}
        }))
        .unwrap();
        CachedObject::from_dynamic(obj, &pod_resource(), policy)
    }

    #[test]
    fn a_compressed_object_reads_exactly_like_a_plain_one_in_fewer_bytes() {
        let plain = big_pod(PLAIN, "web-1");
        let packed = big_pod(CachePolicy::default(), "web-1");
        assert!(packed.is_compressed() && !plain.is_compressed());
        assert_eq!(packed.json(), plain.json());
        assert_eq!(packed.json_len(), plain.json_len());
        assert_eq!(
            (packed.key(), packed.uid(), packed.resource_version()),
            (plain.key(), plain.uid(), plain.resource_version())
        );
        assert_eq!(
            packed.labels().collect::<Vec<_>>(),
            plain.labels().collect::<Vec<_>>()
        );
        assert_eq!(packed.label("tier"), Some("front"));
        assert!(
            packed.heap_bytes() < plain.json_len(),
            "{} B held for {} B of JSON",
            packed.heap_bytes(),
            plain.json_len()
        );
        // Each object decompresses to its own text.
        let other = big_pod(CachePolicy::default(), "web-2");
        assert!(other.json().contains("\"web-2\""));
        assert_eq!(packed.json(), plain.json());
    }

    #[test]
    fn keeps_fields_when_policy_says_so() {
        let obj: DynamicObject = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n", "managedFields": [{"manager": "x"}]},
        }))
        .unwrap();
        let keep = CachePolicy {
            managed_fields: false,
            last_applied: false,
            compress: true,
        };
        let c = CachedObject::from_dynamic(obj, &pod_resource(), keep);
        assert!(c.json().contains("managedFields"));
        assert_eq!(c.key(), "n");
    }
}
