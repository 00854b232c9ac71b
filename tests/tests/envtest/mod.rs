//! A real kube-apiserver and etcd for the end-to-end suites, as
//! controller-runtime's envtest gives Go projects: the binaries are found in
//! the directory `KUBEBUILDER_ASSETS` names (the ecosystem's convention;
//! `setup-envtest use -p path` prints one), the pair is started on free
//! loopback ports in a temporary directory with its own certificates, a
//! static admin token (group `system:masters`) and RBAC on, and stopped
//! kube-apiserver first, then etcd.
//!
//! Where the variable is unset, [`shared`] says so in one line and the
//! real-server suites step aside; where it is set, a missing binary or a
//! server that does not come up fails the test. The suites share one pair
//! per test process ([`shared`]), each test in namespaces of its own
//! ([`ControlPlane::namespace`]); it is stopped when the process exits.
//! Nothing but the API server runs: no controller-manager (no ServiceAccount
//! `default` in a new namespace unless [`ControlPlane::namespace`] makes
//! it, Deployments get no ReplicaSets), no scheduler, no kubelet.
//!
//! Owns starting, reaching and stopping the pair; the suites own what they
//! create in it.
#![allow(dead_code)]

use anyhow::Context;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The variable naming the directory of `kube-apiserver` and `etcd`.
pub const ASSETS: &str = "KUBEBUILDER_ASSETS";

/// How long the pair may take to answer `/readyz` (10-40 s on 2 cores).
const READY_WITHIN: Duration = Duration::from_secs(180);

/// The assets directory, when `KUBEBUILDER_ASSETS` is set. Panics when it is
/// set but lacks a binary: a CI that asked for the real server gets it or
/// fails.
pub fn assets() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os(ASSETS).filter(|v| !v.is_empty())?);
    for bin in ["kube-apiserver", "etcd"] {
        let path = dir.join(bin);
        assert!(
            path.is_file(),
            "{ASSETS}={} has no {bin}: see docs/src/internals/tests.md for getting the assets",
            dir.display()
        );
    }
    Some(dir)
}

/// How to start a pair.
#[derive(Clone, Debug)]
pub struct Options {
    /// `--authorization-mode=RBAC` (else AlwaysAllow).
    pub rbac: bool,
    /// More kube-apiserver flags.
    pub apiserver_args: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            rbac: true,
            apiserver_args: Vec::new(),
        }
    }
}

/// A running etcd and kube-apiserver.
pub struct ControlPlane {
    /// Its temporary directory (certificates, etcd's data, logs).
    pub dir: PathBuf,
    /// kube-apiserver's secure port on 127.0.0.1.
    pub port: u16,
    /// The admin's bearer token (group `system:masters`).
    pub token: String,
    /// The CA of its serving certificate (PEM).
    pub ca_pem: String,
    /// A kubeconfig for the admin.
    pub kubeconfig: PathBuf,
    children: Mutex<Vec<Child>>,
}

/// The pair every real-server test of this process shares.
static SHARED: OnceLock<ControlPlane> = OnceLock::new();

/// The pair every real-server test of this process shares, started on
/// first use with [`Options::default`] (RBAC on); None, said in one line,
/// when `KUBEBUILDER_ASSETS` is unset.
pub fn shared() -> Option<&'static ControlPlane> {
    let Some(assets) = assets() else {
        println!(
            "{ASSETS} is unset: skipping this real kube-apiserver test (see docs/src/internals/tests.md)"
        );
        return None;
    };
    Some(SHARED.get_or_init(|| {
        // Started from a thread that never ends, so that the children's
        // parent-death signal fires only when the process is gone (a test
        // thread ends with its test); the process's exit stops them in
        // order first (`atexit`).
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(ControlPlane::start_in(&assets, &Options::default()));
            loop {
                std::thread::park();
            }
        });
        let cp = rx.recv().unwrap().expect("start the real kube-apiserver");
        unsafe { libc::atexit(stop_shared) };
        cp
    }))
}

extern "C" fn stop_shared() {
    if let Some(cp) = SHARED.get() {
        cp.stop();
    }
}

/// A free TCP port on 127.0.0.1 (free when asked; the caller binds it soon).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The CA, kube-apiserver's serving certificate and the service-account
/// signing key, written into `pki`; returns the CA's PEM.
fn write_pki(pki: &Path) -> anyhow::Result<String> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
    std::fs::create_dir_all(pki)?;
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.distinguished_name.push(DnType::CommonName, "wink-envtest-ca");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca.self_signed(&ca_key)?;
    let serving_key = KeyPair::generate()?;
    let mut serving = CertificateParams::new(vec![
        "127.0.0.1".to_string(),
        "localhost".into(),
        "kubernetes.default.svc".into(),
    ])?;
    serving
        .distinguished_name
        .push(DnType::CommonName, "kube-apiserver");
    let serving_cert = serving.signed_by(&serving_key, &ca_cert, &ca_key)?;
    let sa_key = KeyPair::generate()?;
    let files = [
        ("ca.crt", ca_cert.pem()),
        ("apiserver.crt", serving_cert.pem()),
        ("apiserver.key", serving_key.serialize_pem()),
        ("sa.key", sa_key.serialize_pem()),
        ("sa.pub", sa_key.public_key_pem()),
    ];
    for (name, pem) in files {
        std::fs::write(pki.join(name), pem)?;
    }
    Ok(ca_cert.pem())
}

/// What `etcd -h` says of its flags.
fn etcd_flags(assets: &Path) -> String {
    let help = Command::new(assets.join("etcd")).arg("-h").output();
    help.map(|o| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
    .unwrap_or_default()
}

/// A child whose parent-death signal is SIGKILL (the process died without
/// stopping it), in a process group of its own (a Ctrl-C of the test run
/// does not reach it before the harness stops it in order).
fn spawn(cmd: &mut Command, log: &Path) -> anyhow::Result<Child> {
    let log = std::fs::File::create(log)?;
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            libc::setpgid(0, 0);
            Ok(())
        });
    }
    Ok(cmd
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()?)
}

impl ControlPlane {
    /// Start a pair of its own (blocking; seconds to tens of seconds), or
    /// None when `KUBEBUILDER_ASSETS` is unset.
    pub fn start(options: &Options) -> Option<ControlPlane> {
        let assets = assets()?;
        Some(ControlPlane::start_in(&assets, options).expect("start the real kube-apiserver"))
    }

    fn start_in(assets: &Path, options: &Options) -> anyhow::Result<ControlPlane> {
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "wink-envtest-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let pki = dir.join("pki");
        let ca_pem = write_pki(&pki)?;
        let token = format!("{:032x}", rand::random::<u128>());
        std::fs::write(
            pki.join("tokens.csv"),
            format!("{token},admin,admin-uid,\"system:masters\"\n"),
        )?;
        let (etcd_port, peer_port, port) = (free_port(), free_port(), free_port());
        let client_url = format!("http://127.0.0.1:{etcd_port}");
        let mut etcd = Command::new(assets.join("etcd"));
        etcd.args([
            "--name",
            "envtest",
            "--data-dir",
            dir.join("etcd").to_str().unwrap(),
        ])
        .args(["--listen-client-urls", &client_url])
        .args(["--listen-peer-urls", &format!("http://127.0.0.1:{peer_port}")])
        .args(["--log-level", "warn", "--unsafe-no-fsync"]);
        // etcd's own binary wants the advertised URL beside the listened
        // one; a minimal embedding (as ../shared/k8s's) has no such flag.
        if etcd_flags(assets).contains("advertise-client-urls") {
            etcd.args(["--advertise-client-urls", &client_url]);
        }
        let etcd = spawn(&mut etcd, &dir.join("etcd.log")).context("start etcd")?;
        let p = |f: &str| pki.join(f).to_str().unwrap().to_string();
        let mut args = vec![
            "--bind-address=127.0.0.1".to_string(),
            "--advertise-address=127.0.0.1".into(),
            format!("--secure-port={port}"),
            format!("--etcd-servers=http://127.0.0.1:{etcd_port}"),
            "--service-cluster-ip-range=10.0.0.0/24".into(),
            format!("--tls-cert-file={}", p("apiserver.crt")),
            format!("--tls-private-key-file={}", p("apiserver.key")),
            format!("--client-ca-file={}", p("ca.crt")),
            format!("--token-auth-file={}", p("tokens.csv")),
            format!(
                "--authorization-mode={}",
                if options.rbac { "RBAC" } else { "AlwaysAllow" }
            ),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
            format!("--service-account-key-file={}", p("sa.pub")),
            format!("--service-account-signing-key-file={}", p("sa.key")),
            format!("--cert-dir={}", dir.join("certs").display()),
            // As clusters run it (kubeadm's default): else a privileged
            // container is refused by validation, before any webhook.
            "--allow-privileged=true".into(),
            "--v=1".into(),
        ];
        args.extend(options.apiserver_args.iter().cloned());
        let apiserver = spawn(
            Command::new(assets.join("kube-apiserver")).args(&args),
            &dir.join("kube-apiserver.log"),
        )
        .context("start kube-apiserver")?;
        let kubeconfig = dir.join("kubeconfig");
        let cp = ControlPlane {
            dir,
            port,
            token,
            ca_pem,
            kubeconfig,
            children: Mutex::new(vec![etcd, apiserver]),
        };
        std::fs::write(&cp.kubeconfig, cp.kubeconfig_text("admin", &cp.token))?;
        cp.wait_ready().inspect_err(|_| cp.stop())?;
        Ok(cp)
    }

    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// A kubeconfig (text) for `user` authenticated by `token`.
    pub fn kubeconfig_text(&self, user: &str, token: &str) -> String {
        use base64::Engine;
        let ca = base64::engine::general_purpose::STANDARD.encode(&self.ca_pem);
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: envtest\n  cluster:\n    server: {}\n    \
             certificate-authority-data: {ca}\nusers:\n- name: {user}\n  user:\n    token: {token}\n\
             contexts:\n- name: envtest\n  context:\n    cluster: envtest\n    user: {user}\n\
             current-context: envtest\n",
            self.url()
        )
    }

    /// Wait for `/readyz`, failing early (with the log's tail) when a child
    /// exits.
    fn wait_ready(&self) -> anyhow::Result<()> {
        let started = Instant::now();
        loop {
            for (name, child) in ["etcd", "kube-apiserver"]
                .iter()
                .zip(self.children.lock().unwrap().iter_mut())
            {
                if let Some(status) = child.try_wait()? {
                    anyhow::bail!("{name} exited ({status}):\n{}", self.log_tail(name));
                }
            }
            let ready = Command::new(crate::kubectl_support::KUBECTL)
                .args(["--kubeconfig", self.kubeconfig.to_str().unwrap()])
                .args(["get", "--raw", "/readyz", "--request-timeout=5s"])
                .env_remove("KUBERNETES_SERVICE_HOST")
                .stdin(Stdio::null())
                .output()?;
            if ready.status.success() {
                return Ok(());
            }
            anyhow::ensure!(
                started.elapsed() < READY_WITHIN,
                "kube-apiserver not ready within {READY_WITHIN:?}:\n{}",
                self.log_tail("kube-apiserver")
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// The last lines of `name`'s log.
    pub fn log_tail(&self, name: &str) -> String {
        let text = std::fs::read_to_string(self.dir.join(format!("{name}.log"))).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// Stop kube-apiserver (SIGTERM, then SIGKILL after 20 s), then etcd.
    /// Idempotent.
    pub fn stop(&self) {
        let mut children = self.children.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(mut child) = children.pop() {
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(20);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// A client for the admin.
    pub async fn client(&self) -> kube::Client {
        let config = kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(&self.kubeconfig).unwrap(),
            &Default::default(),
        )
        .await
        .unwrap();
        kube::Client::try_from(config).unwrap()
    }

    /// A new namespace `<prefix>-<n>` with its ServiceAccount `default` (no
    /// controller-manager makes it), for one test's objects.
    pub async fn namespace(&self, prefix: &str) -> String {
        use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
        use kube::api::{Api, PostParams};
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        let name = format!("{prefix}-{}", SEQ.fetch_add(1, Ordering::Relaxed));
        let client = self.client().await;
        let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap();
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
        let sa: ServiceAccount =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "default"}})).unwrap();
        Api::<ServiceAccount>::namespaced(client, &name)
            .create(&PostParams::default(), &sa)
            .await
            .unwrap();
        name
    }

    /// kubectl pointed at this server as the admin, with its caches in `home`.
    pub fn kubectl(&self, home: &Path) -> Kubectl {
        Kubectl {
            kubeconfig: self.kubeconfig.clone(),
            home: home.to_path_buf(),
        }
    }

    /// A token for the ServiceAccount `namespace/name` (TokenRequest, as
    /// `kubectl create token` asks), and a kubeconfig file with it at `path`.
    pub async fn service_account_kubeconfig(&self, namespace: &str, name: &str, path: &Path) {
        let out = self
            .kubectl(path.parent().unwrap())
            .ok(&["create", "token", name, "-n", namespace, "--duration=1h"])
            .await;
        let user = format!("system:serviceaccount:{namespace}:{name}");
        std::fs::write(path, self.kubeconfig_text(&user.replace(':', "-"), out.trim())).unwrap();
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Unmodified kubectl against a real server. Its OpenAPI document cannot be
/// served by this build of kube-apiserver, so `create` and `apply` are
/// given `--validate=false` by the callers that need them.
pub struct Kubectl {
    pub kubeconfig: PathBuf,
    pub home: PathBuf,
}

impl Kubectl {
    /// Run kubectl with `args` (and `stdin`) to completion, 90 s at most:
    /// (success, stdout, stderr).
    pub async fn run_with(&self, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
        use tokio::io::AsyncWriteExt;
        let mut c = tokio::process::Command::new(crate::kubectl_support::KUBECTL);
        c.args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", &self.home)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = c.spawn().unwrap();
        if let Some(input) = stdin {
            let mut pipe = child.stdin.take().unwrap();
            pipe.write_all(input.as_bytes()).await.unwrap();
        }
        let out = tokio::time::timeout(Duration::from_secs(90), child.wait_with_output())
            .await
            .expect("kubectl finished in time")
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    }

    pub async fn run(&self, args: &[&str]) -> (bool, String, String) {
        self.run_with(args, None).await
    }

    /// Run kubectl; panics with its stderr on failure.
    pub async fn ok(&self, args: &[&str]) -> String {
        let (ok, stdout, stderr) = self.run(args).await;
        assert!(ok, "kubectl {args:?} failed: {stderr}\n{stdout}");
        stdout
    }

    /// `kubectl apply --validate=false -f -` of `yaml`.
    pub async fn apply(&self, yaml: &str) -> (bool, String, String) {
        self.run_with(&["apply", "--validate=false", "-f", "-"], Some(yaml))
            .await
    }
}
