//! Time from `kubectl apply` of a WinkPlugin to the first event its plugin
//! handles, for the Rust pod-logger example (`plugins/pod-logger`) and its
//! Python counterpart (`plugins/python/pod-logger`, built from source as
//! the end-to-end tests build it).
//!
//! One run: a fresh `wink run --winkplugins install` (the release build,
//! an empty plugin directory) on the simulated API server, which holds one
//! Pod; once it says it is watching WinkPlugins, the real `kubectl apply
//! -f` of a WinkPlugin whose source is the component in a registry on
//! loopback (CNCF distribution, plain HTTP), until the plugin's log line
//! for that Pod (`[NAME] OnAdd: NAME`): kubectl's own run, the watch event,
//! the fetch, the compile or the precompiled code read back, the plugin's
//! start, its informer's list, the event. Cases:
//!
//! - in the store: the component pulled once before (`wink pull` into the
//!   daemon's `--oci-store`) and its compiled code in `--precompiled` (one
//!   uncounted run first);
//! - pulled: a fresh store each run, the compiled code cached (the pull
//!   alone added);
//! - pulled and compiled: a fresh store and a fresh precompiled directory
//!   each run (a node that never ran it; Cranelift, as `wink run` does).
//!
//! The fetch column is what the daemon logs for the fetch alone
//! (`WinkPlugin fetched ... took_ms`); the last row is the floor: kubectl
//! apply alone, no daemon running. p50, min and max per case.
//! Run: `cargo bench -p wink-e2e --bench winkplugin_apply`.
//! Environment: `WINKPLUGIN_APPLY_RUNS` (default 10),
//! `WINKPLUGIN_APPLY_PLUGINS` (default `rust,python`).

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/debian_support/mod.rs"]
mod debian_support;
#[allow(dead_code)]
#[path = "../tests/kubectl_support/mod.rs"]
mod kubectl_support;
#[path = "../tests/lang_support/mod.rs"]
mod lang_support;
#[path = "../tests/registry_support/mod.rs"]
mod registry_support;

use common::{Wink, scratch};
use kubectl_support::{Env, have_kubectl};
use lang_support::Lang;
use registry_support::Registry;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use wink_sim::SimConfig;

const WAIT: Duration = Duration::from_secs(300);
/// The Pod every run's plugin sees first.
const POD: &str = "already-there";

/// What one case keeps from run to run.
#[derive(Clone, Copy, PartialEq)]
enum Case {
    Stored,
    Pulled,
    Compiled,
}

impl Case {
    fn label(self) -> &'static str {
        match self {
            Case::Stored => "in the store",
            Case::Pulled => "pulled",
            Case::Compiled => "pulled and compiled",
        }
    }
}

struct Bench {
    env: Env,
    reg: Registry,
    dir: PathBuf,
    plugins: PathBuf,
}

/// One plugin under test: its WinkPlugin's name and the reference it was
/// pushed to.
struct Subject {
    lang: &'static str,
    name: String,
    reference: String,
    kib: u64,
}

/// `wink <args>` (the release build) to its end: its stdout, trimmed.
fn wink_ok(args: &[&str]) -> String {
    let out = Command::new(common::wink_release_bin())
        .args(args)
        .env_remove("KUBECONFIG")
        .output()
        .expect("run wink");
    assert!(
        out.status.success(),
        "wink {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The line containing `needle`, once there.
async fn wait_line(wink: &Wink, needle: &str) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(l) = wink.lines().into_iter().find(|l| l.contains(needle)) {
            return l;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {needle}:\n{}",
            wink.lines().join("\n")
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// The number after `key=` in `line`.
fn field(line: &str, key: &str) -> u64 {
    let at = line.find(&format!("{key}=")).expect(key) + key.len() + 1;
    line[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{key} in {line}"))
}

impl Bench {
    /// One run: (apply to first event, the fetch as the daemon logged it).
    async fn run(&self, s: &Subject, store: &Path, precompiled: &Path, case: Case) -> (Duration, Duration) {
        let (host, kubeconfig) = (self.reg.host(), self.env.kubeconfig.to_str().unwrap());
        let mut wink = Wink::spawn_bin(
            common::wink_release_bin(),
            &self.dir,
            &[
                "run",
                "--plugins",
                self.plugins.to_str().unwrap(),
                "--kubeconfig",
                kubeconfig,
                "--no-reload",
                "--winkplugins",
                "install",
                "--plain-http",
                &host,
                "--oci-store",
                store.to_str().unwrap(),
                "--precompiled",
                precompiled.to_str().unwrap(),
            ],
            &[],
        );
        wait_line(&wink, "watching WinkPlugins").await;
        let object = json!({"apiVersion": "wink.dev/v1alpha1", "kind": "WinkPlugin",
            "metadata": {"name": s.name}, "spec": {"source": {"oci": s.reference}}});
        let file = self.dir.join(format!("{}.json", s.name));
        std::fs::write(&file, object.to_string()).unwrap();

        let started = Instant::now();
        self.env.ok(&["apply", "-f", file.to_str().unwrap()]).await;
        wait_line(&wink, &format!("[{}] OnAdd: {POD}", s.name)).await;
        let took = started.elapsed();

        // What the case claims: where the component came from, whether it
        // was compiled.
        let fetched = wait_line(&wink, &format!("WinkPlugin fetched winkplugin={}", s.name)).await;
        let from = if case == Case::Stored {
            "from=store"
        } else {
            "from=registry"
        };
        assert!(fetched.contains(from), "{}: {fetched}", case.label());
        let compiled = wink
            .lines()
            .iter()
            .any(|l| l.contains("compiled the plugin's component") && l.contains(&s.name));
        assert_eq!(
            compiled,
            case == Case::Compiled,
            "{}: compiled {compiled}",
            case.label()
        );
        tokio::task::block_in_place(|| wink.terminate(Duration::from_secs(10)));
        drop(wink);
        self.env
            .ok(&["delete", "winkplugin", &s.name, "--ignore-not-found"])
            .await;
        (took, Duration::from_millis(field(&fetched, "took_ms")))
    }

    /// `runs` runs of `case`; the first of "in the store" pulls and
    /// compiles, uncounted.
    async fn case(&self, s: &Subject, case: Case, runs: usize) -> (Vec<Duration>, Vec<Duration>) {
        let base = self
            .dir
            .join(format!("{}-{}", s.lang, case.label().replace(' ', "-")));
        let _ = std::fs::remove_dir_all(&base);
        let (store, precompiled) = (base.join("store"), base.join("precompiled"));
        if case != Case::Compiled {
            // The compiled code, cached by one run.
            let warm = base.join("warm-store");
            self.run(s, &warm, &precompiled, Case::Compiled).await;
        }
        if case == Case::Stored {
            let host = self.reg.host();
            wink_ok(&[
                "pull",
                &s.reference,
                "--plain-http",
                &host,
                "--oci-store",
                store.to_str().unwrap(),
            ]);
        }
        let (mut took, mut fetch) = (Vec::new(), Vec::new());
        for i in 0..runs {
            let (store, precompiled) = match case {
                Case::Stored => (store.clone(), precompiled.clone()),
                Case::Pulled => (base.join(format!("store-{i}")), precompiled.clone()),
                Case::Compiled => (
                    base.join(format!("store-{i}")),
                    base.join(format!("precompiled-{i}")),
                ),
            };
            let (t, f) = self.run(s, &store, &precompiled, case).await;
            eprintln!("{} {} run {i}: {t:?} (fetch {f:?})", s.lang, case.label());
            took.push(t);
            fetch.push(f);
        }
        (took, fetch)
    }
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1e3)
}

fn p50(v: &mut [Duration]) -> Duration {
    v.sort();
    v[(v.len() - 1) / 2]
}

#[tokio::main]
async fn main() {
    if !have_kubectl() {
        return;
    }
    let runs: usize = std::env::var("WINKPLUGIN_APPLY_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let langs = std::env::var("WINKPLUGIN_APPLY_PLUGINS").unwrap_or_else(|_| "rust,python".into());
    let components: Vec<(&'static str, PathBuf)> = langs
        .split(',')
        .map(|l| match l.trim() {
            "rust" => ("rust", common::plugin("pod_logger")),
            "python" => (
                "python",
                lang_support::component(Lang::Python, "plugins/python/pod-logger"),
            ),
            other => panic!("WINKPLUGIN_APPLY_PLUGINS: {other}: rust or python"),
        })
        .collect();
    common::wink_release_bin();

    let env = kubectl_support::env("bench_winkplugin_apply", SimConfig::default()).await;
    env.sim
        .insert(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": POD, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}))
        .unwrap();
    let dir = scratch("bench_winkplugin_apply");
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let bench = Bench {
        env,
        reg: Registry::start("bench_winkplugin_apply_registry"),
        dir,
        plugins,
    };
    let mut rows = Vec::new();
    for (lang, component) in components {
        let host = bench.reg.host();
        let reference = format!("{host}/bench/{lang}-pod-logger:v1");
        wink_ok(&[
            "push",
            &reference,
            component.to_str().unwrap(),
            "--plain-http",
            &host,
        ]);
        let s = Subject {
            lang,
            name: format!("{lang}-logger"),
            reference,
            kib: std::fs::metadata(&component).unwrap().len() >> 10,
        };
        for case in [Case::Stored, Case::Pulled, Case::Compiled] {
            let (mut took, mut fetch) = bench.case(&s, case, runs).await;
            let p = p50(&mut took);
            rows.push(format!(
                "| {lang} ({} KiB) | {} | {} | {} | {} | {} |",
                s.kib,
                case.label(),
                ms(p),
                ms(took[0]),
                ms(took[took.len() - 1]),
                ms(p50(&mut fetch)),
            ));
        }
    }
    // The floor: kubectl's own run, the object created with no daemon to
    // see it (the CRD is there from the runs above).
    let file = bench.dir.join("kubectl-only.json");
    let object = json!({"apiVersion": "wink.dev/v1alpha1", "kind": "WinkPlugin",
        "metadata": {"name": "kubectl-only"}, "spec": {"source": {"oci": "127.0.0.1:1/none:v1"}}});
    std::fs::write(&file, object.to_string()).unwrap();
    let mut alone = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        bench.env.ok(&["apply", "-f", file.to_str().unwrap()]).await;
        alone.push(started.elapsed());
        bench.env.ok(&["delete", "winkplugin", "kubectl-only"]).await;
    }
    let p = p50(&mut alone);
    rows.push(format!(
        "| kubectl apply alone (no daemon) | | {} | {} | {} | |",
        ms(p),
        ms(alone[0]),
        ms(alone[alone.len() - 1])
    ));
    println!(
        "kubectl apply of a WinkPlugin -> its plugin's first event (a Pod already there); {runs} runs each"
    );
    println!("| plugin | component | p50 | min | max | fetch p50 |");
    println!("|---|---|---|---|---|---|");
    for r in rows {
        println!("{r}");
    }
    bench.env.sim.shutdown().await;
}
