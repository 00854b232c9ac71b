//! The daemon: wires a Kubernetes client, the shared informer factory and the
//! plugin manager together, loads the plugin directory and runs until asked
//! to stop. Owns process-level concerns (client construction, shutdown); the
//! informer and plugin machinery live in their own modules.

use crate::informer::SharedInformerFactory;
use crate::informer::factory::FactoryOptions;
use crate::leader::Elector;
use crate::reports::{Census, CensusFn, ReportWriter, WriterOptions};
use crate::runtime::manager::ManagerOptions;
use crate::runtime::{PluginManager, WinkEngine};
use anyhow::Context;
use kube::config::{KubeConfigOptions, Kubeconfig};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Where the cluster is.
#[derive(Debug, Clone, Default)]
pub struct ClusterOptions {
    /// A kubeconfig file; none to infer (in-cluster, then `~/.kube/config`).
    pub kubeconfig: Option<PathBuf>,
    /// A context of that kubeconfig.
    pub context: Option<String>,
}

/// The cluster's client configuration from the options.
pub async fn config(opts: &ClusterOptions) -> anyhow::Result<kube::Config> {
    let kco = KubeConfigOptions {
        context: opts.context.clone(),
        ..Default::default()
    };
    let config = match &opts.kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &kco).await?
        }
        None if opts.context.is_some() => kube::Config::from_kubeconfig(&kco).await?,
        None => kube::Config::infer().await?,
    };
    Ok(config)
}

/// A running wink: factory, engine and plugins.
pub struct Daemon {
    pub factory: Arc<SharedInformerFactory>,
    pub manager: Arc<PluginManager>,
}

impl Daemon {
    /// Start against the cluster of `config`, load every plugin of `plugins`
    /// (failures are logged; the others run). Informers use a client that
    /// retries what the server asks to retry, as kube's does, and whose
    /// watches read over `factory_options.watch_window`; plugins' writes
    /// use one that does not, so the write capability decides how long a
    /// plugin waits (see `capabilities::cluster`). With `reports`, the
    /// report writer keeps plugins' policy results in PolicyReports.
    pub async fn start(
        config: kube::Config,
        plugins: &Path,
        factory_options: FactoryOptions,
        manager_options: ManagerOptions,
        reports: Option<WriterOptions>,
    ) -> anyhow::Result<Daemon> {
        let daemon = Daemon::new(config, factory_options, manager_options, reports)?;
        daemon.load(plugins).await?;
        Ok(daemon)
    }

    /// The factory and the manager for the cluster of `config`, no plugin
    /// loaded yet (see [`Daemon::start`]).
    pub fn new(
        config: kube::Config,
        factory_options: FactoryOptions,
        mut manager_options: ManagerOptions,
        reports: Option<WriterOptions>,
    ) -> anyhow::Result<Daemon> {
        let client = crate::client::client(config.clone(), factory_options.watch_window)?;
        let mut writes = config;
        writes.default_retry = false;
        let writes = kube::Client::try_from(writes)?;
        manager_options.writes_client = Some(writes.clone());
        let factory = SharedInformerFactory::new(client, factory_options);
        let engine = WinkEngine::new()?;
        let aggregator = manager_options.reports.clone();
        let leadership = manager_options.leadership.clone();
        let manager = PluginManager::new(engine, factory.clone(), manager_options)?;
        if let Some(options) = reports {
            let weak = Arc::downgrade(&manager);
            let census: CensusFn = Arc::new(move || {
                let manager = weak.upgrade();
                Box::pin(async move {
                    match manager {
                        Some(m) => m.report_census().await,
                        None => Census::default(),
                    }
                })
            });
            let writer = ReportWriter::new(writes, aggregator, leadership, census, options);
            tokio::spawn(writer.run());
        }
        Ok(Daemon { factory, manager })
    }

    /// Load every plugin of `plugins` (failures are logged; the others run).
    pub async fn load(&self, plugins: &Path) -> anyhow::Result<()> {
        let errors = self.manager.load_dir(plugins).await?;
        let loaded = self.manager.status().await.len();
        let waiting = self.manager.waiting();
        tracing::info!(loaded, failed = errors.len(), waiting, dir = %plugins.display(), "plugins loaded");
        Ok(())
    }

    /// Stop taking keys from the plugins' work queues (the reconciles in
    /// progress finish), then every informer (and so every listener).
    pub fn shutdown(&self) {
        futures::executor::block_on(self.manager.stop_reconciling());
        self.factory.shutdown();
    }
}

/// How long a shutdown tries to release the Lease, after the plugins.
pub const RELEASE_DEADLINE: Duration = Duration::from_secs(3);

/// Stop `daemon`: no more events, each plugin finishes its current call
/// within `timeout`, then `elector` (if any) releases the Lease for a
/// standby within [`RELEASE_DEADLINE`]. Whether everything stopped in
/// time: when not, something is still blocked (a plugin's call, a write
/// waiting on its rate) and the caller must end the process rather than
/// wait for it, which nothing bounds.
pub async fn stop(daemon: Daemon, elector: Option<Elector>, timeout: Duration) -> bool {
    tracing::info!("shutting down: no more events; each plugin finishes its current call");
    let stopping = tokio::task::spawn_blocking(move || daemon.shutdown());
    let plugins_done = tokio::time::timeout(timeout, stopping).await.is_ok();
    if !plugins_done {
        tracing::warn!("plugins still busy after {timeout:?}: exiting anyway");
    }
    // Last: the Lease goes to a standby at once; a plugin still busy is
    // ended with the process right after.
    let released = match elector {
        Some(elector) => {
            let released = tokio::time::timeout(RELEASE_DEADLINE, elector.shutdown()).await;
            if released.is_err() {
                tracing::warn!(
                    "the Lease was not released within {RELEASE_DEADLINE:?}: a standby takes over once it expires"
                );
            }
            released.is_ok()
        }
        None => true,
    };
    plugins_done && released
}

/// Wait for ctrl-c or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("install SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
