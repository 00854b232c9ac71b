//! [`PluginManager`]: the set of loaded plugins and their lifecycle.
//!
//! Loads component files (compiling off the async event path, through the
//! precompiled directory), starts their instances, and attaches each of their
//! watches to the shared informer factory, granting cache access to exactly
//! those resources. A reload hands every informer registration over to the
//! new version atomically (old drains what it was given, new gets the cache
//! replayed, then everything after). With tier-up, a new component runs on
//! Winch, and its Cranelift build is cached for its next load. Crash
//! recovery (backoff, restart, quarantine) is in `recovery.rs`. It does not
//! deliver events nor watch the directory.

mod admitting;
mod allowed;
mod compiling;
mod enqueueing;
mod excepting;
mod lifecycle;
mod naming;
mod reconciling;
mod recovery;
mod registration;
mod regrant;
mod reporting;
mod scoping;
mod takeover;
mod tier_up;
mod unloading;
pub use admitting::PluginWebhooks;
pub use allowed::{Allowed, allowed};
pub use registration::declared_writes;
pub use registration::{Source, index_spec, sources};
mod waiting;

pub use enqueueing::keys as enqueue_keys;
pub use lifecycle::{CrashPolicy, PluginState, crash_kind};
pub use reconciling::QueueStatus;

use super::admission::AdmissionPool;
use super::bindings::types::{Registration, Webhook};
use super::capabilities::HostState;
use super::capabilities::cluster::{ClusterAccess, TokenBucket};
use super::engine::{Compiler, Limits, WinkEngine};
use super::grants::{Grants, GrantsFile};
use super::instance::{CrashReport, PluginInstance};
use super::loader;
use super::plugin_file;
use super::precompiled::Precompiled;
use anyhow::Context;
use lifecycle::Lifecycle;
use registration::Registered;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use unloading::plugin_path;
use wasmtime::component::Linker;
use wink_informer::{SharedInformerFactory, WatchSpec};

/// How many plugins of a directory load at once: each compile is itself
/// parallel, so a few at a time keep the cores busy without a slow one
/// holding the others back.
pub const PARALLEL_LOADS: usize = 4;

/// One loaded plugin: where it came from, its current instance, its
/// registrations on informers and its lifecycle.
struct LoadedPlugin {
    path: PathBuf,
    digest: String,
    instance: Arc<PluginInstance>,
    registered: Vec<Registered>,
    lifecycle: Lifecycle,
    /// What it declared: its writes, and whether it records Events.
    declared: (Vec<super::grants::Declared>, bool),
    /// The webhooks it serves, and the instances that answer them.
    admission: Option<(Vec<Webhook>, Arc<AdmissionPool>)>,
    /// The caps its grant set when it was loaded (a change reloads it).
    caps: super::grants::Caps,
}

/// A plugin's status, for logs, readiness and tests.
#[derive(Debug, Clone)]
pub struct PluginStatus {
    pub name: String,
    pub path: PathBuf,
    /// The component's digest ([`loader::digest`]).
    pub digest: String,
    /// The compiler of its running code.
    pub compiler: Compiler,
    /// Its instance's linear memory cap, bytes (by language unless set).
    pub memory_bytes: usize,
    /// The fuel of one of its calls, when its grant caps it.
    pub fuel: Option<u64>,
    pub state: PluginState,
    pub synced: bool,
    /// Calls into its current instance, and its admission calls since it
    /// was loaded.
    pub calls: u64,
    pub traps: u64,
    pub restarts: u32,
    /// Crashes since it was loaded, every instance's.
    pub crashes: u64,
    pub watches: Vec<WatchSpec>,
    /// What it may write (declared and granted), when anything.
    pub permissions: Option<super::grants::Permissions>,
    /// Writes made: (verb, resource, outcome, count).
    pub writes: Vec<(&'static str, String, String, u64)>,
    /// What it declared: its writes, and whether it records Events.
    pub declared: (Vec<super::grants::Declared>, bool),
    /// Deliveries to its current instance: (adds, updates, deletes).
    pub deliveries: (u64, u64, u64),
    /// The durations of the calls counted in `calls`.
    pub handler_time: crate::call_times::CallTimes,
    /// Crashes by kind, and the last one's reason.
    pub crash_kinds: Vec<(&'static str, u64)>,
    pub last_error: Option<String>,
    /// Cache queries: (operation, result, count).
    pub cache_queries: Vec<(&'static str, &'static str, u64)>,
    /// Waits on its write rate limits: how many, and their total.
    pub rate_waits: (u64, Duration),
}

/// Options for the manager.
#[derive(Clone)]
pub struct ManagerOptions {
    pub limits: Limits,
    /// Narrow watches that name no namespace to this one.
    pub namespace: Option<String>,
    /// What plugins may do beyond reading what they watch: writes, Events,
    /// Secrets (deny by default).
    pub grants: Grants,
    /// The file the grants come from, read again when it changes.
    pub grants_file: Option<GrantsFile>,
    /// The client plugins' writes go through (default: the informers').
    pub writes_client: Option<kube::Client>,
    /// Whether this replica leads (always, without leader election).
    pub leadership: crate::leadership::Leadership,
    /// Where precompiled components are kept; none to always compile.
    pub precompiled: Option<PathBuf>,
    /// The size, in bytes, the precompiled directory is kept under.
    pub precompiled_limit: u64,
    /// Consecutive crashes before quarantine.
    pub max_restarts: u32,
    /// First restart delay; doubles per consecutive crash, capped at
    /// [`lifecycle::MAX_BACKOFF`].
    pub restart_backoff: Duration,
    /// A crash this long after the last (re)start starts a new series.
    pub healthy_after: Duration,
    /// Load only the plugins of these names (file stems); other components
    /// of the directory are skipped. None: every one.
    pub only: Option<std::collections::BTreeSet<String>>,
    /// Where plugins' policy results are gathered (the report writer reads
    /// them).
    pub reports: Arc<crate::reports::Aggregator>,
    /// Bring a plugin whose compiled code is not precompiled up on Winch
    /// (~3-5x faster to compile) and compile its Cranelift build in the
    /// background into the precompiled directory, for the next load of the
    /// same component; the running plugin is not swapped (that would replay
    /// its initial list again). For `wink dev`'s edit loop.
    pub tier_up: bool,
    /// Honour the operator's WinkExceptions ([`PluginManager::exceptions`]):
    /// every watch then tracks what it delivered, and a change of the
    /// exceptions (or an expiry) re-decides the objects.
    pub exceptions: bool,
}

impl ManagerOptions {
    /// When crashes restart a plugin and when they quarantine it.
    pub fn crash_policy(&self) -> CrashPolicy {
        CrashPolicy {
            max_restarts: self.max_restarts,
            restart_backoff: self.restart_backoff,
            healthy_after: self.healthy_after,
        }
    }
}

impl Default for ManagerOptions {
    fn default() -> Self {
        ManagerOptions {
            limits: Limits::default(),
            namespace: None,
            grants: Grants::default(),
            grants_file: None,
            writes_client: None,
            leadership: crate::leadership::Leadership::always(),
            precompiled: None,
            precompiled_limit: super::precompiled::DEFAULT_LIMIT,
            max_restarts: 5,
            restart_backoff: Duration::from_millis(100),
            healthy_after: Duration::from_secs(30),
            tier_up: false,
            reports: crate::reports::Aggregator::new(),
            only: None,
            exceptions: false,
        }
    }
}

/// The loaded plugins and their registrations.
pub struct PluginManager {
    me: Weak<PluginManager>,
    engine: WinkEngine,
    linker: Linker<HostState>,
    /// The Winch engine and its linker, with `tier_up`.
    baseline: Option<(WinkEngine, Linker<HostState>)>,
    /// The metered engine and its linker, once a plugin under a fuel cap
    /// is loaded ([`WinkEngine::metered`]).
    metered: tokio::sync::OnceCell<(WinkEngine, Linker<HostState>)>,
    factory: Arc<SharedInformerFactory>,
    options: ManagerOptions,
    precompiled: Option<Arc<Precompiled>>,
    plugins: tokio::sync::Mutex<BTreeMap<String, LoadedPlugin>>,
    crash_tx: UnboundedSender<CrashReport>,
    /// How plugins reach the API server (writes, Events).
    cluster: Arc<ClusterAccess>,
    /// Plugins waiting for the API server.
    waiting: waiting::WaitingPlugins,
    /// The grants in force.
    grants: regrant::LiveGrants,
    /// The plugins' work queues.
    queues: reconciling::Queues,
    /// Components compiled for loads ([`Self::compilations`]).
    compilations: std::sync::atomic::AtomicU64,
    /// The Namespace informer scopes read, once one does.
    namespaces: tokio::sync::OnceCell<Arc<wink_informer::SharedInformer>>,
    /// The operator's exceptions in force (`WinkException`s).
    exceptions: crate::exceptions::ExceptionSet,
    /// The teams' CPU shares ([`crate::cpu_share`]).
    cpu_shares: crate::cpu_share::CpuShares,
    /// The teams' log budgets ([`crate::stdio::TeamLogBudgets`]).
    log_budgets: crate::stdio::TeamLogBudgets,
}

impl PluginManager {
    /// A manager with no plugins; spawns its crash supervisor.
    pub fn new(
        engine: WinkEngine,
        factory: Arc<SharedInformerFactory>,
        options: ManagerOptions,
    ) -> anyhow::Result<Arc<Self>> {
        let linker = loader::linker(&engine)?;
        // A directory that cannot be used costs compile time, never the
        // daemon: run uncached and say why.
        let precompiled = options.precompiled.as_deref().and_then(|dir| {
            match Precompiled::open_bounded(dir, engine.engine(), options.precompiled_limit) {
                Ok(p) => Some(Arc::new(p)),
                Err(e) => {
                    tracing::warn!("running without precompiled components (every load compiles): {e}");
                    None
                }
            }
        });
        let baseline = match options.tier_up {
            true => {
                let winch = WinkEngine::with_compiler(Compiler::Winch)?;
                let linker = loader::linker(&winch)?;
                Some((winch, linker))
            }
            false => None,
        };
        let daemon_rate = options.grants.daemon_rate();
        let mut cluster = ClusterAccess::new(
            factory.clone(),
            options.writes_client.clone(),
            tokio::runtime::Handle::current(),
            TokenBucket::new(daemon_rate.qps, daemon_rate.burst),
        );
        cluster.leadership = options.leadership.clone();
        let cluster = Arc::new(cluster);
        if options.grants.grants_whatever_is_declared() {
            tracing::info!("every plugin is granted whatever it declares (writes, Events, Secrets)");
        }
        let (crash_tx, crash_rx) = unbounded_channel();
        let grants = regrant::LiveGrants::new(options.grants.clone(), options.grants_file.clone());
        let manager = Arc::new_cyclic(|me| PluginManager {
            me: me.clone(),
            engine,
            linker,
            baseline,
            metered: Default::default(),
            factory,
            cluster,
            options,
            precompiled,
            plugins: tokio::sync::Mutex::new(BTreeMap::new()),
            waiting: Default::default(),
            crash_tx,
            grants,
            queues: Default::default(),
            compilations: Default::default(),
            namespaces: Default::default(),
            exceptions: Default::default(),
            cpu_shares: Default::default(),
            log_budgets: Default::default(),
        });
        tokio::spawn(Self::supervise(Arc::downgrade(&manager), crash_rx));
        if manager.options.exceptions {
            tokio::spawn(Self::follow_exceptions(Arc::downgrade(&manager)));
        }
        Ok(manager)
    }

    /// The operator's exceptions in force (`WinkException`s).
    pub fn exceptions(&self) -> &crate::exceptions::ExceptionSet {
        &self.exceptions
    }

    /// Whether this replica leads.
    pub fn leadership(&self) -> &crate::leadership::Leadership {
        &self.options.leadership
    }

    /// The precompiled directory, if any.
    pub fn precompiled(&self) -> Option<&Precompiled> {
        self.precompiled.as_deref()
    }

    /// Load every component of `dir`, [`PARALLEL_LOADS`] at a time, so a
    /// slow compile (a large Python component on Winch) delays no other
    /// plugin's start. Each failure is logged with its file and reason and
    /// returned; the other plugins run.
    pub async fn load_dir(&self, dir: &Path) -> anyhow::Result<Vec<anyhow::Error>> {
        use futures::StreamExt;
        let files = plugin_file::component_files(dir)
            .with_context(|| format!("cannot read plugin directory {}", dir.display()))?;
        let loads = futures::stream::iter(files).map(|path| async move { self.load_file(&path).await });
        let mut done = loads.buffer_unordered(PARALLEL_LOADS);
        let mut errors = Vec::new();
        while let Some(loaded) = done.next().await {
            if let Err(e) = loaded {
                tracing::error!("plugin not loaded: {e:#}");
                errors.push(e);
            }
        }
        Ok(errors)
    }

    /// Load the plugin in `path`, or reload it if it runs: a failure leaves
    /// the running version untouched. An unchanged component with an
    /// unchanged config is a no-op, whatever the plugin's state. A plugin
    /// whose resources the API server cannot resolve now (unreachable, 5xx,
    /// not served yet) waits and is loaded again with backoff: not an error.
    pub async fn load_file(&self, path: &Path) -> anyhow::Result<()> {
        let path = &plugin_path(path);
        let done = self.load_file_once(path).await;
        if let Err(e) = &done
            && let Some(why) = e.downcast_ref::<waiting::Unresolved>()
        {
            self.retry_later(path, why);
            return Ok(());
        }
        self.waiting.stop(path);
        done
    }

    /// Plugins waiting for the API server to resolve their resources.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    async fn load_file_once(&self, path: &Path) -> anyhow::Result<()> {
        let started = Instant::now();
        if let Some(only) = &self.options.only
            && !plugin_file::plugin_name(path).is_ok_and(|n| only.contains(&n))
        {
            tracing::debug!(path = %path.display(), "not one of the plugins to load: skipped");
            return Ok(());
        }
        let owned = path.to_path_buf();
        // Read (checked, capped) off the async threads and before any lock.
        let (files, digest) = tokio::task::spawn_blocking(move || {
            plugin_file::read_plugin(&owned).map(|files| {
                let digest = loader::digest(&files.component);
                (files, digest)
            })
        })
        .await
        .context("read task failed")??;
        let plugin_file::PluginFiles {
            name: _,
            component: bytes,
            config,
        } = files;
        // An unchanged plugin (same bytes, same config) is a no-op, decided
        // before anything is compiled: a running one keeps running, one
        // being restarted keeps its backoff and crash count, a quarantined
        // one stays quarantined until its component or config changes.
        {
            let plugins = self.plugins.lock().await;
            if let Some(r) = plugins.values().find(|r| r.path == path)
                && r.digest == digest
                && r.instance.config() == config
            {
                return Ok(());
            }
        }
        self.compile_and_install(path, bytes, digest, config, started)
            .await
    }

    /// Start a compiled component and hand its registrations over from the
    /// running version, if any.
    async fn install(
        &self,
        loaded: loader::LoadedComponent,
        engine: &WinkEngine,
        config: String,
        started: Instant,
    ) -> anyhow::Result<()> {
        let path = loaded.path.clone();
        let daemon = self.options.limits.for_language(loaded.language);
        let limits = |name: &str| -> anyhow::Result<Limits> {
            Ok(daemon.with_caps(self.caps(name).with_context(|| format!("{}", path.display()))?))
        };
        let (mut instance, mut registration) = self
            .start_instance(
                loaded.name.clone(),
                loaded.pre.clone(),
                engine,
                config.clone(),
                limits(&loaded.name)?,
            )
            .await?;
        // A plugin's one name is the one it declares: its Store, field
        // manager and reports carry it from the start, so an instance
        // started under the file's name is started again under it.
        if let Some(declared) = registration.name.clone().filter(|n| **n != *loaded.name) {
            naming::check(&declared).with_context(|| format!("{}: registration refused", path.display()))?;
            // The engine was chosen by the file's name: a fuel cap must
            // hold under the declared name too, or not at all.
            if limits(&declared)?.fuel.is_some() != engine.meters_fuel() {
                anyhow::bail!(
                    "{}: the plugin declares the name {declared:?}, whose grant {} a fuel cap, unlike \
                     its file's name {:?}: name the file {declared}.wasm",
                    path.display(),
                    if engine.meters_fuel() { "sets no" } else { "sets" },
                    loaded.name
                );
            }
            (instance, registration) = self
                .start_instance(
                    declared.clone().into(),
                    loaded.pre.clone(),
                    engine,
                    config,
                    limits(&declared)?,
                )
                .await?;
        }
        naming::unserved(&registration)
            .with_context(|| format!("{}: registration refused", path.display()))?;
        let caps = self.caps(instance.name())?;
        if let Some(other) = self.grants().other_spelling(instance.name()) {
            tracing::warn!(
                plugin = %instance.name(),
                "the grants file names this plugin {other:?}: that entry is used; rename it to {:?}",
                instance.name()
            );
        }
        let resolution = self
            .resolve(instance.name(), &registration)
            .await
            .with_context(|| format!("{}: registration failed", path.display()))?;
        if !resolution.missing.is_empty() {
            let advice = self.grant_advice(instance.name(), &resolution.missing);
            tracing::warn!(plugin = %instance.name(), "{advice}");
        }
        let admission = self.admission_pool(&instance, &registration).await?;
        let mut plugins = self.plugins.lock().await;
        if let Some(other) = plugins
            .get(instance.name())
            .filter(|r| r.path != path)
            .map(|r| r.path.clone())
        {
            anyhow::bail!(
                "{}: the plugin name {:?} is taken by {}: give one of them another name",
                path.display(),
                instance.name(),
                other.display()
            );
        }
        // The running version of this file, whatever name it had.
        let previous_name = plugins
            .iter()
            .find(|(_, r)| r.path == path)
            .map(|(n, _)| n.clone());
        let previous = previous_name.and_then(|n| plugins.remove(&n));
        if let Some(p) = previous.as_ref().filter(|p| p.instance.name() != instance.name()) {
            self.options.reports.unload(p.instance.name());
            self.queues.remove(p.instance.name());
        }
        let declared = resolution.declared.clone();
        let registered = self.attach(
            &instance,
            resolution,
            previous.as_ref().map(|p| p.registered.as_slice()),
        );
        let what = match previous.is_some() {
            true => "reloaded",
            false => "loaded",
        };
        tracing::info!(
            plugin = %instance.name(),
            watches = registration::watched(&registered).len(),
            cache_hit = loaded.cache_hit,
            compiler = ?engine.compiler(),
            load_ms = started.elapsed().as_millis() as u64,
            "plugin {what} from {}",
            path.display()
        );
        let lifecycle = Lifecycle::installed(
            engine.compiler() == Compiler::Winch && self.baseline.is_some() && self.precompiled.is_some(),
            Instant::now(),
        );
        plugins.insert(
            instance.name().to_string(),
            LoadedPlugin {
                path,
                digest: loaded.digest,
                instance,
                registered,
                lifecycle,
                declared,
                admission,
                caps,
            },
        );
        Ok(())
    }

    async fn start_instance(
        &self,
        name: Arc<str>,
        pre: loader::ComponentPre,
        engine: &WinkEngine,
        config: String,
        limits: Limits,
    ) -> anyhow::Result<(Arc<PluginInstance>, Registration)> {
        let (engine, tx) = (engine.clone(), self.crash_tx.clone());
        let log = self.log_budget(&name);
        Ok(tokio::task::spawn_blocking(move || {
            PluginInstance::start_logged(name, pre, &engine, config, limits, Some(tx), log)
        })
        .await
        .context("init task failed")??)
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
                digest: r.digest.clone(),
                compiler: r.instance.engine().compiler(),
                memory_bytes: r.instance.limits().memory_bytes,
                fuel: r.instance.limits().fuel,
                state: r.lifecycle.state().clone(),
                synced: r.instance.has_synced(),
                calls: admitting::calls(r),
                traps: r.instance.traps(),
                restarts: r.lifecycle.restarts(),
                crashes: r.lifecycle.crashes(),
                watches: registration::watched(&r.registered),
                permissions: r.instance.write_scope().get().map(|a| a.permissions().clone()),
                writes: r
                    .instance
                    .write_scope()
                    .get()
                    .map(|a| a.write_counts())
                    .unwrap_or_default(),
                declared: r.declared.clone(),
                deliveries: r.instance.deliveries(),
                handler_time: admitting::call_times(r),
                crash_kinds: r.lifecycle.crash_kinds().iter().map(|(k, n)| (*k, *n)).collect(),
                last_error: r.lifecycle.last_error().map(str::to_string),
                cache_queries: r.instance.cache_scope().query_counts(),
                rate_waits: r
                    .instance
                    .write_scope()
                    .get()
                    .map(|a| a.rate_waits())
                    .unwrap_or_default(),
            })
            .collect()
    }
}
