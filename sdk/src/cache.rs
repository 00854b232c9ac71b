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
//! let same: Vec<Pod> = cache::list(Some("default"), "tier=front").unwrap();
//! # }
//! ```

use crate::bindings::wink::plugin::cache as wit;
use crate::{Kind, Object, Resource};
use serde::de::DeserializeOwned;

pub use crate::bindings::wink::plugin::types::CacheError;
pub use crate::selector::Selector;

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

/// The cached object of kind `K` under `key`, decoded.
pub fn get<K: Kind + DeserializeOwned>(key: &str) -> Result<Option<K>, Error> {
    match get_object(&Resource::of::<K>(), key)? {
        Some(o) => o.decode().map(Some).map_err(Error::Decode),
        None => Ok(None),
    }
}

/// Cached objects of kind `K`, optionally in one namespace, matching
/// `selector` (a [`Selector`], `&str` or `Option<&str>`: see [`Selector`]).
pub fn list<K: Kind + DeserializeOwned>(
    namespace: Option<&str>,
    selector: impl Into<Selector>,
) -> Result<Vec<K>, Error> {
    decode_all(list_objects(&Resource::of::<K>(), namespace, selector)?)
}

/// The first, in key order, of the cached objects of kind `K` that
/// [`list`] would answer, decoded; `None` when nothing matches. Asks
/// whether anything matches without building the list.
pub fn first<K: Kind + DeserializeOwned>(
    namespace: Option<&str>,
    selector: impl Into<Selector>,
) -> Result<Option<K>, Error> {
    match first_object(&Resource::of::<K>(), namespace, selector)? {
        Some(o) => o.decode().map(Some).map_err(Error::Decode),
        None => Ok(None),
    }
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
/// matching a label selector, sorted by key. The selector is anything that
/// converts into a [`Selector`]: `None`, `Some("app=web")`, `"app=web"`,
/// `&Selector::new().eq("app", "web")`.
pub fn list_objects(
    resource: &Resource,
    namespace: Option<&str>,
    label_selector: impl Into<Selector>,
) -> Result<Vec<Object>, CacheError> {
    let selector = label_selector.into().into_query();
    Ok(Object::from_answer(wit::list(
        resource.as_wit(),
        namespace,
        selector.as_deref(),
    )?))
}

/// The first, in key order, of the objects [`list_objects`] would answer
/// with the same arguments, or `None`: whether anything matches, and
/// which, without building the list (the host stops at the first match).
pub fn first_object(
    resource: &Resource,
    namespace: Option<&str>,
    label_selector: impl Into<Selector>,
) -> Result<Option<Object>, CacheError> {
    let selector = label_selector.into().into_query();
    Ok(wit::first(resource.as_wit(), namespace, selector.as_deref())?.map(|o| Object::from_owned(o, None)))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Type-checked, never run (the host's imports exist only in a
    /// component): every selector form an existing caller passes still
    /// compiles, and the new ones do.
    #[allow(dead_code, unused_must_use, clippy::needless_borrows_for_generic_args)]
    fn every_selector_form_is_accepted(r: &Resource) {
        list_objects(r, None, None);
        list_objects(r, Some("default"), Some("app=web"));
        list_objects(r, None, "app=web");
        list_objects(r, None, String::from("app=web"));
        list_objects(r, None, &Selector::new().eq("app", "web"));
        list_objects(r, None, Selector::new().exists("app"));
        let text: Option<&str> = None;
        list_objects(r, None, text);
        first_object(r, Some("default"), "app=web");
        first_object(r, None, &Selector::new().eq("app", "web"));
        #[derive(serde::Deserialize)]
        struct Pod {}
        impl Kind for Pod {
            const API_VERSION: &'static str = "v1";
            const KIND: &'static str = "Pod";
        }
        list::<Pod>(None, &Selector::new());
        list::<Pod>(None, "app=web");
        list::<Pod>(None, None);
    }

    #[test]
    fn queries_take_every_selector_form() {
        // The check is the function above compiling.
        let _ = every_selector_form_is_accepted;
    }
}
