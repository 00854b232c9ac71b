//! Queries against the host's informer cache (never the API server).
//!
//! A plugin may query the resources it watches or declared with
//! [`Registration::read`](crate::Registration::read). Errors are values
//! ([`Error`]), never traps. Typed helpers decode into any [`Kind`]
//! (every `k8s-openapi` type with the `k8s-openapi` feature); the `*_objects`
//! functions return [`Object`]s whose metadata needs no parsing.
//!
//! ```no_run
//! # #[cfg(feature = "k8s-openapi")] {
//! use k8s_openapi::api::apps::v1::Deployment;
//! use k8s_openapi::api::core::v1::Pod;
//! use wink_sdk::cache::{self, Selector};
//!
//! let web: Option<Deployment> = cache::get("default/web").unwrap();
//! let owned: Vec<Pod> = cache::by_index("owner", "uid-of-a-replicaset").unwrap();
//! let front: Vec<Pod> = cache::list(Some("default"), &Selector::new().eq("tier", "front")).unwrap();
//! # }
//! ```

use crate::bindings::wink::plugin::cache as wit;
use crate::{Kind, Object, Resource};
use serde::de::DeserializeOwned;

pub use crate::bindings::wink::plugin::types::CacheError;

/// A failed typed query.
#[derive(Debug)]
pub enum Error {
    /// The host refused or could not answer.
    Cache(CacheError),
    /// The answer did not decode into the requested type.
    Decode(serde_json::Error),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Cache(e) => write!(f, "cache query failed: {e:?}"),
            Error::Decode(e) => write!(f, "cannot decode cached object: {e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<CacheError> for Error {
    fn from(e: CacheError) -> Self {
        Error::Cache(e)
    }
}

fn decode_all<K: DeserializeOwned>(objects: Vec<Object>) -> Result<Vec<K>, Error> {
    objects
        .iter()
        .map(|o| o.decode().map_err(Error::Decode))
        .collect()
}

/// A label selector builder: `Selector::new().eq("app", "web").not_in("tier", ["db"])`.
#[derive(Debug, Clone, Default)]
pub struct Selector {
    parts: Vec<String>,
}

impl Selector {
    /// Matches everything.
    pub fn new() -> Self {
        Self::default()
    }
    /// `key=value`.
    pub fn eq(mut self, key: &str, value: &str) -> Self {
        self.parts.push(format!("{key}={value}"));
        self
    }
    /// `key!=value`.
    pub fn ne(mut self, key: &str, value: &str) -> Self {
        self.parts.push(format!("{key}!={value}"));
        self
    }
    /// `key in (v1,v2)`.
    pub fn is_in<'a>(mut self, key: &str, values: impl IntoIterator<Item = &'a str>) -> Self {
        self.parts.push(format!(
            "{key} in ({})",
            values.into_iter().collect::<Vec<_>>().join(",")
        ));
        self
    }
    /// `key notin (v1,v2)`.
    pub fn not_in<'a>(mut self, key: &str, values: impl IntoIterator<Item = &'a str>) -> Self {
        self.parts.push(format!(
            "{key} notin ({})",
            values.into_iter().collect::<Vec<_>>().join(",")
        ));
        self
    }
    /// `key` (the label exists).
    pub fn exists(mut self, key: &str) -> Self {
        self.parts.push(key.to_string());
        self
    }
    /// `!key` (the label does not exist).
    pub fn missing(mut self, key: &str) -> Self {
        self.parts.push(format!("!{key}"));
        self
    }
    /// The selector in Kubernetes syntax.
    pub fn to_selector_string(&self) -> String {
        self.parts.join(",")
    }
}

/// The cached object of kind `K` under `key`, decoded.
pub fn get<K: Kind + DeserializeOwned>(key: &str) -> Result<Option<K>, Error> {
    match get_object(&Resource::of::<K>(), key)? {
        Some(o) => o.decode().map(Some).map_err(Error::Decode),
        None => Ok(None),
    }
}

/// Cached objects of kind `K`, optionally in one namespace, matching `selector`.
pub fn list<K: Kind + DeserializeOwned>(
    namespace: Option<&str>,
    selector: &Selector,
) -> Result<Vec<K>, Error> {
    let s = selector.to_selector_string();
    decode_all(list_objects(&Resource::of::<K>(), namespace, Some(&s))?)
}

/// Cached objects of kind `K` whose index `index` holds `value`, decoded.
pub fn by_index<K: Kind + DeserializeOwned>(index: &str, value: &str) -> Result<Vec<K>, Error> {
    decode_all(by_index_objects(&Resource::of::<K>(), index, value)?)
}

/// The cached object under `key` (`namespace/name` or `name`).
pub fn get_object(resource: &Resource, key: &str) -> Result<Option<Object>, CacheError> {
    Ok(wit::get(resource.as_wit(), key)?.map(|o| Object::from_owned(o, Some(key.to_string()))))
}

/// Every cached object of `resource`, optionally in one namespace and
/// matching a label selector (Kubernetes syntax), sorted by key.
pub fn list_objects(
    resource: &Resource,
    namespace: Option<&str>,
    label_selector: Option<&str>,
) -> Result<Vec<Object>, CacheError> {
    Ok(Object::from_answer(wit::list(
        resource.as_wit(),
        namespace,
        label_selector,
    )?))
}

/// Objects whose index `index` holds `value`, sorted by key.
pub fn by_index_objects(resource: &Resource, index: &str, value: &str) -> Result<Vec<Object>, CacheError> {
    Ok(Object::from_answer(wit::by_index(
        resource.as_wit(),
        index,
        value,
    )?))
}

/// Keys whose index `index` holds `value`, sorted.
pub fn index_keys(resource: &Resource, index: &str, value: &str) -> Result<Vec<String>, CacheError> {
    let keys = wit::index_keys(resource.as_wit(), index, value)?;
    Ok(keys.lines().map(str::to_string).collect())
}

/// Every value index `index` holds, sorted.
pub fn list_index_values(resource: &Resource, index: &str) -> Result<Vec<String>, CacheError> {
    wit::list_index_values(resource.as_wit(), index)
}
