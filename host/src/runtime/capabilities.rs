//! Capabilities: everything a guest may do, and nothing more.
//!
//! Owns the per-Store host state ([`HostState`]): a closed WASI context (no
//! files, sockets or environment; clocks and random allowed; stdout/stderr
//! into the host log), the memory limiter, the `log` import, and the `cache`
//! import scoped to the resources the plugin registered. Reads go to the
//! informers' stores only; nothing here reaches the API server.

use super::bindings::types::{CacheError, Level, ObjectMetaResult, ObjectResult, ResourceType as Resource};
use super::bindings::wink::plugin::{cache, log, types};
use super::stdio::{Channel, GuestOutput};
use crate::informer::store::StoreError;
use crate::informer::{ObjRef, Store};
use std::sync::{Arc, RwLock};
use wasmtime::StoreLimits;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// The stores a plugin may query, by (apiVersion, kind). Filled when the
/// plugin's registrations are known; shared by every Store of the plugin.
/// A plugin grants a handful of resources, so a short list searched with
/// `&str` comparisons answers a query without allocating or hashing.
#[derive(Clone, Default)]
pub struct CacheScope {
    stores: Arc<RwLock<Vec<Granted>>>,
}

/// One granted resource: (apiVersion, kind, store).
type Granted = (String, String, Arc<Store>);

impl CacheScope {
    /// Allow queries of one resource, answered from `store`.
    pub fn grant(&self, api_version: &str, kind: &str, store: Arc<Store>) {
        let mut stores = self.stores.write().unwrap();
        match stores.iter_mut().find(|(v, k, _)| v == api_version && k == kind) {
            Some(granted) => granted.2 = store,
            None => stores.push((api_version.to_string(), kind.to_string(), store)),
        }
    }

    fn store(&self, resource: &Resource) -> Result<Arc<Store>, CacheError> {
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

/// Convert a cached object into the WIT record a query returns.
pub fn object_result(obj: &ObjRef) -> ObjectResult {
    let m = &obj.meta;
    ObjectResult {
        meta: ObjectMetaResult {
            api_version: m.api_version.clone(),
            kind: m.kind.clone(),
            namespace: m.namespace.clone(),
            name: m.name.clone(),
            uid: m.uid.clone(),
            resource_version: m.resource_version.clone(),
            labels: m.labels.clone(),
        },
        json: obj.json.to_string(),
    }
}

/// The data of one plugin Store.
pub struct HostState {
    plugin: Arc<str>,
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) limits: StoreLimits,
    cache: CacheScope,
}

impl HostState {
    /// A closed sandbox for `plugin`, with a memory cap and a cache scope.
    pub fn new(plugin: Arc<str>, memory_bytes: usize, cache: CacheScope) -> Self {
        let mut wasi = WasiCtx::builder();
        wasi.stdout(GuestOutput::new(plugin.clone(), Channel::Stdout));
        wasi.stderr(GuestOutput::new(plugin.clone(), Channel::Stderr));
        let limits = wasmtime::StoreLimitsBuilder::new()
            .memory_size(memory_bytes)
            .instances(16)
            .build();
        HostState {
            plugin,
            wasi: wasi.build(),
            table: ResourceTable::new(),
            limits,
            cache,
        }
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl types::Host for HostState {}

impl log::Host for HostState {
    fn log(&mut self, level: Level, message: String) {
        let p = &self.plugin;
        match level {
            Level::Trace => tracing::trace!(target: "wink::plugin", "[{p}] {message}"),
            Level::Debug => tracing::debug!(target: "wink::plugin", "[{p}] {message}"),
            Level::Info => tracing::info!(target: "wink::plugin", "[{p}] {message}"),
            Level::Warn => tracing::warn!(target: "wink::plugin", "[{p}] {message}"),
            Level::Error => tracing::error!(target: "wink::plugin", "[{p}] {message}"),
        }
    }
}

impl cache::Host for HostState {
    fn get(&mut self, resource: Resource, key: String) -> Result<Option<ObjectResult>, CacheError> {
        let store = self.refuse_logged(self.cache.store(&resource))?;
        Ok(store.get(&key).as_ref().map(object_result))
    }

    fn list(
        &mut self,
        resource: Resource,
        namespace: Option<String>,
        label_selector: Option<String>,
    ) -> Result<Vec<ObjectResult>, CacheError> {
        let store = self.refuse_logged(self.cache.store(&resource))?;
        let selector = match label_selector.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(s) => Some(crate::selector::LabelSelector::parse(s).map_err(CacheError::InvalidArgument)?),
        };
        let objects = match namespace {
            Some(ns) => store
                .by_index(crate::informer::store::NAMESPACE_INDEX, &ns)
                .map_err(|e| CacheError::InvalidArgument(e.to_string()))?,
            None => store.list(),
        };
        Ok(objects
            .iter()
            .filter(|o| selector.as_ref().is_none_or(|s| s.matches(&o.meta.labels)))
            .map(object_result)
            .collect())
    }

    fn by_index(
        &mut self,
        resource: Resource,
        index: String,
        value: String,
    ) -> Result<Vec<ObjectResult>, CacheError> {
        let store = self.refuse_logged(self.cache.store(&resource))?;
        let objects = store.by_index(&index, &value).map_err(store_error)?;
        Ok(objects.iter().map(object_result).collect())
    }

    fn index_keys(
        &mut self,
        resource: Resource,
        index: String,
        value: String,
    ) -> Result<Vec<String>, CacheError> {
        let store = self.refuse_logged(self.cache.store(&resource))?;
        store.index_keys(&index, &value).map_err(store_error)
    }

    fn list_index_values(&mut self, resource: Resource, index: String) -> Result<Vec<String>, CacheError> {
        let store = self.refuse_logged(self.cache.store(&resource))?;
        store.list_index_values(&index).map_err(store_error)
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
