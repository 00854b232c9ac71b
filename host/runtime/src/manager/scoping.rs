//! Scopes in force: each plugin's scope (from its grant, [`crate::scope`])
//! resolved with the shared Namespace informer when a namespace selector
//! reads it, and the re-decisions a change calls for. A namespace added or
//! relabelled queues its objects to every scoped watch as markers (the
//! watch's [`Tracker`] turns those that change side into adds and
//! deletes, in the listener's order); a grant that changes a scope does the
//! same for every object of the plugin, and one that gives or takes back a
//! scope loads the plugin again (its instance starts over with the cache
//! replayed under the new scope).
//!
//! Owns the one Namespace informer registration of the manager (one list
//! and watch however many plugins read it) and its listener.

use super::PluginManager;
use crate::scope::{Scope, Tracker};
use std::sync::{Arc, Weak};
use wink_informer::processor::Listener;
use wink_informer::{EventHandler, ObjRef, SharedInformer, Store, WatchSpec};

/// A scoped watch's listener, its tracker and the store it delivers from.
#[derive(Clone)]
pub(super) struct Rescope {
    pub(super) listener: Arc<Listener>,
    pub(super) tracker: Arc<Tracker>,
    pub(super) store: Store,
}

impl Rescope {
    /// Queue the markers that re-decide the objects of `namespace` (none: all).
    pub(super) fn queue(&self, namespace: Option<&str>) {
        let objects = self.store.list(namespace, None);
        if !objects.is_empty() {
            self.listener.push_all(self.tracker.rescope(objects));
        }
    }
}

/// The Namespace informer's listener: a namespace that comes or is
/// relabelled has its objects re-decided.
struct Relabelled {
    manager: Weak<PluginManager>,
    runtime: tokio::runtime::Handle,
}

impl Relabelled {
    fn rescope(&self, name: &str) {
        let Some(manager) = self.manager.upgrade() else {
            return;
        };
        let name = name.to_string();
        self.runtime
            .spawn(async move { manager.rescope_namespace(&name).await });
    }
}

impl EventHandler for Relabelled {
    fn on_add(&self, obj: &ObjRef, in_initial_list: bool) {
        if !in_initial_list {
            self.rescope(obj.name());
        }
    }
    fn on_update(&self, old: &ObjRef, new: &ObjRef) {
        if !old.labels().eq(new.labels()) {
            self.rescope(new.name());
        }
    }
    fn on_delete(&self, _: &ObjRef, _: bool) {}
}

impl PluginManager {
    /// The Namespace informer's store, the informer started (and synced)
    /// on first use: the one the scopes' namespace selectors read, and the
    /// team policy's `namespaceSelector`.
    pub async fn namespace_store(&self) -> anyhow::Result<Store> {
        let informer = self
            .namespaces
            .get_or_try_init(|| async {
                let spec = WatchSpec::all("v1", "Namespace");
                let informer: Arc<SharedInformer> = self.factory.informer_for(&spec).await?;
                let handler = Arc::new(Relabelled {
                    manager: self.me.clone(),
                    runtime: tokio::runtime::Handle::current(),
                });
                informer.add_listener("wink-scope", handler, None);
                anyhow::Ok(informer)
            })
            .await?;
        informer.wait_for_sync().await;
        Ok(informer.store().clone())
    }

    /// The scope `plugin`'s grant sets in `grants`, reading namespace
    /// labels when it needs them.
    pub(super) async fn scope_for(
        &self,
        plugin: &str,
        grants: &crate::grants::Grants,
    ) -> anyhow::Result<Option<Scope>> {
        let Some(scope) = grants.scope(plugin).map_err(anyhow::Error::msg)? else {
            return Ok(None);
        };
        if !scope.needs_namespaces() {
            return Ok(Some(scope));
        }
        Ok(Some(scope.with_namespaces(self.namespace_store().await?)))
    }

    /// The scope in force for `plugin`, if it is loaded and scoped.
    pub async fn scope_of(&self, plugin: &str) -> Option<Arc<Scope>> {
        let plugins = self.plugins.lock().await;
        plugins.get(plugin)?.instance.cache_scope().scope().get()
    }

    /// Re-decide every scoped watch's objects in namespace `name`.
    async fn rescope_namespace(&self, name: &str) {
        let plugins = self.plugins.lock().await;
        for p in plugins.values() {
            let reads = p.instance.cache_scope().scope().get();
            if !reads.is_some_and(|s| s.needs_namespaces()) {
                continue;
            }
            for r in p.registered.iter().filter_map(|r| r.rescope.as_ref()) {
                r.queue(Some(name));
            }
        }
    }

    /// Put the scope of `grants` in force for the loaded plugin `name`:
    /// whether it must be loaded again (it gains or loses a scope).
    pub(super) async fn rescope_plugin(
        &self,
        p: &super::LoadedPlugin,
        grants: &crate::grants::Grants,
    ) -> bool {
        let name = p.instance.name();
        let scope = match self.scope_for(name, grants).await {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(plugin = %name, "scope not changed: {e:#}");
                return false;
            }
        };
        let cell = p.instance.cache_scope().scope();
        let had = cell.get();
        if had.is_some() != scope.is_some() {
            return true;
        }
        if had.as_ref().map(|s| (s.include().clone(), s.exclude().cloned()))
            == scope
                .as_ref()
                .map(|s| (s.include().clone(), s.exclude().cloned()))
        {
            return false;
        }
        cell.set(scope);
        tracing::info!(plugin = %name, "the plugin's scope changed: its objects are decided again");
        for r in p.registered.iter().filter_map(|r| r.rescope.as_ref()) {
            r.queue(None);
        }
        false
    }
}
