//! [`PluginManager`]: the set of loaded plugins and their lifecycle.
//!
//! Loads component files (compiling off the async event path, through the
//! compile cache), starts their instances, and attaches each of their
//! watches to the shared informer factory, granting cache access to exactly
//! those resources. A reload hands every informer registration over to the
//! new version atomically (old drains what it was given, new gets the cache
//! replayed, then everything after). With tier-up, a new component runs on
//! Winch first and its Cranelift build is handed over when ready. Crash
//! recovery (backoff, restart, quarantine) is in `recovery.rs`. It does not
//! deliver events nor watch the directory.

mod recovery;

use super::bindings::types::{IndexBy, Registration};
use super::capabilities::HostState;
use super::compile_cache::CompileCache;
use super::engine::{Compiler, Limits, WinkEngine};
use super::instance::{CrashReport, PluginInstance};
use super::loader::{self, LoadError};
use crate::informer::index::IndexSpec;
use crate::informer::{EventHandler, ObjRef, SharedInformer, SharedInformerFactory, WatchSpec};
use anyhow::Context;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use wasmtime::component::Linker;

/// One registration of a plugin on one informer.
#[derive(Clone)]
struct Registered {
    spec: WatchSpec,
    listener_id: u64,
}

/// A plugin's lifecycle state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginState {
    Running,
    /// Crashed; a fresh instance starts after the backoff.
    Restarting,
    /// Crashed too often; no deliveries until its file changes.
    Quarantined(String),
}

struct Running {
    path: PathBuf,
    digest: String,
    instance: Arc<PluginInstance>,
    registered: Vec<Registered>,
    state: PluginState,
    consecutive_crashes: u32,
    restarts: u32,
    started: Instant,
}

/// A plugin's status, for logs, readiness and tests.
#[derive(Debug, Clone)]
pub struct PluginStatus {
    pub name: String,
    pub path: PathBuf,
    pub state: PluginState,
    pub synced: bool,
    pub calls: u64,
    pub traps: u64,
    pub restarts: u32,
    pub watches: Vec<WatchSpec>,
}

/// Delivers one informer's notifications to a plugin and counts down the
/// plugin's outstanding initial syncs. For `reads`, only the sync is tracked.
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
#[derive(Debug, Clone)]
pub struct ManagerOptions {
    pub limits: Limits,
    /// Narrow watches that name no namespace to this one.
    pub namespace: Option<String>,
    /// Plugins allowed to watch or read Secrets (`*` for all); deny by default.
    pub allow_secrets: Vec<String>,
    /// Where precompiled components are kept; none to always compile.
    pub compile_cache: Option<PathBuf>,
    /// Consecutive crashes before quarantine.
    pub max_restarts: u32,
    /// First restart delay; doubles per consecutive crash, capped at 30 s.
    pub restart_backoff: Duration,
    /// A crash this long after the last (re)start starts a new series.
    pub healthy_after: Duration,
    /// Bring a plugin whose compiled code is not cached up on Winch first
    /// (~5x faster to compile), then swap in its Cranelift build once the
    /// background compile is done (a second hand-over, with the cache
    /// replayed again). For `wink dev`'s edit loop.
    pub tier_up: bool,
}

impl Default for ManagerOptions {
    fn default() -> Self {
        ManagerOptions {
            limits: Limits::default(),
            namespace: None,
            allow_secrets: Vec::new(),
            compile_cache: None,
            max_restarts: 5,
            restart_backoff: Duration::from_millis(100),
            healthy_after: Duration::from_secs(30),
            tier_up: false,
        }
    }
}

/// A watch or read of a registration, resolved to an informer.
struct Wanted {
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

/// The config text for a component: `<stem>.json` beside it, or empty.
pub fn config_for(path: &Path) -> std::io::Result<String> {
    match std::fs::read_to_string(path.with_extension("json")) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(e),
    }
}

/// The loaded plugins and their registrations.
pub struct PluginManager {
    me: Weak<PluginManager>,
    engine: WinkEngine,
    linker: Linker<HostState>,
    /// The Winch engine and its linker, with `tier_up`.
    baseline: Option<(WinkEngine, Linker<HostState>)>,
    factory: Arc<SharedInformerFactory>,
    options: ManagerOptions,
    cache: Option<Arc<CompileCache>>,
    plugins: tokio::sync::Mutex<BTreeMap<String, Running>>,
    crash_tx: UnboundedSender<CrashReport>,
}

impl PluginManager {
    /// A manager with no plugins; spawns its crash supervisor.
    pub fn new(
        engine: WinkEngine,
        factory: Arc<SharedInformerFactory>,
        options: ManagerOptions,
    ) -> anyhow::Result<Arc<Self>> {
        let linker = loader::linker(&engine)?;
        let cache = match &options.compile_cache {
            Some(dir) => Some(Arc::new(
                CompileCache::open(dir, engine.engine())
                    .with_context(|| format!("cannot open the compile cache {}", dir.display()))?,
            )),
            None => None,
        };
        let baseline = match options.tier_up {
            true => {
                let winch = WinkEngine::with_compiler(Compiler::Winch)?;
                let linker = loader::linker(&winch)?;
                Some((winch, linker))
            }
            false => None,
        };
        let (crash_tx, crash_rx) = unbounded_channel();
        let manager = Arc::new_cyclic(|me| PluginManager {
            me: me.clone(),
            engine,
            linker,
            baseline,
            factory,
            options,
            cache,
            plugins: tokio::sync::Mutex::new(BTreeMap::new()),
            crash_tx,
        });
        tokio::spawn(Self::supervise(Arc::downgrade(&manager), crash_rx));
        Ok(manager)
    }

    /// The compile cache, if any.
    pub fn compile_cache(&self) -> Option<&CompileCache> {
        self.cache.as_deref()
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

    /// Load the plugin in `path`, or reload it if it runs: a failure leaves
    /// the running version untouched. An unchanged component with an
    /// unchanged config is a no-op, whatever the plugin's state.
    pub async fn load_file(&self, path: &Path) -> anyhow::Result<()> {
        let started = Instant::now();
        let owned = path.to_path_buf();
        let (bytes, digest) = tokio::task::spawn_blocking(move || {
            std::fs::read(&owned)
                .map(|b| {
                    let d = loader::digest(&b);
                    (b, d)
                })
                .map_err(|source| LoadError::Read { path: owned, source })
        })
        .await
        .context("read task failed")??;
        let name = loader::plugin_name(path);
        // An unchanged plugin (same bytes, same config) is a no-op, decided
        // before anything is compiled: a running one keeps running, one
        // being restarted keeps its backoff and crash count, a quarantined
        // one stays quarantined until its component or config changes.
        {
            let plugins = self.plugins.lock().await;
            if let Some(r) = plugins.get(&name)
                && r.digest == digest
                && config_for(path).ok().as_deref() == Some(r.instance.config())
            {
                return Ok(());
            }
        }
        let config =
            config_for(path).with_context(|| format!("{}: cannot read its config", path.display()))?;
        let cached = self.cache.as_ref().is_some_and(|c| c.contains(&digest));
        let baseline = self.baseline.clone().filter(|_| !cached);
        let Some((winch, winch_linker)) = baseline else {
            let loaded = self
                .compile(&self.engine, &self.linker, path, bytes, digest)
                .await?;
            return self.install(loaded, &self.engine, config, started, None).await;
        };
        // Tier up: Winch now, Cranelift in the background, swapped in if the
        // plugin still runs this very component and config by then.
        let loaded = self
            .compile(&winch, &winch_linker, path, bytes.clone(), digest.clone())
            .await?;
        self.install(loaded, &winch, config.clone(), started, None)
            .await?;
        let me = self.me.clone();
        let path = path.to_path_buf();
        tokio::spawn(async move {
            let Some(m) = me.upgrade() else { return };
            let optimized = Instant::now();
            let result = match m
                .compile(&m.engine, &m.linker, &path, bytes, digest.clone())
                .await
            {
                Ok(loaded) => {
                    m.install(loaded, &m.engine, config, optimized, Some(&digest))
                        .await
                }
                Err(e) => Err(e),
            };
            if let Err(e) = result {
                tracing::warn!(path = %path.display(), "plugin stays on Winch: its Cranelift build failed: {e:#}");
            }
        });
        Ok(())
    }

    /// Compile and check a component off the async threads.
    async fn compile(
        &self,
        engine: &WinkEngine,
        linker: &Linker<HostState>,
        path: &Path,
        bytes: Vec<u8>,
        digest: String,
    ) -> anyhow::Result<loader::LoadedComponent> {
        // Only Cranelift builds are worth keeping in the compile cache.
        let cache = self
            .cache
            .clone()
            .filter(|_| engine.compiler() == Compiler::Cranelift);
        let (engine, linker, owned) = (engine.clone(), linker.clone(), path.to_path_buf());
        Ok(tokio::task::spawn_blocking(move || {
            loader::load_digested(&engine, &linker, cache.as_deref(), &owned, &bytes, digest)
        })
        .await
        .context("compile task failed")??)
    }

    /// Start a compiled component and hand its registrations over from the
    /// running version, if any. With `tier_up_of`, only if the running
    /// version is the Winch build of that digest (else the new one is
    /// dropped unused).
    async fn install(
        &self,
        loaded: loader::LoadedComponent,
        engine: &WinkEngine,
        config: String,
        started: Instant,
        tier_up_of: Option<&str>,
    ) -> anyhow::Result<()> {
        let path = loaded.path.clone();
        let (instance, registration) = self
            .start_instance(loaded.name.clone(), loaded.pre.clone(), engine, config)
            .await?;
        let wanted = self
            .resolve(instance.name(), &registration)
            .await
            .with_context(|| format!("{}: registration failed", path.display()))?;
        let mut plugins = self.plugins.lock().await;
        if let Some(digest) = tier_up_of {
            let current = plugins.get(instance.name());
            let still = current.is_some_and(|r| {
                r.digest == digest
                    && r.state == PluginState::Running
                    && r.instance.engine().compiler() == Compiler::Winch
                    && r.instance.config() == instance.config()
            });
            if !still {
                return Ok(());
            }
        }
        let previous = plugins.remove(instance.name());
        let registered = self.attach(
            &instance,
            wanted,
            previous.as_ref().map(|p| p.registered.as_slice()),
        );
        let what = match (previous.is_some(), tier_up_of.is_some()) {
            (_, true) => "tiered up to Cranelift",
            (true, false) => "reloaded",
            (false, false) => "loaded",
        };
        tracing::info!(
            plugin = %instance.name(),
            watches = registered.len(),
            cache_hit = loaded.cache_hit,
            compiler = ?engine.compiler(),
            load_ms = started.elapsed().as_millis() as u64,
            "plugin {what} from {}",
            path.display()
        );
        plugins.insert(
            instance.name().to_string(),
            Running {
                path,
                digest: loaded.digest,
                instance,
                registered,
                state: PluginState::Running,
                consecutive_crashes: 0,
                restarts: 0,
                started: Instant::now(),
            },
        );
        Ok(())
    }

    async fn start_instance(
        &self,
        name: Arc<str>,
        pre: super::bindings::PluginPre<HostState>,
        engine: &WinkEngine,
        config: String,
    ) -> anyhow::Result<(Arc<PluginInstance>, Registration)> {
        let (engine, limits, tx) = (engine.clone(), self.options.limits, self.crash_tx.clone());
        Ok(tokio::task::spawn_blocking(move || {
            PluginInstance::start(name, pre, &engine, config, limits, Some(tx))
        })
        .await
        .context("init task failed")??)
    }

    /// Resolve a registration's watches and reads to running informers, with
    /// their indexes ensured.
    async fn resolve(&self, plugin: &str, registration: &Registration) -> anyhow::Result<Vec<Wanted>> {
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
                    .store()
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
    fn attach(
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
            let handler = Arc::new(PluginListener {
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

    /// Unload a plugin by name: its listeners stop, unused informers stop.
    pub async fn unload(&self, name: &str) -> bool {
        let Some(running) = self.plugins.lock().await.remove(name) else {
            return false;
        };
        for r in running.registered {
            self.factory.release(&r.spec, r.listener_id);
        }
        tracing::info!(plugin = %name, "plugin unloaded");
        true
    }

    /// Unload the plugin loaded from `path`, if any.
    pub async fn unload_path(&self, path: &Path) -> bool {
        let name = self
            .plugins
            .lock()
            .await
            .iter()
            .find(|(_, r)| r.path == path)
            .map(|(n, _)| n.clone());
        match name {
            Some(n) => self.unload(&n).await,
            None => false,
        }
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
                state: r.state.clone(),
                synced: r.instance.has_synced(),
                calls: r.instance.calls(),
                traps: r.instance.traps(),
                restarts: r.restarts,
                watches: r.registered.iter().map(|x| x.spec.clone()).collect(),
            })
            .collect()
    }
}
