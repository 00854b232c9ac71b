//! [`PluginInstance`]: one running plugin. Owns its wasmtime Store and the
//! instance in it, calls `init`, and delivers events into the guest with a
//! deadline per call. Calls never overlap (one lock per instance).
//!
//! A trap (including a deadline or memory-limit hit) poisons a wasmtime
//! Store, so after one the instance is rebuilt from its `InstancePre` with
//! `init` called again; the event that trapped is logged and skipped. It does
//! not decide what it watches (the manager registers it) and never reaches
//! the API server.

use super::bindings::types::{ObjectMetaParam, ObjectParam, Registration};
use super::bindings::{Plugin, PluginPre};
use super::capabilities::{CacheScope, HostState};
use super::engine::{Limits, WinkEngine};
use crate::informer::{EventHandler, ObjRef};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use wasmtime::Store;

struct Live {
    store: Store<HostState>,
    plugin: Plugin,
}

/// One plugin, instantiated and initialized.
pub struct PluginInstance {
    name: Arc<str>,
    pre: PluginPre<HostState>,
    engine: WinkEngine,
    config: String,
    limits: Limits,
    cache: CacheScope,
    live: Mutex<Option<Live>>,
    synced: AtomicBool,
    calls: AtomicU64,
    traps: AtomicU64,
}

/// Why `init` failed.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error("plugin {plugin}: instantiation failed: {reason}")]
    Instantiate { plugin: String, reason: String },
    #[error("plugin {plugin}: init trapped: {reason}")]
    Trap { plugin: String, reason: String },
    #[error("plugin {plugin}: init refused: {reason}")]
    Refused { plugin: String, reason: String },
}

fn labels_param(obj: &ObjRef) -> Vec<(&str, &str)> {
    obj.meta
        .labels
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

fn param<'a>(obj: &'a ObjRef, labels: &'a [(&'a str, &'a str)]) -> ObjectParam<'a> {
    let m = &obj.meta;
    ObjectParam {
        meta: ObjectMetaParam {
            api_version: &m.api_version,
            kind: &m.kind,
            namespace: m.namespace.as_deref(),
            name: &m.name,
            uid: &m.uid,
            resource_version: &m.resource_version,
            labels,
        },
        json: &obj.json,
    }
}

impl PluginInstance {
    /// Instantiate a loaded component and call its `init`.
    pub fn start(
        name: Arc<str>,
        pre: PluginPre<HostState>,
        engine: &WinkEngine,
        config: String,
        limits: Limits,
    ) -> Result<(Arc<Self>, Registration), InitError> {
        let instance = Arc::new(PluginInstance {
            name,
            pre,
            engine: engine.clone(),
            config,
            limits,
            cache: CacheScope::default(),
            live: Mutex::new(None),
            synced: AtomicBool::new(false),
            calls: AtomicU64::new(0),
            traps: AtomicU64::new(0),
        });
        let (live, registration) = instance.instantiate()?;
        *instance.live.lock().unwrap() = Some(live);
        Ok((instance, registration))
    }

    fn instantiate(&self) -> Result<(Live, Registration), InitError> {
        let state = HostState::new(
            self.name.clone(),
            self.limits.memory_bytes,
            self.cache.clone(),
        );
        let mut store = Store::new(self.engine.engine(), state);
        store.limiter(|s| &mut s.limits);
        // A new Store's deadline is 0: set it before instantiating.
        store.set_epoch_deadline(self.limits.deadline_ticks());
        let plugin = self
            .pre
            .instantiate(&mut store)
            .map_err(|e| InitError::Instantiate {
                plugin: self.name.to_string(),
                reason: format!("{e:#}"),
            })?;
        store.set_epoch_deadline(self.limits.deadline_ticks());
        let registration = plugin
            .wink_plugin_handler()
            .call_init(&mut store, &self.config)
            .map_err(|e| InitError::Trap {
                plugin: self.name.to_string(),
                reason: format!("{e:?}"),
            })?
            .map_err(|reason| InitError::Refused {
                plugin: self.name.to_string(),
                reason,
            })?;
        Ok((Live { store, plugin }, registration))
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The cache scope its queries are answered from.
    pub fn cache_scope(&self) -> &CacheScope {
        &self.cache
    }

    /// Calls made into the guest (events).
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Calls that trapped.
    pub fn traps(&self) -> u64 {
        self.traps.load(Ordering::Relaxed)
    }

    /// Whether every listener of this plugin has delivered its initial list.
    pub fn has_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    pub(crate) fn set_synced(&self) {
        self.synced.store(true, Ordering::Release);
    }

    fn call(
        &self,
        what: &str,
        obj: &ObjRef,
        f: impl FnOnce(&mut Store<HostState>, &Plugin) -> wasmtime::Result<()>,
    ) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let mut live = self.live.lock().unwrap();
        let Some(l) = live.as_mut() else { return };
        l.store.set_epoch_deadline(self.limits.deadline_ticks());
        let Err(err) = f(&mut l.store, &l.plugin) else {
            return;
        };
        self.traps.fetch_add(1, Ordering::Relaxed);
        tracing::error!(
            plugin = %self.name,
            call = what,
            object = %obj.key(),
            resource_version = %obj.meta.resource_version,
            "plugin trapped: {err:?}"
        );
        // The Store is poisoned: build a fresh one.
        *live = None;
        match self.instantiate() {
            Ok((fresh, _)) => {
                *live = Some(fresh);
                tracing::warn!(plugin = %self.name, "plugin restarted after a trap");
            }
            Err(e) => tracing::error!(plugin = %self.name, "plugin could not be restarted: {e}"),
        }
    }
}

impl EventHandler for PluginInstance {
    fn on_add(&self, obj: &ObjRef, in_initial_list: bool) {
        let labels = labels_param(obj);
        self.call("on-add", obj, |store, p| {
            p.wink_plugin_handler()
                .call_on_add(store, param(obj, &labels), in_initial_list)
        });
    }

    fn on_update(&self, old: &ObjRef, new: &ObjRef) {
        let (old_labels, new_labels) = (labels_param(old), labels_param(new));
        self.call("on-update", new, |store, p| {
            p.wink_plugin_handler().call_on_update(
                store,
                param(old, &old_labels),
                param(new, &new_labels),
            )
        });
    }

    fn on_delete(&self, obj: &ObjRef, final_state_unknown: bool) {
        let labels = labels_param(obj);
        self.call("on-delete", obj, |store, p| {
            p.wink_plugin_handler()
                .call_on_delete(store, param(obj, &labels), final_state_unknown)
        });
    }
}
