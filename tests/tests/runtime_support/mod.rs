//! Shared helpers of the plugin runtime's end-to-end tests: one simulated
//! cluster, plugin directory and compile cache per test, `wink run` on them,
//! and readers of its log.

use crate::common::{Wink, scratch};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use wink_sim::{Sim, SimConfig};

pub const WAIT: Duration = Duration::from_secs(120);

/// A valid, empty component: it exports no `handler`.
pub const EMPTY_COMPONENT: &[u8] = b"\0asm\x0d\0\x01\0";

pub fn pod(name: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}
    }))
    .unwrap()
}

/// One test's simulated cluster, plugin directory and compile cache.
pub struct Env {
    pub dir: PathBuf,
    pub plugins: PathBuf,
    pub kubeconfig: PathBuf,
    pub sim: Sim,
    pub pods: Api<Pod>,
}

impl Env {
    pub async fn new(test: &str) -> Env {
        let dir = scratch(test);
        let plugins = dir.join("plugins");
        std::fs::create_dir_all(&plugins).unwrap();
        std::fs::create_dir_all(dir.join("staging")).unwrap();
        let sim = Sim::start(SimConfig::default()).await.unwrap();
        let kubeconfig = dir.join("kubeconfig");
        sim.write_kubeconfig(&kubeconfig).unwrap();
        let pods = Api::namespaced(sim.client(), "default");
        Env {
            dir,
            plugins,
            kubeconfig,
            sim,
            pods,
        }
    }

    /// `wink run` on this directory, with its own compile cache.
    pub fn wink(&self, extra: &[&str]) -> Wink {
        let cache = self.dir.join("cache");
        let mut args = vec!["--compile-cache", cache.to_str().unwrap()];
        args.extend_from_slice(extra);
        Wink::run_on(&self.plugins, &self.kubeconfig, &args)
    }

    /// Replace `plugins/<file>` in one step (written beside, then renamed),
    /// so the watcher never sees a partial write unless the test wants one.
    pub fn put(&self, file: &str, bytes: &[u8]) {
        let staged = self.dir.join("staging").join(file);
        std::fs::write(&staged, bytes).unwrap();
        std::fs::rename(&staged, self.plugins.join(file)).unwrap();
    }

    pub async fn create(&self, name: &str) {
        self.pods
            .create(&PostParams::default(), &pod(name))
            .await
            .unwrap();
    }
}

pub fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

/// The `On...` lines a plugin printed, in order, without the plugin prefix.
pub fn on_lines(w: &Wink, plugin: &str) -> Vec<String> {
    w.plugin_lines(plugin)
        .into_iter()
        .filter(|l| l.starts_with("On"))
        .collect()
}

/// The host's log lines (not a plugin's output) containing every needle; a
/// needle `plugin=NAME` must be a whole field.
pub fn log_lines(w: &Wink, needles: &[&str]) -> Vec<String> {
    let matches = |l: &str, n: &str| {
        if n.starts_with("plugin=") {
            l.split_whitespace().any(|t| t == n)
        } else {
            l.contains(n)
        }
    };
    w.lines()
        .into_iter()
        // Not a plugin's own output (the `wink::plugin` target), whatever
        // a backtrace in the line names.
        .filter(|l| {
            l.split_whitespace().nth(2) != Some("wink::plugin:") && needles.iter().all(|n| matches(l, n))
        })
        .collect()
}

pub fn wait_for_log(w: &Wink, needles: &[&str], count: usize) {
    w.wait_until(&format!("{count} log line(s) with {needles:?}"), WAIT, |w| {
        log_lines(w, needles).len() >= count
    });
}

pub fn names(lines: &[String], prefix: &str) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| l.strip_prefix(prefix).map(str::to_string))
        .collect()
}

/// Indexes of the lines saying `plugin` is synced: one per version of it,
/// each the end of that version's initial replay.
pub fn synced_at(lines: &[String], plugin: &str) -> Vec<usize> {
    let field = format!("plugin={plugin}");
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.contains("plugin synced") && l.split_whitespace().any(|t| t == field))
        .map(|(i, _)| i)
        .collect()
}

/// Creates a pod `ev-NNNN` every 20 ms, in order, until told where to stop.
pub struct Creator {
    created: Arc<AtomicUsize>,
    stop_at: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<usize>,
}

impl Creator {
    pub fn start(pods: Api<Pod>) -> Creator {
        let created = Arc::new(AtomicUsize::new(0));
        let stop_at = Arc::new(AtomicUsize::new(usize::MAX));
        let task = {
            let (created, stop_at) = (created.clone(), stop_at.clone());
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_millis(20));
                let mut i = 0;
                while i < stop_at.load(Ordering::Acquire) {
                    tick.tick().await;
                    pods.create(&PostParams::default(), &pod(&format!("ev-{i:04}")))
                        .await
                        .unwrap();
                    i += 1;
                    created.store(i, Ordering::Release);
                }
                i
            })
        };
        Creator {
            created,
            stop_at,
            task,
        }
    }

    /// Pods created so far.
    pub fn created(&self) -> usize {
        self.created.load(Ordering::Acquire)
    }

    /// Wait until `n` pods exist.
    pub fn wait_created(&self, wink: &Wink, n: usize) {
        wink.wait_until(&format!("{n} pods created"), WAIT, |_| self.created() >= n);
    }

    /// Create `more` pods after the ones created so far, then stop; returns
    /// how many were created in all.
    pub async fn finish_after(self, more: usize) -> usize {
        self.stop_at.store(self.created() + more, Ordering::Release);
        self.task.await.unwrap()
    }
}
