//! The `wink` binary: `wink run`, `wink dev`, `wink sim` (the last two
//! only with the `sim` feature, on by default).

use clap::{CommandFactory, Parser, Subcommand};
use std::path::PathBuf;
use wink::daemon::{self, ClusterOptions};

mod host_args;
mod report_flags;

use host_args::HostArgs;

/// mimalloc rather than glibc's malloc: the admission path allocates and
/// frees per review from many threads, where glibc's arenas spent a tenth
/// of the daemon's CPU (see the `library` benchmark).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
        /// Serve no admission webhooks. By default `wink dev` serves the
        /// plugins' webhooks on a free loopback port (or `--admission-addr`)
        /// and registers them with the simulated cluster, so kubectl meets
        /// them at once.
        #[arg(long)]
        no_admission: bool,
        #[command(flatten)]
        host: HostArgs,
    },
    /// Run only the simulated Kubernetes API server (for kubectl and tests).
    Sim(SimArgs),
    /// Print a least-privilege deployment for a plugin directory: RBAC
    /// derived from what the plugins watch, read and may write, the
    /// Deployment, its PodDisruptionBudget, a metrics Service, the grants;
    /// and with `--library`, the policy library as WinkPlugins.
    Manifests {
        /// Directory of plugin components (the deployment is rendered only
        /// with it).
        #[arg(long, required_unless_present = "library")]
        plugins: Option<PathBuf>,
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
        /// Render the policy library's WinkPlugins (enforcing, their pages'
        /// default configs, kube-system excluded) and a ClusterRole reading
        /// what they watch: policy names, comma-separated, or `all`.
        #[arg(long, value_name = "NAMES")]
        library: Vec<String>,
        /// Where the library's components were pushed: REGISTRY/PATH, each
        /// policy the repository REGISTRY/PATH/NAME.
        #[arg(long, value_name = "REGISTRY/PATH", requires = "library")]
        library_registry: Option<String>,
        /// The tag the library was pushed under.
        #[arg(long, default_value = concat!("v", env!("CARGO_PKG_VERSION")), requires = "library")]
        library_tag: String,
        /// Pin each source to a digest instead of a tag: the one `wink push`
        /// gives the component NAME.wasm (dashes as underscores) of this
        /// directory, e.g. target/wasm32-wasip2/release.
        #[arg(
            long,
            value_name = "DIR",
            conflicts_with = "library_tag",
            requires = "library"
        )]
        library_components: Option<PathBuf>,
        /// A policy's config instead of its default: NAME=JSON (repeatable;
        /// allowed-registries has no default).
        #[arg(long, value_name = "NAME=JSON", requires = "library")]
        library_config: Vec<String>,
        /// Include the WinkException CRD and the rights to honour
        /// WinkExceptions (read them, write their status); the Deployment's
        /// wink is given `--exception-namespaces` with these namespaces.
        #[arg(long, value_delimiter = ',', value_name = "NS")]
        exceptions: Vec<String>,
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
            no_admission,
            mut host,
        } => {
            if !no_admission {
                host.admission.dev_defaults()?;
            }
            dev(churn, kubeconfig_out, seed, src, control_plane, host).await
        }
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
            library,
            library_registry,
            library_tag,
            library_components,
            library_config,
            exceptions,
        } => {
            let rules = prometheus_rule.render(&namespace)?;
            let mut docs = match library.is_empty() {
                true => Vec::new(),
                false => wink::manifests::library::documents(
                    &wink::manifests::library::Options {
                        names: library,
                        registry: library_registry,
                        tag: library_tag,
                        components: library_components,
                        configs: library_config,
                    },
                    &namespace,
                    report_api.api(),
                )?,
            };
            if winkplugins {
                docs.extend(wink::winkplugins::manifests::documents(&namespace));
            }
            let exception_docs = match wink::exceptions::Namespaces::parse(&exceptions)? {
                Some(_) => wink::exceptions::manifests::documents(&namespace),
                None => Vec::new(),
            };
            if let Some(plugins) = plugins {
                let mut needs = wink::manifests::needs::read(
                    &plugins,
                    grants.as_deref(),
                    namespace,
                    image,
                    admission_port,
                    report_api.api(),
                )?;
                if !exception_docs.is_empty() {
                    wink::exceptions::manifests::pass_flag(&mut needs, &exceptions);
                }
                docs.extend(needs);
            }
            docs.extend(exception_docs);
            let docs = wink::manifests::in_install_order(wink::manifests::distinct(docs));
            let deployment = wink::manifests::to_yaml(&docs);
            print!("{deployment}{rules}");
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
#[derive(clap::Args)]
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
            host.only = wink::author::rebuild::examples(
                &host.plugins,
                std::path::Path::new(host_args::DEFAULT_PLUGINS),
            );
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
    if let Some(addr) = host.admission.admission_addr {
        // wink's namespace, which holds its CA and which no webhook sees.
        let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(sim.client());
        let ns = &host.admission.admission_namespace;
        if namespaces.get_opt(ns).await?.is_none() {
            let object = serde_json::from_value(serde_json::json!({"metadata": {"name": ns}}))?;
            namespaces.create(&Default::default(), &object).await?;
        }
        println!("wink dev: admission webhooks served on https://{addr} (--no-admission: none)");
    }
    println!("wink dev: simulated cluster at {}", sim.url());
    println!(
        "wink dev: try `KUBECONFIG={} kubectl get pods -w`",
        kubeconfig_out.display()
    );
    let result = host.serve(sim.kube_config()).await;
    sim.shutdown().await;
    result
}
