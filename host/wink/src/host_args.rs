//! `wink run`'s and `wink dev`'s flags for the daemon (`HostArgs`), and
//! how they become the daemon's options and a running daemon (`serve`).
//! Owns only that translation; the commands are `main`'s.

use super::report_flags;
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use wink::daemon::{self, Daemon};
use wink::informer::factory::FactoryOptions;
use wink::informer::object::CachePolicy;
use wink::listener::{self, ListenOptions};
use wink::runtime::engine::DEFAULT_MEMORY_BYTES;
use wink::runtime::grants::{Grants, GrantsFile};
use wink::runtime::manager::ManagerOptions;
use wink::runtime::precompiled::Precompiled;
use wink::runtime::{Limits, reload};

#[derive(Args)]
pub(crate) struct HostArgs {
    /// Directory of plugin components (`*.wasm`, optional `<name>.json` config).
    #[arg(long, default_value = DEFAULT_PLUGINS)]
    pub(crate) plugins: PathBuf,
    /// Narrow watches that name no namespace to this namespace.
    #[arg(long)]
    pub(crate) namespace: Option<String>,
    /// Initial lists through a streaming watch (sendInitialEvents), with a
    /// fallback to paged lists on a server that refuses it:
    /// `--streaming-lists=false` forces paging.
    #[arg(long, num_args = 0..=1, default_value_t = true, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub(crate) streaming_lists: bool,
    /// Under a steady stream, read watch events up to this late (plus the
    /// timer's 1 ms), many per wake-up: microseconds, 0 for each as it comes.
    #[arg(long, default_value_t = 2000)]
    pub(crate) watch_window_us: u64,
    /// Do not watch the plugin directory for changes.
    #[arg(long)]
    pub(crate) no_reload: bool,
    /// Directory of precompiled components (default: ~/.cache/wink/components).
    #[arg(long, alias = "compile-cache")]
    pub(crate) precompiled: Option<PathBuf>,
    /// Always compile; never read or write precompiled components.
    #[arg(long, alias = "no-compile-cache")]
    pub(crate) no_precompiled: bool,
    /// Keep the precompiled directory under this size, MiB: the entries
    /// used least recently go first.
    #[arg(long, default_value_t = 1024)]
    pub(crate) precompiled_max_mib: u64,
    /// Deadline of one call into a plugin, milliseconds.
    #[arg(long, default_value_t = 1000)]
    pub(crate) call_deadline_ms: u64,
    /// Memory cap of one plugin instance, MiB, for every plugin. Without
    /// it: 64, and 256 for JavaScript plugins (whose engine collects its
    /// heap late).
    #[arg(long)]
    pub(crate) memory_mib: Option<usize>,
    /// Consecutive crashes before a plugin is quarantined.
    #[arg(long, default_value_t = 5)]
    pub(crate) max_restarts: u32,
    /// Plugins allowed to watch or read Secrets (`*` for all); the same as
    /// `secrets: true` in their grant.
    #[arg(long)]
    pub(crate) allow_secrets: Vec<String>,
    /// The operator's grants (YAML): writes, Events, Secrets, audit mode and
    /// write rates per plugin. Without it, plugins may only read.
    #[arg(long)]
    pub(crate) grants: Option<PathBuf>,
    /// Grant whatever plugins declare (`wink dev` without `--grants`).
    #[arg(skip)]
    pub(crate) grant_declared: bool,
    /// Load only these plugins of the directory (`wink dev`: the examples).
    #[arg(skip)]
    pub(crate) only: Option<std::collections::BTreeSet<String>>,
    /// Pending notifications per plugin past which they coalesce per object
    /// (0: never coalesce, an unbounded backlog like client-go's).
    #[arg(long, default_value_t = wink::informer::factory::DEFAULT_COALESCE_AFTER)]
    pub(crate) coalesce_after: usize,
    /// Serve a read-only HTTP view of the cache on this address (e.g. 127.0.0.1:8080).
    #[arg(long)]
    pub(crate) cache_view: Option<SocketAddr>,
    /// Contend for leadership on a coordination.k8s.io/v1 Lease: only the
    /// leader delivers events and writes; a standby keeps its caches current
    /// and takes over with the cache replayed (no relist).
    #[arg(long)]
    pub(crate) leader_elect: bool,
    /// The Lease's namespace.
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    pub(crate) leader_elect_namespace: String,
    /// The Lease's name.
    #[arg(long, default_value = "wink")]
    pub(crate) leader_elect_lease: String,
    /// This replica's identity (default: the pod name, else host and pid).
    #[arg(long, env = "POD_NAME")]
    pub(crate) leader_elect_identity: Option<String>,
    /// How long the Lease is valid after a renewal, milliseconds.
    #[arg(long, default_value_t = 15_000)]
    pub(crate) lease_duration_ms: u64,
    /// How long a leader tries to renew before it stands down, milliseconds.
    #[arg(long, default_value_t = 10_000)]
    pub(crate) renew_deadline_ms: u64,
    /// How often candidates try and the leader renews, milliseconds.
    #[arg(long, default_value_t = 2_000)]
    pub(crate) retry_period_ms: u64,
    /// How long a shutdown waits for plugins to finish their current calls,
    /// milliseconds.
    #[arg(long, default_value_t = 10_000)]
    pub(crate) shutdown_timeout_ms: u64,
    /// Serve the admin endpoints (/healthz, /readyz, /metrics,
    /// /debug/plugins, and the cache view's /cache/...) on this address
    /// (e.g. 127.0.0.1:9090).
    #[arg(long)]
    pub(crate) admin_addr: Option<SocketAddr>,
    #[command(flatten)]
    pub(crate) admission: wink::admission::flags::AdmissionFlags,
    /// Let HTTP surfaces (the admin server, the cache view) listen on a non-loopback address:
    /// they have no authentication.
    #[arg(long)]
    pub(crate) allow_non_loopback: bool,
    /// Bring a changed plugin up on Winch (compiles 3-6x faster) and build
    /// its Cranelift code in the background for its next load (it is not
    /// swapped in: that would replay its initial list; builds run one at a
    /// time on a low-priority thread; with `--no-precompiled`, none is made
    /// and plugins stay on Winch): `--tier-up` or `--tier-up=false`
    /// (default: on in `wink dev`, off in `wink run`).
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    pub(crate) tier_up: Option<bool>,
    /// Hold cached objects' JSON compressed (LZ4): about half the
    /// memory for a few µs per event: `--cache-compression=false` to turn off.
    #[arg(long, num_args = 0..=1, default_value_t = true, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub(crate) cache_compression: bool,
    #[command(flatten)]
    pub(crate) reports: report_flags::ReportFlags,
    #[command(flatten)]
    pub(crate) oci: wink_oci::plugins::PluginRefArgs,
    /// Run the WinkPlugin objects of the cluster beside the plugin
    /// directory: `auto` when their CRD is installed (`wink manifests
    /// --winkplugins` ships it), `install` to create it when missing,
    /// `off` (default: auto in `wink run`, install in `wink dev`).
    #[arg(long, value_enum)]
    pub(crate) winkplugins: Option<wink::winkplugins::Watch>,
    /// Honour WinkExceptions in these namespaces alone (`*`: all), as
    /// Kyverno's `--exceptionNamespace`; RBAC on `winkexceptions` says who
    /// may create them there. Without it, exceptions are off and nothing
    /// watches them. The CRD is created when missing.
    #[arg(long, value_delimiter = ',', value_name = "NS")]
    pub(crate) exception_namespaces: Vec<String>,
}

/// Where `cargo build --release --target wasm32-wasip2` puts components.
pub(crate) const DEFAULT_PLUGINS: &str = "target/wasm32-wasip2/release";

impl HostArgs {
    /// The grants: the file's, `--allow-secrets` folded in; in `wink dev`
    /// without a file, whatever plugins declare.
    pub(crate) fn grants(&self) -> anyhow::Result<Grants> {
        let mut grants = match self.grants_file() {
            Some(file) => return file.load(),
            None if self.grant_declared => Grants::whatever_is_declared(),
            None => Grants::default(),
        };
        grants.allow_secrets(&self.allow_secrets);
        Ok(grants)
    }

    /// The grants file (read again when it changes), with `--allow-secrets`.
    pub(crate) fn grants_file(&self) -> Option<GrantsFile> {
        self.grants.as_ref().map(|path| GrantsFile {
            path: path.clone(),
            allow_secrets: self.allow_secrets.clone(),
        })
    }

    pub(crate) fn options(&self) -> anyhow::Result<(FactoryOptions, ManagerOptions)> {
        let factory = FactoryOptions {
            streaming_lists: self.streaming_lists,
            watch_window: (self.watch_window_us > 0).then(|| Duration::from_micros(self.watch_window_us)),
            coalesce_after: (self.coalesce_after > 0).then_some(self.coalesce_after),
            cache: CachePolicy {
                compress: self.cache_compression,
                ..CachePolicy::default()
            },
            ..Default::default()
        };
        let precompiled = match (self.no_precompiled, &self.precompiled) {
            (true, _) => None,
            (false, Some(dir)) => Some(dir.clone()),
            (false, None) => Precompiled::default_dir().or_else(|| {
                tracing::warn!(
                    "no $XDG_CACHE_HOME or $HOME: running without precompiled components (--precompiled DIR sets one)"
                );
                None
            }),
        };
        let manager = ManagerOptions {
            limits: Limits {
                call_deadline: Duration::from_millis(self.call_deadline_ms),
                memory_bytes: self.memory_mib.map_or(DEFAULT_MEMORY_BYTES, |m| m << 20),
                memory_is_default: self.memory_mib.is_none(),
                fuel: None,
            },
            namespace: self.namespace.clone(),
            grants: self.grants()?,
            grants_file: self.grants_file(),
            precompiled,
            precompiled_limit: self.precompiled_max_mib << 20,
            max_restarts: self.max_restarts,
            tier_up: self.tier_up.unwrap_or(false),
            only: self.only.clone(),
            exceptions: wink::exceptions::Namespaces::parse(&self.exception_namespaces)?.is_some(),
            ..Default::default()
        };
        Ok((factory, manager))
    }

    /// Run the daemon with `client` until a signal.
    pub(crate) async fn serve(&self, config: kube::Config) -> anyhow::Result<()> {
        let (factory, mut manager) = self.options()?;
        let election = self.leader_elect.then(|| {
            manager.leadership = wink::leader::Leadership::standby();
            let identity = self.leader_elect_identity.clone().unwrap_or_else(|| {
                let hostname = std::path::Path::new("/etc/hostname");
                let host = wink_input::read_text(hostname, 4096, "hostname").unwrap_or_default();
                format!("{}-{}", host.trim(), std::process::id())
            });
            let leader = wink::leader::LeaderConfig {
                namespace: self.leader_elect_namespace.clone(),
                name: self.leader_elect_lease.clone(),
                identity,
                lease_duration: Duration::from_millis(self.lease_duration_ms),
                renew_deadline: Duration::from_millis(self.renew_deadline_ms),
                retry_period: Duration::from_millis(self.retry_period_ms),
            };
            (leader, manager.leadership.clone())
        });
        let mut lease_config = config.clone();
        lease_config.default_retry = false;
        // Sockets first: one that cannot be had ends the start, clearly.
        let options = ListenOptions {
            allow_non_loopback: self.allow_non_loopback,
            ..ListenOptions::default()
        };
        let cache_view = match self.cache_view {
            Some(addr) => Some(listener::bind(addr, "the cache view", &options).await?),
            None => None,
        };
        let admin = match self.admin_addr {
            Some(addr) => Some(listener::bind(addr, "the admin server", &options).await?),
            None => None,
        };
        let admission = match self.admission.options() {
            Some(opts) => {
                let socket = wink::admission::bind(&opts).await?;
                Some((opts, socket))
            }
            None => None,
        };
        let (admission_config, leadership) = (config.clone(), manager.leadership.clone());
        // A mistyped directory is a mistake to say, not one to create.
        anyhow::ensure!(
            self.plugins.is_dir(),
            "the plugin directory {} does not exist (create it, or give another with --plugins DIR)",
            self.plugins.display()
        );
        let reports = self.reports.options();
        let plugin_refs = self.oci.prepare(&self.plugins)?;
        // Recorded before the first scan: nothing changed during it is missed.
        let changes = (!self.no_reload)
            .then(|| reload::record(&self.plugins))
            .transpose()?;
        let exception_namespaces = wink::exceptions::Namespaces::parse(&self.exception_namespaces)?;
        let d = Daemon::new(config, factory, manager, reports)?;
        let admission_metrics = admission
            .as_ref()
            .map(|_| wink::admission::metrics::AdmissionMetrics::default());
        // The admin server answers from the start: a kubelet's liveness
        // probe while a large plugin compiles, `/readyz` saying what loads.
        let loading = wink::admin::Loading::default();
        if let Some(listener) = admin {
            let admin = wink::admin::Admin {
                factory: d.factory.clone(),
                manager: d.manager.clone(),
                admission: admission_metrics.clone(),
                loading: loading.clone(),
            };
            tokio::spawn(async move {
                if let Err(e) = wink::admin::serve(listener, admin).await {
                    tracing::error!("admin server stopped: {e:#}");
                }
            });
        }
        d.load(&self.plugins).await?;
        loading.done();
        let _reload = changes.map(|c| c.apply_to(d.manager.clone()));
        // A slow or unreachable registry delays no other part of the start.
        if let Some(refs) = plugin_refs {
            let manager = d.manager.clone();
            tokio::spawn(async move { refs.load(&manager).await });
        }
        let watch = self.winkplugins.unwrap_or(wink::winkplugins::Watch::Auto);
        let (oci, dir, ns) = (&self.oci, &self.plugins, &self.leader_elect_namespace);
        wink::winkplugins::watch(watch, &admission_config, &d.manager, oci, dir, ns)?;
        wink::exceptions::watch(
            exception_namespaces,
            &admission_config,
            &d.manager,
            d.factory.clone(),
        )?;
        if let Some(((opts, socket), metrics)) = admission.zip(admission_metrics) {
            let client = kube::Client::try_from(admission_config)?;
            let manager = d.manager.clone();
            wink::admission::start(opts, socket, client, manager, leadership, metrics).await?;
        }
        if let Some(listener) = cache_view {
            let factory = d.factory.clone();
            tokio::spawn(async move {
                if let Err(e) = wink::cache_view::serve(listener, factory).await {
                    tracing::error!("cache view stopped: {e:#}");
                }
            });
        }
        // Contend only once every plugin is attached (as a standby): each
        // rise to leadership then replays the caches to all of them.
        let elector = match election {
            Some((leader, leadership)) => {
                let client = kube::Client::try_from(lease_config)?;
                let elector = wink::leader::Elector::start(client, leader, leadership);
                let (mut changes, manager) = (elector.changes.clone(), d.manager.clone());
                tokio::spawn(async move {
                    while changes.changed().await.is_ok() {
                        if *changes.borrow_and_update() {
                            manager.take_over().await;
                        }
                    }
                });
                Some(elector)
            }
            None => None,
        };
        daemon::shutdown_signal().await;
        let timeout = Duration::from_millis(self.shutdown_timeout_ms);
        if !daemon::stop(d, elector, timeout).await {
            // What is still blocked would hold the runtime's end forever.
            std::process::exit(0);
        }
        Ok(())
    }
}
