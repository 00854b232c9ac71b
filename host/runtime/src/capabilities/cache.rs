//! The `cache` import: read-only queries of the informers' stores, scoped
//! to the resources the plugin watches or reads ([`CacheScope`]). Answers
//! are handles to the cached versions; nothing here reaches the API server.
//! Errors are values, never traps. Objects outside the plugin's scope
//! ([`crate::scope`]) are not there: a `get` does not find them, lists and
//! index lookups leave them out.

use super::{HostState, ObjectHandle};
use crate::bindings::types::{Answer, CacheError, ResourceType as Resource_};
use crate::bindings::wink::plugin::cache;
use std::sync::{Arc, RwLock};
use wasmtime::component::Resource;
use wink_informer::store::StoreError;
use wink_informer::{ObjRef, Store};

/// The stores a plugin may query, by (apiVersion, kind) in their canonical
/// spelling (`wink_informer::canonical`). Filled when the plugin's registrations are
/// known; shared by every Store of the plugin.
/// A plugin grants a handful of resources, so a short list searched with
/// `&str` comparisons answers a query without allocating or hashing.
#[derive(Clone, Default)]
pub struct CacheScope {
    stores: Arc<RwLock<Vec<Granted>>>,
    /// Where the plugin applies: what is outside is not there for it.
    scope: crate::scope::ScopeCell,
    /// Queries answered, by (operation, result).
    queries: Arc<std::sync::Mutex<std::collections::BTreeMap<(&'static str, &'static str), u64>>>,
}

/// One granted resource: (apiVersion, kind, store).
type Granted = (String, String, Store);

impl CacheScope {
    /// Allow queries of one resource, answered from `store`.
    pub fn grant(&self, api_version: &str, kind: &str, store: Store) {
        let mut stores = self.stores.write().unwrap();
        match stores.iter_mut().find(|(v, k, _)| v == api_version && k == kind) {
            Some(granted) => granted.2 = store,
            None => stores.push((api_version.to_string(), kind.to_string(), store)),
        }
    }

    /// The plugin's scope, shared by everything that enforces it.
    pub fn scope(&self) -> &crate::scope::ScopeCell {
        &self.scope
    }

    /// The store granted for (`api_version`, `kind`), in their canonical
    /// spelling: what the host reads a plugin's queue keys from.
    pub fn granted(&self, api_version: &str, kind: &str) -> Option<Store> {
        self.stores
            .read()
            .unwrap()
            .iter()
            .find(|(v, k, _)| v == api_version && k == kind)
            .map(|(_, _, store)| store.clone())
    }

    /// Count one query's reply (a trap counts as nothing: the plugin restarts).
    fn count<T>(&self, op: &'static str, reply: Reply<T>) -> Reply<T> {
        let result = match &reply {
            Ok(Ok(_)) => "ok",
            Ok(Err(CacheError::NotPermitted(_))) => "not-permitted",
            Ok(Err(CacheError::UnknownIndex(_))) => "unknown-index",
            Ok(Err(CacheError::InvalidArgument(_))) => "invalid-argument",
            Err(_) => "trap",
        };
        *self.queries.lock().unwrap().entry((op, result)).or_default() += 1;
        reply
    }

    /// Queries answered so far: (operation, result, count).
    pub fn query_counts(&self) -> Vec<(&'static str, &'static str, u64)> {
        self.queries
            .lock()
            .unwrap()
            .iter()
            .map(|((o, r), n)| (*o, *r, *n))
            .collect()
    }

    /// The store of `resource`, asked for as the API server spells it
    /// (granted types are kept in that spelling, so text compares).
    fn store(&self, resource: &Resource_) -> Result<Store, CacheError> {
        wink_informer::canonical::Gvk::check(&resource.api_version, &resource.kind)
            .map_err(|e| CacheError::InvalidArgument(e.0))?;
        self.stores
            .read()
            .unwrap()
            .iter()
            .find(|(v, k, _)| *v == resource.api_version && *k == resource.kind)
            .map(|(_, _, store)| store.clone())
            .ok_or_else(|| {
                CacheError::NotPermitted(format!(
                    "{} {} is not watched by this plugin",
                    resource.api_version, resource.kind
                ))
            })
    }
}

/// A query's reply: a trap (`Err`) or the guest-visible result.
type Reply<T> = wasmtime::Result<Result<T, CacheError>>;

/// The queries themselves; the `cache::Host` impl below counts them.
impl HostState {
    fn query_get(&mut self, resource: Resource_, key: String) -> Reply<Option<Resource<ObjectHandle>>> {
        let store = match self.refuse_logged(self.cache.store(&resource)) {
            Ok(store) => store,
            Err(e) => return Ok(Err(e)),
        };
        let found = store.get(&key).filter(|o| self.cache.scope.admits(o));
        Ok(Ok(match found {
            Some(obj) => Some(self.push_object(&obj)?),
            None => None,
        }))
    }

    fn query_list(
        &mut self,
        resource: Resource_,
        namespace: Option<String>,
        label_selector: Option<String>,
    ) -> Reply<Answer> {
        let objects = match self.list_objects(&resource, namespace, label_selector) {
            Ok(objects) => objects,
            Err(e) => return Ok(Err(e)),
        };
        Ok(Ok(self.answer(objects)?))
    }

    fn query_first(
        &mut self,
        resource: Resource_,
        namespace: Option<String>,
        label_selector: Option<String>,
    ) -> Reply<Option<Resource<ObjectHandle>>> {
        let found = match self.selection(&resource, label_selector) {
            Ok((store, selector)) => match self.cache.scope.get() {
                None => store.first(namespace.as_deref(), selector.as_ref()),
                Some(scope) => store
                    .list(namespace.as_deref(), selector.as_ref())
                    .into_iter()
                    .find(|o| scope.admits(o)),
            },
            Err(e) => return Ok(Err(e)),
        };
        Ok(Ok(match found {
            Some(obj) => Some(self.push_object(&obj)?),
            None => None,
        }))
    }

    fn query_by_index(&mut self, resource: Resource_, index: String, value: String) -> Reply<Answer> {
        let objects = match self
            .refuse_logged(self.cache.store(&resource))
            .and_then(|store| store.by_index(&index, &value).map_err(store_error))
        {
            Ok(objects) => self.in_scope(objects),
            Err(e) => return Ok(Err(e)),
        };
        Ok(Ok(self.answer(objects)?))
    }

    fn query_index_keys(&mut self, resource: Resource_, index: String, value: String) -> Reply<String> {
        Ok(self
            .refuse_logged(self.cache.store(&resource))
            .and_then(|store| match self.cache.scope.get() {
                None => store.index_keys(&index, &value).map_err(store_error),
                Some(scope) => store
                    .by_index(&index, &value)
                    .map_err(store_error)
                    .map(|objects| {
                        objects
                            .into_iter()
                            .filter(|o| scope.admits(o))
                            .map(|o| o.key())
                            .collect()
                    }),
            })
            .map(|keys| {
                let mut text = String::with_capacity(keys.iter().map(|k| k.len() + 1).sum());
                for k in keys {
                    text.push_str(&k);
                    text.push('\n');
                }
                text
            }))
    }

    fn query_list_index_values(&mut self, resource: Resource_, index: String) -> Reply<Vec<String>> {
        Ok(self.refuse_logged(self.cache.store(&resource)).and_then(|store| {
            let values = store.list_index_values(&index).map_err(store_error)?;
            let Some(scope) = self.cache.scope.get() else {
                return Ok(values);
            };
            // A value is there when an object in scope has it.
            let mut kept = Vec::with_capacity(values.len());
            for v in values {
                if store
                    .by_index(&index, &v)
                    .map_err(store_error)?
                    .iter()
                    .any(|o| scope.admits(o))
                {
                    kept.push(v);
                }
            }
            Ok(kept)
        }))
    }
}

impl cache::Host for HostState {
    fn get(&mut self, resource: Resource_, key: String) -> Reply<Option<Resource<ObjectHandle>>> {
        let reply = self.query_get(resource, key);
        self.cache.count("get", reply)
    }

    fn list(
        &mut self,
        resource: Resource_,
        namespace: Option<String>,
        label_selector: Option<String>,
    ) -> Reply<Answer> {
        let reply = self.query_list(resource, namespace, label_selector);
        self.cache.count("list", reply)
    }

    fn first(
        &mut self,
        resource: Resource_,
        namespace: Option<String>,
        label_selector: Option<String>,
    ) -> Reply<Option<Resource<ObjectHandle>>> {
        let reply = self.query_first(resource, namespace, label_selector);
        self.cache.count("first", reply)
    }

    fn by_index(&mut self, resource: Resource_, index: String, value: String) -> Reply<Answer> {
        let reply = self.query_by_index(resource, index, value);
        self.cache.count("by-index", reply)
    }

    fn index_keys(&mut self, resource: Resource_, index: String, value: String) -> Reply<String> {
        let reply = self.query_index_keys(resource, index, value);
        self.cache.count("index-keys", reply)
    }

    fn list_index_values(&mut self, resource: Resource_, index: String) -> Reply<Vec<String>> {
        let reply = self.query_list_index_values(resource, index);
        self.cache.count("list-index-values", reply)
    }
}

impl HostState {
    fn list_objects(
        &self,
        resource: &Resource_,
        namespace: Option<String>,
        label_selector: Option<String>,
    ) -> Result<Vec<ObjRef>, CacheError> {
        let (store, selector) = self.selection(resource, label_selector)?;
        Ok(self.in_scope(store.list(namespace.as_deref(), selector.as_ref())))
    }

    /// `objects` less those outside the plugin's scope.
    fn in_scope(&self, mut objects: Vec<ObjRef>) -> Vec<ObjRef> {
        if let Some(scope) = self.cache.scope.get() {
            objects.retain(|o| scope.admits(o));
        }
        objects
    }

    /// The store of `resource` and the parsed `label_selector` (none when
    /// absent or blank): what `list` and `first` select from.
    fn selection(
        &self,
        resource: &Resource_,
        label_selector: Option<String>,
    ) -> Result<(Store, Option<wink_selector::LabelSelector>), CacheError> {
        let store = self.refuse_logged(self.cache.store(resource))?;
        let selector = match label_selector.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(s) => Some(wink_selector::LabelSelector::parse(s).map_err(CacheError::InvalidArgument)?),
        };
        Ok((store, selector))
    }
}

fn store_error(e: StoreError) -> CacheError {
    match e {
        StoreError::UnknownIndex(name) => CacheError::UnknownIndex(name),
        other => CacheError::InvalidArgument(other.to_string()),
    }
}

impl HostState {
    fn refuse_logged<T>(&self, r: Result<T, CacheError>) -> Result<T, CacheError> {
        if let Err(CacheError::NotPermitted(why)) = &r {
            tracing::warn!(plugin = %self.plugin, "cache query refused: {why}");
        }
        r
    }
}
