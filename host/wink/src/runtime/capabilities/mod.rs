//! Capabilities: everything a guest may do, and nothing more.
//!
//! Owns the per-Store host state ([`HostState`]): a closed WASI context (no
//! files, sockets or environment; clocks and random allowed; stdout/stderr
//! into the host log), the memory limiter, the `log` import, and the `cache`
//! import scoped to the resources the plugin registered. Reads go to the
//! informers' stores only; nothing here reaches the API server.

use super::bindings::types::{Answer, CacheError, Level, ObjectMeta, ResourceType as Resource_};
use super::bindings::wink::plugin::{cache, log, types};
use super::stdio::{Channel, GuestOutput};
use crate::informer::store::StoreError;
use crate::informer::{ObjRef, Store};
use std::sync::{Arc, RwLock};
use wasmtime::StoreLimits;
use wasmtime::component::Resource;
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

    fn store(&self, resource: &Resource_) -> Result<Store, CacheError> {
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

/// The host type of a WIT `object` handle. Its `rep` indexes the Store's
/// [`Handles`], which hold the cached object version (an `Arc`, never a copy).
pub struct ObjectHandle;

/// What a Store's guest holds handles to, by the handle's `rep`: a slot
/// vector with a free list, so no allocation per handle once warm and a
/// lookup is an index (wasmtime's generic `ResourceTable` boxes each entry).
pub(crate) struct Handles<T> {
    slots: Vec<Option<T>>,
    free: Vec<u32>,
    live: usize,
}

impl<T> Default for Handles<T> {
    fn default() -> Self {
        Handles {
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }
}

impl<T> Handles<T> {
    pub(crate) fn insert(&mut self, value: T) -> u32 {
        self.live += 1;
        match self.free.pop() {
            Some(rep) => {
                self.slots[rep as usize] = Some(value);
                rep
            }
            None => {
                self.slots.push(Some(value));
                (self.slots.len() - 1) as u32
            }
        }
    }

    pub(crate) fn remove(&mut self, rep: u32) -> Option<T> {
        let value = self.slots.get_mut(rep as usize)?.take()?;
        self.free.push(rep);
        self.live -= 1;
        Some(value)
    }

    fn get(&self, rep: u32) -> wasmtime::Result<&T> {
        match self.slots.get(rep as usize).and_then(Option::as_ref) {
            Some(value) => Ok(value),
            None => wasmtime::bail!("unknown handle {rep}"),
        }
    }
}

/// The host type of a WIT `object-list` handle: its `rep` indexes the
/// Store's lists of cached objects (one cache answer each).
pub struct ObjectListHandle;

/// How many object handles one plugin Store may hold at once (the WIT
/// `cache` interface documents it). Beyond it the call traps.
pub const MAX_HANDLES: usize = 1 << 20;

fn object_meta(obj: &ObjRef) -> ObjectMeta {
    ObjectMeta {
        api_version: obj.api_version().to_string(),
        kind: obj.kind().to_string(),
        namespace: obj.namespace().map(str::to_string),
        name: obj.name().to_string(),
        uid: obj.uid().to_string(),
        resource_version: obj.resource_version().to_string(),
        labels: obj
            .labels()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

/// The data of one plugin Store.
pub struct HostState {
    plugin: Arc<str>,
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) limits: StoreLimits,
    cache: CacheScope,
    /// Object handles: events lend them, queries give them.
    pub(crate) objects: Handles<ObjRef>,
    /// Answer handles (`object-list`).
    lists: Handles<Vec<ObjRef>>,
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
            objects: Handles::default(),
            lists: Handles::default(),
        }
    }

    /// Refuse a new handle past the cap (a trap).
    fn check_cap(&self) -> wasmtime::Result<()> {
        if self.objects.live + self.lists.live >= MAX_HANDLES {
            wasmtime::bail!(
                "plugin {} holds {MAX_HANDLES} object handles: drop some (the cap keeps a leak from growing the host)",
                self.plugin
            );
        }
        Ok(())
    }

    /// Give the guest an owned handle to `obj`.
    pub(crate) fn push_object(&mut self, obj: &ObjRef) -> wasmtime::Result<Resource<ObjectHandle>> {
        self.check_cap()?;
        Ok(Resource::new_own(self.objects.insert(obj.clone())))
    }

    fn object(&self, handle: &Resource<ObjectHandle>) -> wasmtime::Result<&ObjRef> {
        self.objects.get(handle.rep())
    }

    /// Answer with `objects`: their keys in one string and one list handle.
    fn answer(&mut self, objects: Vec<ObjRef>) -> wasmtime::Result<Answer> {
        self.check_cap()?;
        let mut keys = String::with_capacity(objects.len() * 32);
        for o in &objects {
            crate::informer::object::push_key_of(&mut keys, o.namespace(), o.name());
            keys.push('\n');
        }
        Ok(Answer {
            keys,
            objects: Resource::new_own(self.lists.insert(objects)),
        })
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

impl types::HostObject for HostState {
    fn name(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<String> {
        Ok(self.object(&obj)?.name().to_string())
    }

    fn namespace(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<Option<String>> {
        Ok(self.object(&obj)?.namespace().map(str::to_string))
    }

    fn key(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<String> {
        Ok(self.object(&obj)?.key())
    }

    fn uid(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<String> {
        Ok(self.object(&obj)?.uid().to_string())
    }

    fn resource_version(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<String> {
        Ok(self.object(&obj)?.resource_version().to_string())
    }

    fn label(&mut self, obj: Resource<ObjectHandle>, key: String) -> wasmtime::Result<Option<String>> {
        Ok(self.object(&obj)?.label(&key).map(str::to_string))
    }

    fn meta(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<ObjectMeta> {
        Ok(object_meta(self.object(&obj)?))
    }

    fn json(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<String> {
        Ok(self.object(&obj)?.json().into_owned())
    }

    fn duplicate(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<Resource<ObjectHandle>> {
        let obj = self.object(&obj)?.clone();
        self.push_object(&obj)
    }

    fn drop(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<()> {
        match self.objects.remove(obj.rep()) {
            Some(_) => Ok(()),
            None => wasmtime::bail!("unknown object handle {}", obj.rep()),
        }
    }
}

impl types::HostObjectList for HostState {
    fn len(&mut self, list: Resource<ObjectListHandle>) -> wasmtime::Result<u32> {
        Ok(self.lists.get(list.rep())?.len() as u32)
    }

    fn get(
        &mut self,
        list: Resource<ObjectListHandle>,
        index: u32,
    ) -> wasmtime::Result<Option<Resource<ObjectHandle>>> {
        let obj = self.lists.get(list.rep())?.get(index as usize).cloned();
        obj.map(|o| self.push_object(&o)).transpose()
    }

    fn drop(&mut self, list: Resource<ObjectListHandle>) -> wasmtime::Result<()> {
        match self.lists.remove(list.rep()) {
            Some(_) => Ok(()),
            None => wasmtime::bail!("unknown object-list handle {}", list.rep()),
        }
    }
}

impl log::Host for HostState {
    fn log(&mut self, level: Level, message: String) -> wasmtime::Result<()> {
        let p = &self.plugin;
        match level {
            Level::Trace => tracing::trace!(target: "wink::plugin", "[{p}] {message}"),
            Level::Debug => tracing::debug!(target: "wink::plugin", "[{p}] {message}"),
            Level::Info => tracing::info!(target: "wink::plugin", "[{p}] {message}"),
            Level::Warn => tracing::warn!(target: "wink::plugin", "[{p}] {message}"),
            Level::Error => tracing::error!(target: "wink::plugin", "[{p}] {message}"),
        }
        Ok(())
    }
}

/// A query's reply: a trap (`Err`) or the guest-visible result.
type Reply<T> = wasmtime::Result<Result<T, CacheError>>;

impl cache::Host for HostState {
    fn get(&mut self, resource: Resource_, key: String) -> Reply<Option<Resource<ObjectHandle>>> {
        let store = match self.refuse_logged(self.cache.store(&resource)) {
            Ok(store) => store,
            Err(e) => return Ok(Err(e)),
        };
        let found = store.get(&key);
        Ok(Ok(match found {
            Some(obj) => Some(self.push_object(&obj)?),
            None => None,
        }))
    }

    fn list(
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

    fn by_index(&mut self, resource: Resource_, index: String, value: String) -> Reply<Answer> {
        let objects = match self
            .refuse_logged(self.cache.store(&resource))
            .and_then(|store| store.by_index(&index, &value).map_err(store_error))
        {
            Ok(objects) => objects,
            Err(e) => return Ok(Err(e)),
        };
        Ok(Ok(self.answer(objects)?))
    }

    fn index_keys(&mut self, resource: Resource_, index: String, value: String) -> Reply<Vec<String>> {
        Ok(self
            .refuse_logged(self.cache.store(&resource))
            .and_then(|store| store.index_keys(&index, &value).map_err(store_error)))
    }

    fn list_index_values(&mut self, resource: Resource_, index: String) -> Reply<Vec<String>> {
        Ok(self
            .refuse_logged(self.cache.store(&resource))
            .and_then(|store| store.list_index_values(&index).map_err(store_error)))
    }
}

impl HostState {
    fn list_objects(
        &self,
        resource: &Resource_,
        namespace: Option<String>,
        label_selector: Option<String>,
    ) -> Result<Vec<ObjRef>, CacheError> {
        let store = self.refuse_logged(self.cache.store(resource))?;
        let selector = match label_selector.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(s) => Some(wink_selector::LabelSelector::parse(s).map_err(CacheError::InvalidArgument)?),
        };
        Ok(store.list(namespace.as_deref(), selector.as_ref()))
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
