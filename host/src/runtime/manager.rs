//! [`PluginManager`]: the set of loaded plugins. Loads component files
//! (compiling off the async event path), starts their instances, and
//! registers each of their watches with the shared informer factory, granting
//! the plugin cache access to exactly those resources. Unloading a plugin
//! releases its listeners, which stops informers nobody else uses.
//!
//! It does not deliver events (listeners do) nor watch the directory.

use super::bindings::types::{IndexBy, Registration};
use super::capabilities::HostState;
use super::engine::{Limits, WinkEngine};
use super::instance::PluginInstance;
use super::loader;
use crate::informer::index::IndexSpec;
use crate::informer::{EventHandler, ObjRef, SharedInformerFactory, WatchSpec};
use anyhow::Context;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use wasmtime::component::Linker;

/// One registration of a plugin on one informer.
struct Registered {
    spec: WatchSpec,
    listener_id: u64,
}

struct Running {
    path: PathBuf,
    instance: Arc<PluginInstance>,
    registered: Vec<Registered>,
}

/// A plugin's state, for logs, readiness and tests.
#[derive(Debug, Clone)]
pub struct PluginStatus {
    pub name: String,
    pub path: PathBuf,
    pub synced: bool,
    pub calls: u64,
    pub traps: u64,
    pub watches: Vec<WatchSpec>,
}

/// Delivers one informer's notifications to a plugin and counts down the
/// plugin's outstanding initial syncs.
/// For `reads`, only the sync is tracked and events are not delivered.
struct PluginListener {
    instance: Arc<PluginInstance>,
    pending_syncs: Arc<AtomicUsize>,
    handles_events: bool,
}

impl EventHandler for PluginListener {
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

/// Options for the manager.
#[derive(Debug, Clone, Default)]
pub struct ManagerOptions {
    pub limits: Limits,
    /// Narrow watches that name no namespace to this one.
    pub namespace: Option<String>,
    /// Plugins allowed to watch or read Secrets (`*` for all); deny by default.
    pub allow_secrets: Vec<String>,
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

/// The loaded plugins and their registrations.
pub struct PluginManager {
    engine: WinkEngine,
    linker: Linker<HostState>,
    factory: Arc<SharedInformerFactory>,
    options: ManagerOptions,
    plugins: tokio::sync::Mutex<BTreeMap<String, Running>>,
}

/// The config text for a component: `<stem>.json` beside it, or empty.
pub fn config_for(path: &Path) -> std::io::Result<String> {
    match std::fs::read_to_string(path.with_extension("json")) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(e),
    }
}

impl PluginManager {
    /// A manager with no plugins.
    pub fn new(
        engine: WinkEngine,
        factory: Arc<SharedInformerFactory>,
        options: ManagerOptions,
    ) -> anyhow::Result<Self> {
        let linker = loader::linker(&engine)?;
        Ok(PluginManager {
            engine,
            linker,
            factory,
            options,
            plugins: tokio::sync::Mutex::new(BTreeMap::new()),
        })
    }

    /// The component files of a directory (`*.wasm`), sorted.
    pub fn component_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| format!("cannot read plugin directory {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "wasm"))
            .collect();
        files.sort();
        Ok(files)
    }

    /// Load every component of `dir`. Each failure is logged with its file
    /// and reason and returned; the other plugins run.
    pub async fn load_dir(&self, dir: &Path) -> anyhow::Result<Vec<anyhow::Error>> {
        let mut errors = Vec::new();
        for path in Self::component_files(dir)? {
            if let Err(e) = self.load_file(&path).await {
                tracing::error!("plugin not loaded: {e:#}");
                errors.push(e);
            }
        }
        Ok(errors)
    }

    /// Load (or replace) the plugin in `path`.
    pub async fn load_file(&self, path: &Path) -> anyhow::Result<()> {
        let started = std::time::Instant::now();
        let (engine, linker, owned) =
            (self.engine.clone(), self.linker.clone(), path.to_path_buf());
        let loaded = tokio::task::spawn_blocking(move || loader::load(&engine, &linker, &owned))
            .await
            .context("compile task failed")??;
        let config = config_for(path)
            .with_context(|| format!("{}: cannot read its config", path.display()))?;
        let (engine, limits) = (self.engine.clone(), self.options.limits);
        let (name, pre) = (loaded.name.clone(), loaded.pre.clone());
        let (instance, registration) = tokio::task::spawn_blocking(move || {
            PluginInstance::start(name, pre, &engine, config, limits)
        })
        .await
        .context("init task failed")??;
        self.unload(instance.name()).await;
        let registered = self
            .register(&instance, &registration)
            .await
            .with_context(|| format!("{}: registration failed", path.display()))?;
        tracing::info!(
            plugin = %instance.name(),
            watches = registered.len(),
            load_ms = started.elapsed().as_millis() as u64,
            "plugin loaded from {}", path.display()
        );
        self.plugins.lock().await.insert(
            instance.name().to_string(),
            Running {
                path: path.to_path_buf(),
                instance,
                registered,
            },
        );
        Ok(())
    }

    async fn register(
        &self,
        instance: &Arc<PluginInstance>,
        registration: &Registration,
    ) -> anyhow::Result<Vec<Registered>> {
        struct Wanted {
            spec: WatchSpec,
            resync: Option<Duration>,
            indexes: Vec<(String, IndexSpec)>,
            handles_events: bool,
        }
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
                namespace: w
                    .namespace
                    .clone()
                    .or_else(|| self.options.namespace.clone()),
                label_selector: w.label_selector.clone().filter(|s| !s.is_empty()),
                field_selector: w.field_selector.clone().filter(|s| !s.is_empty()),
            };
            if spec.api_version == "v1"
                && spec.kind == "Secret"
                && !self.secrets_allowed(instance.name())
            {
                anyhow::bail!(
                    "plugin {} asks for Secrets, which the operator has not granted (--allow-secrets {})",
                    instance.name(),
                    instance.name()
                );
            }
            let resync = (handles_events && w.resync_seconds > 0)
                .then(|| Duration::from_secs(w.resync_seconds.into()));
            let indexes = w
                .indexes
                .iter()
                .map(|i| (i.name.clone(), index_spec(&i.by)))
                .collect();
            wanted.push(Wanted {
                spec,
                resync,
                indexes,
                handles_events,
            });
        }
        let mut informers = Vec::new();
        for w in &wanted {
            let informer = self.factory.informer_for(&w.spec).await?;
            for (name, index) in &w.indexes {
                informer
                    .store()
                    .ensure_index(name, &index.to_string(), index.func())
                    .with_context(|| format!("index {name:?} on {}", w.spec.describe()))?;
            }
            informers.push(informer);
        }
        let pending = Arc::new(AtomicUsize::new(wanted.len()));
        if wanted.is_empty() {
            instance.set_synced();
        }
        let mut registered = Vec::new();
        for (w, informer) in wanted.into_iter().zip(&informers) {
            instance.cache_scope().grant(
                &w.spec.api_version,
                &w.spec.kind,
                informer.store().clone(),
            );
            let handler = Arc::new(PluginListener {
                instance: instance.clone(),
                pending_syncs: pending.clone(),
                handles_events: w.handles_events,
            });
            let listener = informer.add_listener(instance.name(), handler, w.resync);
            registered.push(Registered {
                spec: w.spec,
                listener_id: listener.id(),
            });
        }
        Ok(registered)
    }

    fn secrets_allowed(&self, plugin: &str) -> bool {
        self.options
            .allow_secrets
            .iter()
            .any(|p| p == "*" || p == plugin)
    }

    /// Unload a plugin by name: its listeners stop, unused informers stop.
    pub async fn unload(&self, name: &str) -> bool {
        let Some(running) = self.plugins.lock().await.remove(name) else {
            return false;
        };
        for r in running.registered {
            self.factory.release(&r.spec, r.listener_id);
        }
        tracing::info!(plugin = name, "plugin unloaded");
        true
    }

    /// Every plugin's status, by name.
    pub async fn status(&self) -> Vec<PluginStatus> {
        self.plugins
            .lock()
            .await
            .iter()
            .map(|(name, r)| PluginStatus {
                name: name.clone(),
                path: r.path.clone(),
                synced: r.instance.has_synced(),
                calls: r.instance.calls(),
                traps: r.instance.traps(),
                watches: r.registered.iter().map(|x| x.spec.clone()).collect(),
            })
            .collect()
    }
}
