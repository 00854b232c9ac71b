//! Queries against the host's informer cache (never the API server).
//!
//! A plugin may query the resources it watches. Errors are values
//! ([`CacheError`]), never traps.

use crate::bindings::wink::plugin::cache as wit;
use crate::{Object, Resource};
use serde::de::DeserializeOwned;

pub use crate::bindings::wink::plugin::types::CacheError;

/// The cached object under `key` (`namespace/name` or `name`).
pub fn get(resource: &Resource, key: &str) -> Result<Option<Object>, CacheError> {
    Ok(wit::get(&resource.to_wit(), key)?.map(Object::from_wit))
}

/// Every cached object of `resource`, optionally in one namespace and
/// matching a label selector, sorted by key.
pub fn list(
    resource: &Resource,
    namespace: Option<&str>,
    label_selector: Option<&str>,
) -> Result<Vec<Object>, CacheError> {
    Ok(wit::list(&resource.to_wit(), namespace, label_selector)?
        .into_iter()
        .map(Object::from_wit)
        .collect())
}

/// [`get`] decoded into a typed value.
pub fn get_as<T: DeserializeOwned>(resource: &Resource, key: &str) -> Result<Option<T>, String> {
    match get(resource, key).map_err(|e| format!("{e:?}"))? {
        Some(obj) => obj.decode().map(Some).map_err(|e| e.to_string()),
        None => Ok(None),
    }
}
