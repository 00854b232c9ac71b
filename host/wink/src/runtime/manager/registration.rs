//! Registration resolving: turns what a plugin's `init` asked for (watches,
//! reads, indexes) into registrations on shared informers, and attaches a
//! plugin instance to them.
//!
//! Owns the watch specs (namespace override), the Secrets rule, the indexes a
//! plugin declares, the cache scope grants (a plugin may query exactly what
//! it watches or reads) and the hand-over of registrations from one instance
//! to the next. It never compiles, starts or restarts an instance (the
//! manager and its recovery do) and never delivers events itself (the
//! informer's listeners do, through [`InstanceEventHandler`]).

use super::PluginManager;
use crate::informer::index::IndexSpec;
use crate::informer::{EventHandler, ObjRef, SharedInformer, WatchSpec};
use crate::runtime::bindings::types::{IndexBy, Registration};
use crate::runtime::instance::PluginInstance;
use anyhow::Context;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// One registration of a plugin on one informer.
#[derive(Clone)]
pub(super) struct Registered {
    pub(super) spec: WatchSpec,
    pub(super) listener_id: u64,
}

/// The informer-side handler of one plugin registration: delivers one
/// informer's notifications to the plugin's instance and counts down the
/// plugin's outstanding initial syncs. For `reads`, only the sync is tracked.
struct InstanceEventHandler {
    instance: Arc<PluginInstance>,
    pending_syncs: Arc<AtomicUsize>,
    handles_events: bool,
}

impl EventHandler for InstanceEventHandler {
    fn on_add(&self, obj: &ObjRef, in_initial_list: bool) {
        if self.handles_events {
            self.instance.on_add(obj, in_initial_list)
        }
    }
    fn on_update(&self, old: &ObjRef, new: &ObjRef) {
        if self.handles_events {
            self.instance.on_update(old, new)
        }
    }
    fn on_delete(&self, obj: &ObjRef, final_state_unknown: bool) {
        if self.handles_events {
            self.instance.on_delete(obj, final_state_unknown)
        }
    }
    fn on_synced(&self) {
        if self.pending_syncs.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.instance.set_synced();
            tracing::info!(plugin = %self.instance.name(), "plugin synced");
        }
    }
}

/// A watch or read of a registration, resolved to an informer.
pub(super) struct Wanted {
    spec: WatchSpec,
    resync: Option<Duration>,
    handles_events: bool,
    informer: Arc<SharedInformer>,
}

fn index_spec(by: &IndexBy) -> IndexSpec {
    match by {
        IndexBy::Label(k) => IndexSpec::Label(k.clone()),
        IndexBy::Annotation(k) => IndexSpec::Annotation(k.clone()),
        IndexBy::OwnerUid => IndexSpec::OwnerUid,
        IndexBy::OwnerKindName => IndexSpec::OwnerKindName,
        IndexBy::Field(p) => IndexSpec::Field(p.clone()),
    }
}

impl PluginManager {
    /// Resolve a registration's watches and reads to running informers, with
    /// their indexes ensured.
    pub(super) async fn resolve(
        &self,
        plugin: &str,
        registration: &Registration,
    ) -> anyhow::Result<Vec<Wanted>> {
        let mut wanted = Vec::new();
        let all = registration
            .watches
            .iter()
            .map(|w| (w, true))
            .chain(registration.reads.iter().map(|w| (w, false)));
        for (w, handles_events) in all {
            let spec = WatchSpec {
                api_version: w.resource.api_version.clone(),
                kind: w.resource.kind.clone(),
                namespace: w.namespace.clone().or_else(|| self.options.namespace.clone()),
                label_selector: w.label_selector.clone().filter(|s| !s.is_empty()),
                field_selector: w.field_selector.clone().filter(|s| !s.is_empty()),
            };
            if spec.api_version == "v1" && spec.kind == "Secret" && !self.secrets_allowed(plugin) {
                anyhow::bail!(
                    "plugin {plugin} asks for Secrets, which the operator has not granted (--allow-secrets {plugin})"
                );
            }
            let informer = self.factory.informer_for(&spec).await?;
            for index in &w.indexes {
                let by = index_spec(&index.by);
                informer
                    .ensure_index(&index.name, &by.to_string(), by.func())
                    .with_context(|| format!("index {:?} on {}", index.name, spec.describe()))?;
            }
            let resync = (handles_events && w.resync_seconds > 0)
                .then(|| Duration::from_secs(w.resync_seconds.into()));
            wanted.push(Wanted {
                spec,
                resync,
                handles_events,
                informer,
            });
        }
        Ok(wanted)
    }

    /// Attach an instance to its informers. Where `previous` has a listener on
    /// the same watch, it is handed over atomically; previous registrations
    /// not wanted any more are released.
    pub(super) fn attach(
        &self,
        instance: &Arc<PluginInstance>,
        wanted: Vec<Wanted>,
        previous: Option<&[Registered]>,
    ) -> Vec<Registered> {
        let pending = Arc::new(AtomicUsize::new(wanted.len()));
        if wanted.is_empty() {
            // Nothing to list: synced at once, and said like any other.
            instance.set_synced();
            tracing::info!(plugin = %instance.name(), "plugin synced");
        }
        let mut previous: Vec<Registered> = previous.map(<[Registered]>::to_vec).unwrap_or_default();
        let mut registered = Vec::new();
        for w in wanted {
            instance
                .cache_scope()
                .grant(&w.spec.api_version, &w.spec.kind, w.informer.store().clone());
            let handler = Arc::new(InstanceEventHandler {
                instance: instance.clone(),
                pending_syncs: pending.clone(),
                handles_events: w.handles_events,
            });
            let old = previous
                .iter()
                .position(|p| p.spec == w.spec)
                .map(|i| previous.remove(i));
            let listener = old
                .and_then(|old| {
                    w.informer
                        .swap_listener(old.listener_id, instance.name(), handler.clone(), w.resync)
                })
                .unwrap_or_else(|| w.informer.add_listener(instance.name(), handler, w.resync));
            registered.push(Registered {
                spec: w.spec,
                listener_id: listener.id(),
            });
        }
        for old in previous {
            self.factory.release(&old.spec, old.listener_id);
        }
        registered
    }

    fn secrets_allowed(&self, plugin: &str) -> bool {
        self.options.allow_secrets.iter().any(|p| p == "*" || p == plugin)
    }
}
