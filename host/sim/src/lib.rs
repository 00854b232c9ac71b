//! A simulated Kubernetes API server speaking the real HTTP protocol (plain
//! HTTP on loopback), for tests, benchmarks and `wink dev`: unmodified
//! `kube` clients, `kube_runtime::watcher` and `kubectl` work against it.
//! See `README.md` in this directory for the supported surface and the
//! known differences from a real API server.
//!
//! This crate owns [`Sim`] (a running server: accept loop, restart,
//! shutdown), [`SimConfig`] and the `wink sim` subcommand ([`SimArgs`],
//! [`run`]). It knows nothing of the daemon (informer, plugin runtime): it
//! is a tool the daemon and the tests use, never a layer they stand on.
//! Label and field selectors come from `wink-selector`, the grammar the
//! daemon's cache queries use too.
//!
//! Layout: `store` (objects, resourceVersion, history, MVCC lists),
//! `write` (create/update/delete semantics), `patch`,
//! `resources` (built-in types + CRDs), `control` (the simulated control
//! plane), `proto` (protobuf bodies), `table` and `list` (lists and Table
//! output), `scale` (the /scale subresource), `discovery`, `http` (routing),
//! `watch` (event streams), `faults`, `admin` (`/_sim` paths), `stats`,
//! `status` (Status errors), `decode` (the types the decoder refuses),
//! `validate` (value checks), `demo` (seed + churn), `kubeconfig`, `limits`
//! (body size, `timeoutSeconds`, command-line values), `depth` (nesting
//! pre-scan of bodies). A handler that panics answers 500 with a Status.

mod admin;
mod admission;
mod authz;
mod builtins;
mod control;
mod decode;
mod defaults;
mod defaults_pod;
mod delete_options;
mod demo;
mod depth;
mod discovery;
mod events;
mod faults;
mod fields;
mod http;
mod kubeconfig;
mod limits;
mod list;
mod managed;
mod meta;
mod object_meta;
mod openapi;
mod patch;
mod prepare;
mod proto;
mod resources;
mod response;
mod scale;
mod service_accounts;
mod stats;
mod status;
mod store;
mod table;
mod validate;
mod validate_events;
mod validate_workloads;
mod watch;
mod write;
mod write_mode;

pub use admission::testing as webhook_testing;
pub use faults::Faults;
pub use stats::ControlWork;

use anyhow::Context;
use serde_json::Value;
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio::task::{JoinHandle, JoinSet};

/// Configuration of a simulated API server.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Port on 127.0.0.1; 0 picks an ephemeral one.
    pub port: u16,
    /// Events kept per resource type for watch resumption and paged lists.
    pub history: usize,
    /// Period of BOOKMARK events on watches that allow them (a real server
    /// sends them about once a minute).
    pub bookmark_interval: Duration,
    /// Manifests (YAML/JSON) to load at start and on `restart(false)`.
    pub seed_dir: Option<PathBuf>,
    /// Demo churn: pod/deployment writes per second in `default`.
    pub churn_per_sec: Option<f64>,
    /// Serve streaming lists (`sendInitialEvents`, the WatchList feature);
    /// off, they are refused as by a server with the feature gate off.
    pub watch_list: bool,
    /// Run the simulated control plane (`control`: nodes, Deployments,
    /// ReplicaSets, scheduling, kubelets, garbage collection, namespace
    /// termination). Off (the default here), the server is passive: nothing
    /// changes but what clients write. `wink sim` and `wink dev` turn it on.
    pub control_plane: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            port: 0,
            history: 10_000,
            bookmark_interval: Duration::from_secs(5),
            seed_dir: None,
            churn_per_sec: None,
            watch_list: true,
            control_plane: false,
        }
    }
}

/// Commands to the accept loop.
enum Control {
    Restart {
        keep: bool,
        ack: oneshot::Sender<anyhow::Result<()>>,
    },
    Shutdown {
        ack: oneshot::Sender<()>,
    },
}

/// Everything request handlers and watch streams share.
struct Shared {
    config: SimConfig,
    store: store::Store,
    faults: faults::FaultState,
    stats: stats::Stats,
    admission: admission::Registry,
    port: u16,
    control: mpsc::UnboundedSender<Control>,
}

/// The state a fresh server starts with: the usual namespaces, then the seed.
fn initial_state(config: &SimConfig, start_rv: u64) -> anyhow::Result<store::State> {
    let mut st = store::State::new(config.history, start_rv);
    st.control_plane = config.control_plane;
    let ns = st.registry.get("namespaces").cloned().expect("namespaces");
    for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        write::create(
            &mut st,
            &ns,
            None,
            "v1",
            serde_json::json!({"metadata": {"name": name}}),
        )
        .map_err(|e| anyhow::anyhow!(e.message))?;
    }
    demo::seed_from_config(&mut st, config.seed_dir.as_deref())?;
    Ok(st)
}

/// The definition of a served resource (`pods`, `deployments.apps`).
fn resource_def(st: &store::State, resource: &str) -> anyhow::Result<Arc<resources::ResourceDef>> {
    st.registry
        .get(resource)
        .cloned()
        .with_context(|| format!("unknown resource {resource}"))
}

/// A running simulated API server on 127.0.0.1.
pub struct Sim {
    shared: Arc<Shared>,
    server: JoinHandle<()>,
    churn: Option<JoinHandle<()>>,
    control: Option<JoinHandle<()>>,
}

impl Sim {
    /// Bind, load the initial state and start serving.
    pub async fn start(config: SimConfig) -> anyhow::Result<Sim> {
        let state = initial_state(&config, 0)?;
        let listener = TcpListener::bind(("127.0.0.1", config.port))
            .await
            .with_context(|| format!("binding 127.0.0.1:{}", config.port))?;
        let port = listener.local_addr()?.port();
        let (control, rx) = mpsc::unbounded_channel();
        let churn_rate = config.churn_per_sec;
        let shared = Arc::new(Shared {
            config,
            store: store::Store::new(state),
            faults: Default::default(),
            stats: Default::default(),
            admission: Default::default(),
            port,
            control,
        });
        let server = tokio::spawn(serve(listener, shared.clone(), rx));
        let churn = churn_rate.map(|r| tokio::spawn(demo::churn(shared.clone(), r)));
        let control = shared
            .config
            .control_plane
            .then(|| tokio::spawn(control::run(shared.clone())));
        Ok(Sim {
            shared,
            server,
            churn,
            control,
        })
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.shared.port)
    }

    pub fn port(&self) -> u16 {
        self.shared.port
    }

    /// A `kube::Config` for this server (default namespace `default`).
    pub fn kube_config(&self) -> kube::Config {
        let mut c = kube::Config::new(self.url().parse().expect("valid url"));
        c.default_namespace = "default".into();
        c
    }

    /// A `kube::Client` for this server (must be called inside a tokio runtime).
    pub fn client(&self) -> kube::Client {
        kube::Client::try_from(self.kube_config()).expect("kube client for the simulator")
    }

    /// Write a kubeconfig (cluster, credential-less user, context, current-context).
    pub fn write_kubeconfig(&self, path: &Path) -> anyhow::Result<()> {
        kubeconfig::write(&self.url(), path)
    }

    pub fn faults(&self) -> Faults {
        Faults {
            shared: self.shared.clone(),
        }
    }

    /// Requests received for `verb` ("list", "watch", "get", "create",
    /// "update", "patch", "delete", "deletecollection") on `resource` (plural,
    /// e.g. "pods"; "pods/status" for the subresource).
    pub fn request_count(&self, verb: &str, resource: &str) -> u64 {
        self.shared.stats.requests(verb, resource)
    }

    /// Calls made to the admission webhook `name` (each attempt, answered or
    /// not; webhooks skipped by their rules or selectors are not called).
    pub fn webhook_calls(&self, name: &str) -> u64 {
        self.shared.admission.calls(name)
    }

    /// Route admission webhook calls for `clientConfig.service` `namespace/name`
    /// on `port` (443 when the configuration names none) to `addr`: the
    /// simulator has no Services or cluster DNS, so this stands in for them.
    /// The server's certificate must be valid for `NAME.NAMESPACE.svc`. A
    /// service without a route fails as an unknown host would.
    pub fn route_service(&self, namespace: &str, name: &str, port: u16, addr: std::net::SocketAddr) {
        self.shared.admission.route(namespace, name, port, addr);
    }

    /// Watch streams currently open on `resource` (plural).
    pub fn open_watches(&self, resource: &str) -> usize {
        self.shared.stats.open_watches(resource)
    }

    /// The `resourceVersion` parameter of each watch request on `resource`,
    /// oldest first (last 1000; "" when absent).
    pub fn watch_request_rvs(&self, resource: &str) -> Vec<String> {
        self.shared.stats.watch_rvs(resource)
    }

    /// The work the control plane has done so far (none without it).
    pub fn control_work(&self) -> ControlWork {
        self.shared.stats.control_work()
    }

    pub fn current_resource_version(&self) -> u64 {
        self.shared.store.current_rv()
    }

    /// Create an object directly (no HTTP, not counted), `status` included;
    /// namespaced objects without a namespace go to `default`.
    pub fn insert(&self, object: Value) -> anyhow::Result<Value> {
        demo::create_with_status(&mut self.shared.store.lock(), object)
            .map_err(|e| anyhow::anyhow!("{} ({})", e.message, e.code))
    }

    /// Replace an object directly (no HTTP, not counted, no faults):
    /// `resource` is the plural qualified by its group (`pods`,
    /// `deployments.apps`); the object names its namespace and name. Watches
    /// see the change as from any other write.
    pub fn update(&self, resource: &str, object: Value) -> anyhow::Result<Value> {
        let mut st = self.shared.store.lock();
        let def = resource_def(&st, resource)?;
        let ns = object["metadata"]["namespace"].as_str().map(str::to_string);
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        write::update(&mut st, &def, ns.as_deref(), &name, object, false)
            .map(|o| o.value.clone())
            .map_err(|e| anyhow::anyhow!("{} ({})", e.message, e.code))
    }

    /// Delete an object directly (no HTTP, not counted, no faults); see
    /// [`Sim::update`] for `resource`.
    pub fn delete(&self, resource: &str, namespace: Option<&str>, name: &str) -> anyhow::Result<()> {
        let mut st = self.shared.store.lock();
        let def = resource_def(&st, resource)?;
        write::delete(&mut st, &def, namespace, name, &Default::default())
            .map(|_| ())
            .map_err(|e| anyhow::anyhow!("{} ({})", e.message, e.code))
    }

    /// One step of demo churn, now.
    pub fn churn_step(&self) {
        let _ = demo::churn_step(&mut self.shared.store.lock());
    }

    /// Drop every connection (open watches end abruptly) and keep serving on
    /// the same port, with the state kept or replaced by a fresh one
    /// (namespaces + seed; resourceVersions keep increasing and every older
    /// one is too old to resume from).
    pub async fn restart(&self, keep_state: bool) -> anyhow::Result<()> {
        let (ack, rx) = oneshot::channel();
        self.shared
            .control
            .send(Control::Restart {
                keep: keep_state,
                ack,
            })
            .map_err(|_| anyhow::anyhow!("simulator is not running"))?;
        rx.await.context("simulator stopped during restart")?
    }

    /// Stop serving and drop every connection.
    pub async fn shutdown(mut self) {
        let (ack, rx) = oneshot::channel();
        if self.shared.control.send(Control::Shutdown { ack }).is_ok() {
            let _ = rx.await;
        }
        for task in [self.churn.take(), self.control.take()].into_iter().flatten() {
            task.abort();
        }
        let _ = (&mut self.server).await;
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        self.server.abort();
        for task in [&self.churn, &self.control].into_iter().flatten() {
            task.abort();
        }
    }
}

async fn serve_conn(stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let io = hyper_util::rt::TokioIo::new(stream);
    let svc = hyper::service::service_fn(move |req| {
        let s = shared.clone();
        async move { Ok::<_, Infallible>(answer_despite_panics(http::handle(s, req)).await) }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(io, svc)
        .await;
}

/// A request handler's answer; a handler that panics answers 500 with a
/// Status (the API server's panic recovery) instead of dropping the
/// connection.
async fn answer_despite_panics(handler: impl std::future::Future<Output = response::Resp>) -> response::Resp {
    use futures::FutureExt;
    match std::panic::AssertUnwindSafe(handler).catch_unwind().await {
        Ok(resp) => resp,
        Err(_) => {
            tracing::error!("sim: a request handler panicked");
            response::error_response(&status::ApiError::new(
                500,
                "InternalError",
                "This request caused apiserver to panic. Look in the logs for details.",
            ))
        }
    }
}

async fn drop_connections(conns: &mut JoinSet<()>) {
    conns.abort_all();
    while conns.join_next().await.is_some() {}
}

async fn serve(listener: TcpListener, shared: Arc<Shared>, mut control: mpsc::UnboundedReceiver<Control>) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            acc = listener.accept() => {
                if let Ok((stream, _)) = acc {
                    conns.spawn(serve_conn(stream, shared.clone()));
                }
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            cmd = control.recv() => match cmd {
                None => break,
                Some(Control::Restart { keep, ack }) => {
                    drop_connections(&mut conns).await;
                    let result = if keep {
                        Ok(())
                    } else {
                        let rv = shared.store.current_rv();
                        initial_state(&shared.config, rv + 1).map(|st| *shared.store.lock() = st)
                    };
                    let _ = ack.send(result);
                }
                Some(Control::Shutdown { ack }) => {
                    drop_connections(&mut conns).await;
                    let _ = ack.send(());
                    break;
                }
            }
        }
    }
}

/// `wink sim`: run only the simulated Kubernetes API server.
#[derive(clap::Args, Debug, Clone)]
pub struct SimArgs {
    /// Port on 127.0.0.1 (0: ephemeral).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Write a kubeconfig for kubectl and kube clients here.
    #[arg(long)]
    pub kubeconfig_out: Option<PathBuf>,
    /// Directory of YAML/JSON manifests to load at start.
    #[arg(long)]
    pub seed: Option<PathBuf>,
    /// Demo churn: pod/deployment writes per second in `default` (0: none).
    #[arg(long, value_parser = limits::churn_arg)]
    pub churn: Option<f64>,
    /// Events kept per resource type, at least 1 (older resumes get 410 Expired).
    #[arg(long, default_value_t = 10_000, value_parser = limits::history_arg)]
    pub history: usize,
    /// Seconds between watch BOOKMARK events (above 0, at most 86400).
    #[arg(long, default_value_t = 5.0, value_parser = limits::bookmark_interval_arg)]
    pub bookmark_interval: f64,
    /// Run the simulated control plane (Deployments -> ReplicaSets -> Pods
    /// on simulated nodes, garbage collection, namespace termination);
    /// `--control-plane=false` for a passive server.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1,
          require_equals = true, default_missing_value = "true")]
    pub control_plane: bool,
}

impl SimArgs {
    /// The configuration these arguments ask for; an error names a value
    /// that cannot be used (clap already refuses them on the command line).
    pub fn config(&self) -> anyhow::Result<SimConfig> {
        let bad = |e: String| anyhow::anyhow!("wink sim: {e}");
        Ok(SimConfig {
            port: self.port,
            history: limits::history(self.history).map_err(bad)?,
            bookmark_interval: limits::bookmark_interval(self.bookmark_interval).map_err(bad)?,
            seed_dir: self.seed.clone(),
            churn_per_sec: self.churn.map(limits::churn_rate).transpose().map_err(bad)?,
            watch_list: true,
            control_plane: self.control_plane,
        })
    }
}

/// Run the simulator until ctrl-c.
pub async fn run(args: SimArgs) -> anyhow::Result<()> {
    let config = args.config()?;
    if let Some(dir) = &args.seed {
        demo::check_dir(dir)?;
    }
    let sim = Sim::start(config).await?;
    println!("wink sim: Kubernetes API at {}", sim.url());
    if let Some(path) = &args.kubeconfig_out {
        sim.write_kubeconfig(path)?;
        println!(
            "wink sim: kubeconfig written to {} (export KUBECONFIG={})",
            path.display(),
            path.display()
        );
    }
    println!(
        "wink sim: faults at {}/_sim/faults/..., stats at {}/_sim/stats; ctrl-c stops",
        sim.url(),
        sim.url()
    );
    tokio::signal::ctrl_c().await?;
    sim.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        sim: SimArgs,
    }

    fn parse(args: &[&str]) -> Result<SimArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("wink-sim").chain(args.iter().copied())).map(|c| c.sim)
    }

    #[test]
    fn unusable_cli_values_are_errors_not_panics() {
        for bad in [
            &["--bookmark-interval", "inf"][..],
            &["--bookmark-interval", "NaN"],
            &["--bookmark-interval=-1"],
            &["--bookmark-interval", "0"],
            &["--churn", "inf"],
            &["--churn=-2"],
            &["--history", "0"],
        ] {
            let e = parse(bad).err().unwrap_or_else(|| panic!("{bad:?} accepted"));
            assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{bad:?}");
        }
        let e = parse(&["--bookmark-interval", "inf"]).err().unwrap().to_string();
        assert!(e.contains("above 0 and at most 86400"), "{e}");
        let ok = parse(&["--bookmark-interval", "0.5", "--churn", "0", "--history", "1"]).unwrap();
        let c = ok.config().unwrap();
        assert_eq!(
            (c.bookmark_interval, c.churn_per_sec, c.history),
            (Duration::from_millis(500), Some(0.0), 1)
        );
        let defaults = parse(&[]).unwrap().config().unwrap();
        assert_eq!(defaults.bookmark_interval, Duration::from_secs(5));
        assert!(defaults.control_plane, "wink sim runs the control plane");
        assert!(
            !parse(&["--control-plane=false"])
                .unwrap()
                .config()
                .unwrap()
                .control_plane
        );
        assert!(
            parse(&["--control-plane"])
                .unwrap()
                .config()
                .unwrap()
                .control_plane
        );
        assert!(
            !SimConfig::default().control_plane,
            "the library's server is passive"
        );
        // Arguments built in Rust, bypassing clap, are checked too.
        for interval in [f64::INFINITY, f64::NAN, -1.0] {
            let args = SimArgs {
                bookmark_interval: interval,
                ..parse(&[]).unwrap()
            };
            assert!(args.config().is_err(), "{interval}");
        }
        let args = SimArgs {
            churn: Some(f64::NAN),
            ..parse(&[]).unwrap()
        };
        assert!(args.config().unwrap_err().to_string().contains("churn"));
    }

    #[tokio::test]
    async fn a_handler_that_panics_answers_500_with_a_status() {
        let resp = answer_despite_panics(async { panic!("a handler's bug") }).await;
        assert_eq!(resp.status(), 500);
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap();
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            (v["kind"].as_str(), v["reason"].as_str()),
            (Some("Status"), Some("InternalError"))
        );
    }
}
