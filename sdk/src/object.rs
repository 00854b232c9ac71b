//! [`Object`]: one Kubernetes object as a handler receives it. Metadata is
//! already parsed by the host; the JSON body is decoded only on request.

use crate::bindings::wink::plugin::types;
use serde::de::DeserializeOwned;

/// A Kubernetes object delivered to a handler or returned by the cache.
#[derive(Debug, Clone)]
pub struct Object {
    inner: types::Object,
}

impl Object {
    #[doc(hidden)]
    pub fn from_wit(inner: types::Object) -> Self {
        Object { inner }
    }

    /// `apiVersion`, e.g. `apps/v1`.
    pub fn api_version(&self) -> &str {
        &self.inner.meta.api_version
    }

    /// `kind`, e.g. `Pod`.
    pub fn kind(&self) -> &str {
        &self.inner.meta.kind
    }

    /// `metadata.namespace`, none when cluster-scoped.
    pub fn namespace(&self) -> Option<&str> {
        self.inner.meta.namespace.as_deref()
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        &self.inner.meta.name
    }

    /// `metadata.uid`.
    pub fn uid(&self) -> &str {
        &self.inner.meta.uid
    }

    /// `metadata.resourceVersion` (opaque: compare for equality only).
    pub fn resource_version(&self) -> &str {
        &self.inner.meta.resource_version
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
        self.inner
            .meta
            .labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// One label's value.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.inner
            .meta
            .labels
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .ok()
            .map(|i| self.inner.meta.labels[i].1.as_str())
    }

    /// The whole object as JSON text.
    pub fn json(&self) -> &str {
        &self.inner.json
    }

    /// Decode the whole object into a typed value, e.g.
    /// `k8s_openapi::api::core::v1::Pod` or a struct of your own.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.inner.json)
    }
}
