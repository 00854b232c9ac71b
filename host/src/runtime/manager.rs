//! [`PluginManager`]: the set of loaded plugins. Loads component files
//! (compiling off the async event path), starts their instances, and
//! registers each of their watches with the shared informer factory, granting
//! the plugin cache access to exactly those resources. Unloading a plugin
//! releases its listeners, which stops informers nobody else uses.
//!
//! It does not deliver events (listeners do) nor watch the directory.

use super::bindings::types::Registration;
use super::capabilities::HostState;
use super::engine::{Limits, WinkEngine};
use super::instance::PluginInstance;
use super::loader;
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
struct PluginListener {
    instance: Arc<PluginInstance>,
    pending_syncs: Arc<AtomicUsize>,
}

impl EventHandler for PluginListener {
    fn on_add(&self, obj: &ObjRef, in_initial_list: bool) {
        self.instance.on_add(obj, in_initial_list)
    }
    fn on_update(&self, old: &ObjRef, new: &ObjRef) {
        self.instance.on_update(old, new)
    }
    fn on_delete(&self, obj: &ObjRef, final_state_unknown: bool) {
        self.instance.on_delete(obj, final_state_unknown)
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
        let mut specs = Vec::new();
        for w in &registration.watches {
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
            let resync =
                (w.resync_seconds > 0).then(|| Duration::from_secs(w.resync_seconds.into()));
            specs.push((spec, resync));
        }
        let mut informers = Vec::new();
        for (spec, _) in &specs {
            informers.push(self.factory.informer_for(spec).await?);
        }
        let pending = Arc::new(AtomicUsize::new(specs.len()));
        if specs.is_empty() {
            instance.set_synced();
        }
        let mut registered = Vec::new();
        for ((spec, resync), informer) in specs.into_iter().zip(&informers) {
            instance
                .cache_scope()
                .grant(&spec.api_version, &spec.kind, informer.store().clone());
            let handler = Arc::new(PluginListener {
                instance: instance.clone(),
                pending_syncs: pending.clone(),
            });
            let listener = informer.add_listener(instance.name(), handler, resync);
            registered.push(Registered {
                spec,
                listener_id: listener.id(),
            });
        }
        Ok(registered)
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
