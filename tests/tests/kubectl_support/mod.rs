//! Real `kubectl` (v1.32, /usr/bin/kubectl) against a simulated API server
//! through a kubeconfig written for it: what the kubectl suites share.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::process::Command;
use wink_sim::{Sim, SimConfig};

pub const KUBECTL: &str = "/usr/bin/kubectl";

/// Whether kubectl is installed (it is on every machine this project
/// runs on, CI's included); says so when it is not.
pub fn have_kubectl() -> bool {
    if Path::new(KUBECTL).exists() {
        return true;
    }
    println!("kubectl is not installed at {KUBECTL}: skipping the kubectl tests");
    false
}

/// A simulated server, its kubeconfig, and a home for kubectl's caches.
pub struct Env {
    pub sim: Sim,
    pub kubeconfig: PathBuf,
    pub dir: PathBuf,
}

/// A server started with `config`, for the test `name`.
pub async fn env(name: &str, config: SimConfig) -> Env {
    let sim = Sim::start(config).await.unwrap();
    let dir = std::env::temp_dir().join(format!("wink-kubectl-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).unwrap();
    Env { sim, kubeconfig, dir }
}

impl Env {
    /// kubectl with `args`, pointed at this server only.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(KUBECTL);
        c.args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", &self.dir)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        c
    }

    /// Run kubectl to completion (90 s at most): (success, stdout, stderr).
    pub async fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = tokio::time::timeout(Duration::from_secs(90), self.cmd(args).output())
            .await
            .expect("kubectl finished in time")
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    }

    /// Run kubectl; panics with its stderr on failure.
    pub async fn ok(&self, args: &[&str]) -> String {
        let (ok, stdout, stderr) = self.run(args).await;
        assert!(ok, "kubectl {args:?} failed: {stderr}\n{stdout}");
        stdout
    }

    /// Run kubectl and parse what it printed as JSON.
    pub async fn json(&self, args: &[&str]) -> Value {
        serde_json::from_str(&self.ok(args).await).unwrap()
    }

    /// The items `args` lists (`-o json` is added).
    pub async fn items(&self, args: &[&str]) -> Vec<Value> {
        let mut a = args.to_vec();
        a.extend(["-o", "json"]);
        self.json(&a).await["items"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Wait (at most 30 s) until `check` holds for the items `args` lists;
    /// those items.
    pub async fn until(&self, what: &str, args: &[&str], check: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let items = self.items(args).await;
            if check(&items) {
                return items;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for {what}: {}",
                serde_json::to_string_pretty(&items).unwrap()
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
}
