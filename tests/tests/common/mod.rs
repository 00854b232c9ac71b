//! Shared harness of the end-to-end tests: builds the real plugins for
//! wasm32-wasip2 and the real `wink` binary, runs the binary as a child
//! process and collects its output lines.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Where cargo builds: `$CARGO_TARGET_DIR` when set (the nested builds
/// below inherit it), else the workspace's `target/`.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root().join(dir),
        _ => root().join("target"),
    }
}

/// A nested `cargo` in the workspace root, without the variables cargo sets
/// for this test process (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`, ...): some
/// build scripts (ring's) rerun when one of them changes, so inheriting them
/// would make every nested build and every later plain `cargo build`
/// rebuild the TLS stack and `wink` in turn (~50 s each).
pub fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root());
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let per_crate = ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_CRATE_", "CARGO_BIN_"]
            .iter()
            .any(|p| name.starts_with(p));
        if per_crate || name == "CARGO_PRIMARY_PACKAGE" || name == "CARGO_TARGET_TMPDIR" {
            c.env_remove(&*name);
        }
    }
    c
}

fn run_cargo(args: &[&str]) {
    let status = cargo().args(args).status().expect("run cargo");
    assert!(status.success(), "cargo {args:?} failed");
}

/// rustup adds the targets of `rust-toolchain.toml` only when it installs
/// the toolchain itself: on a machine that already had the toolchain, add
/// the plugins' target here (a no-op when present, or without rustup).
pub fn ensure_wasm_target() {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .current_dir(root())
        .output();
    let Ok(installed) = installed else { return };
    if !String::from_utf8_lossy(&installed.stdout)
        .lines()
        .any(|t| t.trim() == "wasm32-wasip2")
    {
        let status = Command::new("rustup")
            .args(["target", "add", "wasm32-wasip2"])
            .current_dir(root())
            .status()
            .expect("run rustup");
        assert!(status.success(), "rustup target add wasm32-wasip2 failed");
    }
}

/// Build every example plugin (release, wasm32-wasip2) once; returns the
/// directory holding `<crate>.wasm` files.
pub fn plugins_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        ensure_wasm_target();
        run_cargo(&[
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--workspace",
            // The host crates (wink, wink-sim, wink-selector, the tests) are
            // not plugins; wink-sdk is built as the plugins' dependency.
            "--exclude",
            "wink*",
        ]);
        target_dir().join("wasm32-wasip2/release")
    })
}

/// The path of one built plugin, e.g. `plugin("pod_logger")`.
pub fn plugin(crate_name: &str) -> PathBuf {
    let p = plugins_dir().join(format!("{crate_name}.wasm"));
    assert!(p.exists(), "{} was not built", p.display());
    p
}

/// Build the release `wink` binary once (for the benchmarks).
pub fn wink_release_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        run_cargo(&["build", "--release", "-p", "wink", "--bin", "wink"]);
        target_dir().join("release/wink")
    })
}

/// Build the `wink` binary once.
pub fn wink_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        run_cargo(&["build", "-p", "wink", "--bin", "wink"]);
        target_dir().join("debug/wink")
    })
}

/// A fresh directory under target/e2e for one test.
pub fn scratch(test: &str) -> PathBuf {
    let dir = root().join("target/e2e").join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A running `wink` child process whose output lines are collected.
pub struct Wink {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Wink {
    /// Spawn `wink <args>`.
    /// `wink run --plugins PLUGINS --kubeconfig KUBECONFIG EXTRA...`.
    pub fn run_on(plugins: &Path, kubeconfig: &Path, extra: &[&str]) -> Wink {
        let mut args = vec![
            "run",
            "--plugins",
            plugins.to_str().unwrap(),
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        Wink::spawn(&args)
    }

    pub fn spawn(args: &[&str]) -> Wink {
        Wink::spawn_in(Path::new("."), args)
    }

    /// Spawn `wink <args>` in the directory `dir`.
    pub fn spawn_in(dir: &Path, args: &[&str]) -> Wink {
        Wink::spawn_with_env(dir, args, &[])
    }

    /// Spawn `wink <args>` in the directory `dir` with the variables `env`.
    pub fn spawn_with_env(dir: &Path, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Wink {
        Wink::spawn_bin(wink_bin(), dir, args, env)
    }

    /// Spawn the `wink` binary `bin` (the benchmarks' release build) with
    /// `args` in the directory `dir` with the variables `env`.
    pub fn spawn_bin(bin: &Path, dir: &Path, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Wink {
        let mut child = Command::new(bin)
            .current_dir(dir)
            .args(args)
            .envs(env.iter().copied())
            .env("RUST_LOG", "info")
            .env_remove("KUBECONFIG")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn wink");
        let lines = Arc::new(Mutex::new(Vec::new()));
        for out in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let lines = lines.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    if std::env::var_os("WINK_E2E_ECHO").is_some() {
                        eprintln!("wink| {line}");
                    }
                    lines.lock().unwrap().push(line);
                }
            });
        }
        Wink { child, lines }
    }

    /// Every line so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// The messages a plugin printed or logged, in order, without the prefix.
    pub fn plugin_lines(&self, plugin: &str) -> Vec<String> {
        let tag = format!("[{plugin}] ");
        self.lines()
            .iter()
            .filter_map(|l| l.split_once(&tag).map(|(_, m)| m.to_string()))
            .collect()
    }

    /// Wait until `pred` holds over the lines; panics with the output after `timeout`.
    pub fn wait_until(&self, what: &str, timeout: Duration, mut pred: impl FnMut(&Wink) -> bool) {
        let deadline = Instant::now() + timeout;
        while !pred(self) {
            if Instant::now() > deadline {
                panic!(
                    "timed out waiting for {what}; output:\n{}",
                    self.lines().join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Wait for a line containing `needle`.
    pub fn wait_for_line(&self, needle: &str, timeout: Duration) {
        self.wait_until(needle, timeout, |w| w.lines().iter().any(|l| l.contains(needle)));
    }
}

impl Wink {
    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Send SIGTERM and wait up to `timeout` for the process to exit; its
    /// exit status, or none when it is still running.
    pub fn terminate(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        self.wait_exit(timeout)
    }

    /// Wait up to `timeout` for the process to exit by itself.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Wink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
