//! The `wink` binary: `wink run`, `wink dev`, `wink sim` (the last two
//! only with the `sim` feature, on by default).

use clap::{Args, CommandFactory, Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use wink::daemon::{self, ClusterOptions, Daemon};
use wink::informer::factory::FactoryOptions;
use wink::informer::object::CachePolicy;
use wink::listener::{self, ListenOptions};
use wink::runtime::engine::DEFAULT_MEMORY_BYTES;
use wink::runtime::grants::{Grants, GrantsFile};
use wink::runtime::manager::ManagerOptions;
use wink::runtime::precompiled::Precompiled;
use wink::runtime::{Limits, reload};

mod report_flags;

#[derive(Parser)]
#[command(
    name = "wink",
    version,
    about = "Kubernetes shared informers feeding WebAssembly plugins"
)]
struct Cli {
    /// `text` for people, `json` for a cluster's log pipeline (one object a
    /// line; a plugin's lines carry the plugin as a field).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Run the plugins of a directory against a cluster.
    Run {
        /// Kubeconfig file (default: in-cluster, then ~/.kube/config).
        #[arg(long, env = "KUBECONFIG")]
        kubeconfig: Option<PathBuf>,
        /// Kubeconfig context.
        #[arg(long)]
        context: Option<String>,
        #[command(flatten)]
        host: HostArgs,
    },
    /// Start the embedded simulated cluster with demo content and churn, and
    /// run the plugins against it.
    Dev {
        /// Demo churn: pod/deployment changes per second.
        #[arg(long, default_value_t = 2.0)]
        churn: f64,
        /// Where to write a kubeconfig for kubectl.
        #[arg(long, default_value = "target/wink-dev/kubeconfig")]
        kubeconfig_out: PathBuf,
        /// Directory of YAML/JSON manifests to load into the simulated cluster.
        #[arg(long)]
        seed: Option<PathBuf>,
        /// Plugin projects to build, watch and rebuild on every save: a Rust
        /// crate, a Python or JavaScript/TypeScript project (as `wink new
        /// --lang` writes them), or a directory of projects; their
        /// components go to target/wink-dev/plugins, which is loaded.
        /// Default: the workspace's plugins/, rebuilt into its build.
        #[arg(long)]
        src: Option<PathBuf>,
        /// Run the simulated control plane (Deployments -> ReplicaSets -> Pods
        /// on simulated nodes, garbage collection); `=false`: a passive server.
        #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1,
              require_equals = true, default_missing_value = "true")]
        control_plane: bool,
        #[command(flatten)]
        host: HostArgs,
    },
    /// Run only the simulated Kubernetes API server (for kubectl and tests).
    Sim(SimArgs),
    /// Print a least-privilege deployment for a plugin directory: RBAC
    /// derived from what the plugins watch, read and may write, the
    /// Deployment, its PodDisruptionBudget, a metrics Service, the grants.
    Manifests {
        /// Directory of plugin components.
        #[arg(long)]
        plugins: PathBuf,
        /// The operator's grants file (what the plugins may write).
        #[arg(long)]
        grants: Option<PathBuf>,
        /// The namespace wink runs in.
        #[arg(long, default_value = "wink-system")]
        namespace: String,
        /// The container image (see the README's container build).
        #[arg(long, default_value = "wink:latest")]
        image: String,
        /// Run the admission webhook server on this container port (its
        /// Service, RBAC and flags rendered); default 8443 when a plugin
        /// declares a webhook, else none.
        #[arg(long)]
        admission_port: Option<u16>,
        #[command(flatten)]
        report_api: report_flags::ReportApiFlag,
        #[command(flatten)]
        prometheus_rule: wink::observability::PrometheusRuleFlag,
        /// Include the WinkPlugin CRD and the rights to run WinkPlugins
        /// (read them, write their status, read pull Secrets in NAMESPACE).
        #[arg(long)]
        winkplugins: bool,
    },
    /// Scaffold a plugin crate that builds and passes its `wink test` case.
    New {
        /// The new crate's directory (its name is the crate's), e.g. plugins/my-plugin.
        dir: PathBuf,
        /// The SDK (default: the sdk/, sdk/python or sdk/js of the wink checkout DIR is in).
        #[arg(long)]
        sdk: Option<PathBuf>,
        /// The plugin's language.
        #[arg(long, value_enum, default_value = "rust")]
        lang: wink::author::scaffold::Lang,
    },
    /// Test built plugins offline: each case (YAML) gives the initial cache,
    /// steps (add, update, delete, resync, relist) and the log lines,
    /// writes, Events and policy results expected (writes and Events are
    /// captured, not sent); a mismatch prints a diff and exits 1.
    Test {
        /// Test case files.
        #[arg(required = true)]
        cases: Vec<PathBuf>,
        /// Record what happened as each case's expectation.
        #[arg(long)]
        bless: bool,
    },
    #[command(flatten)]
    Docs(wink::cli_docs::DocsCommand),
    #[command(flatten)]
    Oci(wink_oci::cli::OciCommand),
}

#[derive(Args)]
struct HostArgs {
    /// Directory of plugin components (`*.wasm`, optional `<name>.json` config).
    #[arg(long, default_value = DEFAULT_PLUGINS)]
    plugins: PathBuf,
    /// Narrow watches that name no namespace to this namespace.
    #[arg(long)]
    namespace: Option<String>,
    /// Initial lists through a streaming watch (sendInitialEvents), with a
    /// fallback to paged lists on a server that refuses it:
    /// `--streaming-lists=false` forces paging.
    #[arg(long, num_args = 0..=1, default_value_t = true, default_missing_value = "true", action = clap::ArgAction::Set)]
    streaming_lists: bool,
    /// Under a steady stream, read watch events up to this late (plus the
    /// timer's 1 ms), many per wake-up: microseconds, 0 for each as it comes.
    #[arg(long, default_value_t = 2000)]
    watch_window_us: u64,
    /// Do not watch the plugin directory for changes.
    #[arg(long)]
    no_reload: bool,
    /// Directory of precompiled components (default: ~/.cache/wink/components).
    #[arg(long, alias = "compile-cache")]
    precompiled: Option<PathBuf>,
    /// Always compile; never read or write precompiled components.
    #[arg(long, alias = "no-compile-cache")]
    no_precompiled: bool,
    /// Keep the precompiled directory under this size, MiB: the entries
    /// used least recently go first.
    #[arg(long, default_value_t = 1024)]
    precompiled_max_mib: u64,
    /// Deadline of one call into a plugin, milliseconds.
    #[arg(long, default_value_t = 1000)]
    call_deadline_ms: u64,
    /// Memory cap of one plugin instance, MiB, for every plugin. Without
    /// it: 64, and 256 for JavaScript plugins (whose engine collects its
    /// heap late).
    #[arg(long)]
    memory_mib: Option<usize>,
    /// Consecutive crashes before a plugin is quarantined.
    #[arg(long, default_value_t = 5)]
    max_restarts: u32,
    /// Plugins allowed to watch or read Secrets (`*` for all); the same as
    /// `secrets: true` in their grant.
    #[arg(long)]
    allow_secrets: Vec<String>,
    /// The operator's grants (YAML): writes, Events, Secrets, audit mode and
    /// write rates per plugin. Without it, plugins may only read.
    #[arg(long)]
    grants: Option<PathBuf>,
    /// Grant whatever plugins declare (`wink dev` without `--grants`).
    #[arg(skip)]
    grant_declared: bool,
    /// Load only these plugins of the directory (`wink dev`: the examples).
    #[arg(skip)]
    only: Option<std::collections::BTreeSet<String>>,
    /// Pending notifications per plugin past which they coalesce per object
    /// (0: never coalesce, an unbounded backlog like client-go's).
    #[arg(long, default_value_t = wink::informer::factory::DEFAULT_COALESCE_AFTER)]
    coalesce_after: usize,
    /// Serve a read-only HTTP view of the cache on this address (e.g. 127.0.0.1:8080).
    #[arg(long)]
    cache_view: Option<SocketAddr>,
    /// Contend for leadership on a coordination.k8s.io/v1 Lease: only the
    /// leader delivers events and writes; a standby keeps its caches current
    /// and takes over with the cache replayed (no relist).
    #[arg(long)]
    leader_elect: bool,
    /// The Lease's namespace.
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    leader_elect_namespace: String,
    /// The Lease's name.
    #[arg(long, default_value = "wink")]
    leader_elect_lease: String,
    /// This replica's identity (default: the pod name, else host and pid).
    #[arg(long, env = "POD_NAME")]
    leader_elect_identity: Option<String>,
    /// How long the Lease is valid after a renewal, milliseconds.
    #[arg(long, default_value_t = 15_000)]
    lease_duration_ms: u64,
    /// How long a leader tries to renew before it stands down, milliseconds.
    #[arg(long, default_value_t = 10_000)]
    renew_deadline_ms: u64,
    /// How often candidates try and the leader renews, milliseconds.
    #[arg(long, default_value_t = 2_000)]
    retry_period_ms: u64,
    /// How long a shutdown waits for plugins to finish their current calls,
    /// milliseconds.
    #[arg(long, default_value_t = 10_000)]
    shutdown_timeout_ms: u64,
    /// Serve the admin endpoints (/healthz, /readyz, /metrics,
    /// /debug/plugins, and the cache view's /cache/...) on this address
    /// (e.g. 127.0.0.1:9090).
    #[arg(long)]
    admin_addr: Option<SocketAddr>,
    #[command(flatten)]
    admission: wink::admission::flags::AdmissionFlags,
    /// Let HTTP surfaces (the admin server, the cache view) listen on a non-loopback address:
    /// they have no authentication.
    #[arg(long)]
    allow_non_loopback: bool,
    /// Bring a changed plugin up on Winch (compiles 3-6x faster) and build
    /// its Cranelift code in the background for its next load (it is not
    /// swapped in: that would replay its initial list): `--tier-up` or
    /// `--tier-up=false` (default: on in `wink dev`, off in `wink run`).
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    tier_up: Option<bool>,
    /// Hold cached objects' JSON compressed (LZ4): about half the
    /// memory for a few µs per event: `--cache-compression=false` to turn off.
    #[arg(long, num_args = 0..=1, default_value_t = true, default_missing_value = "true", action = clap::ArgAction::Set)]
    cache_compression: bool,
    #[command(flatten)]
    reports: report_flags::ReportFlags,
    #[command(flatten)]
    oci: wink_oci::plugins::PluginRefArgs,
    /// Run the WinkPlugin objects of the cluster beside the plugin
    /// directory: `auto` when their CRD is installed (`wink manifests
    /// --winkplugins` ships it), `install` to create it when missing,
    /// `off` (default: auto in `wink run`, install in `wink dev`).
    #[arg(long, value_enum)]
    winkplugins: Option<wink::winkplugins::Watch>,
}

/// Where `cargo build --release --target wasm32-wasip2` puts components.
const DEFAULT_PLUGINS: &str = "target/wasm32-wasip2/release";

impl HostArgs {
    /// The grants: the file's, `--allow-secrets` folded in; in `wink dev`
    /// without a file, whatever plugins declare.
    fn grants(&self) -> anyhow::Result<Grants> {
        let mut grants = match self.grants_file() {
            Some(file) => return file.load(),
            None if self.grant_declared => Grants::whatever_is_declared(),
            None => Grants::default(),
        };
        grants.allow_secrets(&self.allow_secrets);
        Ok(grants)
    }

    /// The grants file (read again when it changes), with `--allow-secrets`.
    fn grants_file(&self) -> Option<GrantsFile> {
        self.grants.as_ref().map(|path| GrantsFile {
            path: path.clone(),
            allow_secrets: self.allow_secrets.clone(),
        })
    }

    fn options(&self) -> anyhow::Result<(FactoryOptions, ManagerOptions)> {
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
            },
            namespace: self.namespace.clone(),
            grants: self.grants()?,
            grants_file: self.grants_file(),
            precompiled,
            precompiled_limit: self.precompiled_max_mib << 20,
            max_restarts: self.max_restarts,
            tier_up: self.tier_up.unwrap_or(false),
            only: self.only.clone(),
            ..Default::default()
        };
        Ok((factory, manager))
    }

    /// Run the daemon with `client` until a signal.
    async fn serve(&self, config: kube::Config) -> anyhow::Result<()> {
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
        let d = Daemon::start(config, &self.plugins, factory, manager, reports).await?;
        let _reload = changes.map(|c| c.apply_to(d.manager.clone()));
        // A slow or unreachable registry delays no other part of the start.
        if let Some(refs) = plugin_refs {
            let manager = d.manager.clone();
            tokio::spawn(async move { refs.load(&manager).await });
        }
        let watch = self.winkplugins.unwrap_or(wink::winkplugins::Watch::Auto);
        let (oci, dir, ns) = (&self.oci, &self.plugins, &self.leader_elect_namespace);
        wink::winkplugins::watch(watch, &admission_config, &d.manager, oci, dir, ns)?;
        if let Some((opts, socket)) = admission {
            let client = kube::Client::try_from(admission_config)?;
            wink::admission::start(opts, socket, client, d.manager.clone(), leadership).await?;
        }
        if let Some(listener) = admin {
            let admin = wink::admin::Admin {
                factory: d.factory.clone(),
                manager: d.manager.clone(),
            };
            tokio::spawn(async move {
                if let Err(e) = wink::admin::serve(listener, admin).await {
                    tracing::error!("admin server stopped: {e:#}");
                }
            });
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

fn init_tracing(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let fmt = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(false);
    match format {
        // Every field escaped: no value can end its line or forge another.
        LogFormat::Text => fmt.fmt_fields(wink::text_log::EscapedFields::default()).init(),
        LogFormat::Json => {
            wink::runtime::stdio::set_structured(true);
            fmt.json().flatten_event(true).init()
        }
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli: Cli = wink::cli_docs::parse();
    init_tracing(cli.log_format);
    // One line a person can read (the cause chain), not a debug dump.
    match run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Run {
            kubeconfig,
            context,
            host,
        } => {
            let config = daemon::config(&ClusterOptions { kubeconfig, context }).await?;
            host.serve(config).await
        }
        Command::Dev {
            churn,
            kubeconfig_out,
            seed,
            src,
            control_plane,
            host,
        } => dev(churn, kubeconfig_out, seed, src, control_plane, host).await,
        Command::Sim(args) => sim(args).await,
        Command::Manifests {
            plugins,
            grants,
            namespace,
            image,
            admission_port,
            report_api,
            prometheus_rule,
            winkplugins,
        } => {
            let rules = prometheus_rule.render(&namespace)?;
            let crd = match winkplugins {
                true => {
                    wink::manifests::to_yaml(&wink::winkplugins::manifests::documents(&namespace)) + "---\n"
                }
                false => String::new(),
            };
            let deployment = wink::manifests::needs::read(
                &plugins,
                grants.as_deref(),
                namespace,
                image,
                admission_port,
                report_api.api(),
            )?;
            print!("{crd}{deployment}{rules}");
            Ok(())
        }
        Command::Test { cases, bless } => wink::author::harness::test(&cases, bless),
        Command::New { dir, sdk, lang } => wink::author::scaffold::new(&dir, lang, sdk.as_deref()),
        Command::Docs(docs) => wink::cli_docs::run(docs, Cli::command()),
        Command::Oci(command) => wink_oci::cli::run(command).await,
    }
}

/// `wink sim`'s arguments: the simulator's own.
#[cfg(feature = "sim")]
use wink_sim::SimArgs;

/// `wink sim`'s arguments in a build without the simulator: whatever is
/// given, the command says what is missing.
#[cfg(not(feature = "sim"))]
#[derive(Args)]
struct SimArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    _ignored: Vec<String>,
}

#[cfg(not(feature = "sim"))]
const NO_SIM: &str = "this wink was built without the simulated API server (cargo feature `sim`); \
     rebuild with default features, or use `wink run --kubeconfig ...` against a cluster";

#[cfg(not(feature = "sim"))]
async fn dev(
    _: f64,
    _: PathBuf,
    _: Option<PathBuf>,
    _: Option<PathBuf>,
    _: bool,
    _: HostArgs,
) -> anyhow::Result<()> {
    anyhow::bail!("wink dev: {NO_SIM}")
}

#[cfg(not(feature = "sim"))]
async fn sim(_: SimArgs) -> anyhow::Result<()> {
    anyhow::bail!("wink sim: {NO_SIM}")
}

#[cfg(feature = "sim")]
async fn sim(args: SimArgs) -> anyhow::Result<()> {
    wink_sim::run(args).await
}

/// `wink dev`: the embedded simulated cluster with demo churn, and the
/// plugins running against it.
#[cfg(feature = "sim")]
async fn dev(
    churn: f64,
    kubeconfig_out: PathBuf,
    seed: Option<PathBuf>,
    src: Option<PathBuf>,
    control_plane: bool,
    mut host: HostArgs,
) -> anyhow::Result<()> {
    host.tier_up.get_or_insert(true);
    host.winkplugins.get_or_insert(wink::winkplugins::Watch::Install);
    host.grant_declared = true;
    // Sources are rebuilt on save: --src's projects into a directory of
    // their own (built once now), else the workspace's examples into its build.
    let (projects, out) = match &src {
        Some(dir) => {
            let out = PathBuf::from("target/wink-dev/plugins");
            std::fs::create_dir_all(&out)?;
            host.plugins = out.clone();
            let projects = wink::author::rebuild::projects_in(dir);
            anyhow::ensure!(
                !projects.is_empty(),
                "wink dev: no plugin project in {}",
                dir.display()
            );
            for p in &projects {
                println!("wink dev: building {} ({:?})", p.name, p.lang);
                match p.build(&out) {
                    Ok(took) => println!("wink dev: {} built in {} ms", p.name, took.as_millis()),
                    Err(e) => println!("wink dev: {} does not build yet:\n{e}", p.name),
                }
            }
            (projects, out)
        }
        None => {
            host.only = wink::author::rebuild::examples(&host.plugins, std::path::Path::new(DEFAULT_PLUGINS));
            let projects = match host.only {
                Some(_) => wink::author::rebuild::projects_in(std::path::Path::new("plugins")),
                None => Vec::new(),
            };
            (projects, host.plugins.clone())
        }
    };
    let _sources = match projects.is_empty() {
        true => None,
        false => Some(wink::author::rebuild::watch(projects, out)?),
    };
    let sim = wink_sim::Sim::start(wink_sim::SimConfig {
        churn_per_sec: (churn > 0.0).then_some(churn),
        seed_dir: seed,
        control_plane,
        ..Default::default()
    })
    .await?;
    sim.write_kubeconfig(&kubeconfig_out)?;
    println!("wink dev: simulated cluster at {}", sim.url());
    println!(
        "wink dev: try `KUBECONFIG={} kubectl get pods -w`",
        kubeconfig_out.display()
    );
    let result = host.serve(sim.kube_config()).await;
    sim.shutdown().await;
    result
}
