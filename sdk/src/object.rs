//! [`Object`]: one Kubernetes object as a handler receives it or the cache
//! returns it. It wraps a host handle (WIT `resource object`): nothing is
//! copied into the plugin until an accessor asks, and each answer is kept, so
//! asking twice crosses the boundary once. The JSON body is fetched and
//! decoded only on request.

use crate::bindings::wink::plugin::types;
use serde::de::DeserializeOwned;
use std::cell::OnceCell;
use std::mem::ManuallyDrop;

/// A Kubernetes object delivered to a handler or returned by the cache.
///
/// In a handler it is lent for the duration of the call; `clone()` it to keep
/// it longer (the clone is an owned handle to the same object version).
pub struct Object {
    handle: ManuallyDrop<types::Object>,
    /// Whether this value owns `handle` (and drops it), or borrows it from a
    /// handler call.
    owned: bool,
    name: OnceCell<String>,
    namespace: OnceCell<Option<String>>,
    uid: OnceCell<String>,
    resource_version: OnceCell<String>,
    meta: OnceCell<types::ObjectMeta>,
    json: OnceCell<String>,
}

impl Object {
    fn new(handle: types::Object, owned: bool) -> Self {
        Object {
            handle: ManuallyDrop::new(handle),
            owned,
            name: OnceCell::new(),
            namespace: OnceCell::new(),
            uid: OnceCell::new(),
            resource_version: OnceCell::new(),
            meta: OnceCell::new(),
            json: OnceCell::new(),
        }
    }

    /// An object the plugin owns (a cache answer).
    #[doc(hidden)]
    pub fn from_owned(handle: types::Object) -> Self {
        Object::new(handle, true)
    }

    /// An object lent by the host for one handler call.
    ///
    /// # Safety
    /// `handle` must be a borrowed handle valid until this value is dropped,
    /// which must happen before the handler call returns.
    #[doc(hidden)]
    pub unsafe fn lent(handle: u32) -> Self {
        // SAFETY: the caller guarantees the borrow outlives this value, and
        // `owned: false` keeps it from being dropped as if it were ours.
        Object::new(unsafe { types::Object::from_handle(handle) }, false)
    }

    /// `apiVersion`, e.g. `apps/v1`.
    pub fn api_version(&self) -> &str {
        &self.meta().api_version
    }

    /// `kind`, e.g. `Pod`.
    pub fn kind(&self) -> &str {
        &self.meta().kind
    }

    /// `metadata.namespace`, none when cluster-scoped.
    pub fn namespace(&self) -> Option<&str> {
        match self.meta.get() {
            Some(m) => m.namespace.as_deref(),
            None => self.namespace.get_or_init(|| self.handle.namespace()).as_deref(),
        }
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        match self.meta.get() {
            Some(m) => &m.name,
            None => self.name.get_or_init(|| self.handle.name()),
        }
    }

    /// `metadata.uid`.
    pub fn uid(&self) -> &str {
        match self.meta.get() {
            Some(m) => &m.uid,
            None => self.uid.get_or_init(|| self.handle.uid()),
        }
    }

    /// `metadata.resourceVersion` (opaque: compare for equality only).
    pub fn resource_version(&self) -> &str {
        match self.meta.get() {
            Some(m) => &m.resource_version,
            None => self
                .resource_version
                .get_or_init(|| self.handle.resource_version()),
        }
    }

    /// The cache key: `namespace/name`, or `name` when cluster-scoped.
    pub fn key(&self) -> String {
        match self.namespace() {
            Some(ns) => format!("{ns}/{}", self.name()),
            None => self.name().to_string(),
        }
    }

    /// `metadata.labels` as (key, value) pairs sorted by key.
    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        self.meta().labels.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// One label's value.
    pub fn label(&self, key: &str) -> Option<&str> {
        let labels = &self.meta().labels;
        labels
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .ok()
            .map(|i| labels[i].1.as_str())
    }

    /// The whole object as JSON text.
    pub fn json(&self) -> &str {
        self.json.get_or_init(|| self.handle.json())
    }

    /// Decode the whole object into a typed value, e.g.
    /// `k8s_openapi::api::core::v1::Pod` or a struct of your own.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.json())
    }

    /// All metadata in one crossing, fetched on first use.
    fn meta(&self) -> &types::ObjectMeta {
        self.meta.get_or_init(|| self.handle.meta())
    }
}

impl Clone for Object {
    /// An owned handle to the same object version; what was already fetched
    /// is copied along.
    fn clone(&self) -> Self {
        Object {
            handle: ManuallyDrop::new(self.handle.duplicate()),
            owned: true,
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            uid: self.uid.clone(),
            resource_version: self.resource_version.clone(),
            meta: self.meta.clone(),
            json: self.json.clone(),
        }
    }
}

impl Drop for Object {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: dropped once, here; an owned handle is ours to release.
            unsafe { ManuallyDrop::drop(&mut self.handle) }
        }
    }
}

impl std::fmt::Debug for Object {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Object")
            .field("key", &self.key())
            .field("resource_version", &self.resource_version())
            .finish()
    }
}
