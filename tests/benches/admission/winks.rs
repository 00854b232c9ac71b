//! The wink targets of the admission benchmark: which service-selector-guard
//! each loads (`ADMISSION_PLUGINS`: the Rust example, and its Python and
//! TypeScript translations built from source as the languages benchmark
//! builds them), and the daemon as a child process.

use super::common;
use super::lang_support::{self, Lang};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One wink target: its name in the tables, the component it loads, the
/// Secret keeping its CA.
pub struct Guard {
    pub target: &'static str,
    pub component: PathBuf,
    pub ca_secret: &'static str,
}

impl Guard {
    /// Whether its CA and the webhook configurations are the default ones
    /// (the Rust plugin's wink keeps them; the others have a CA of their
    /// own and leave the configurations alone, so no two winks write them).
    pub fn first(&self) -> bool {
        self.ca_secret == "wink-admission-ca"
    }

    /// `wink run`'s admission flags for a webhook server on `addr`.
    pub fn flags(&self, addr: &str, url: &str) -> Vec<String> {
        let mut flags: Vec<String> = ["--admission-addr", addr, "--admission-webhook-url", url]
            .map(String::from)
            .to_vec();
        if !self.first() {
            flags.push(format!("--admission-ca-secret={}", self.ca_secret));
            flags.push("--admission-configurations=false".into());
        }
        flags
    }
}

/// The plugins of `ADMISSION_PLUGINS` (`rust` when unset; any of `rust`,
/// `python`, `js`), each built before anything is timed.
pub fn guards() -> Vec<Guard> {
    let wanted = std::env::var("ADMISSION_PLUGINS").unwrap_or_else(|_| "rust".into());
    let wanted: Vec<&str> = wanted.split(',').map(str::trim).collect();
    for w in &wanted {
        assert!(
            ["rust", "python", "js"].contains(w),
            "ADMISSION_PLUGINS: unknown {w:?}"
        );
    }
    let langs: Vec<(Lang, &str)> = [
        (Lang::Python, "python", "plugins/python/service-selector-guard"),
        (Lang::Js, "js", "plugins/js/service-selector-guard"),
    ]
    .into_iter()
    .filter(|(_, name, _)| wanted.contains(name))
    .map(|(lang, _, dir)| (lang, dir))
    .collect();
    // The tools are installed only when a language plugin is wanted.
    let built = match langs.is_empty() {
        true => Vec::new(),
        false => lang_support::components(&langs),
    };
    let mut built = built.into_iter();
    let mut guards = Vec::new();
    if wanted.contains(&"rust") {
        guards.push(Guard {
            target: "wink",
            component: common::plugin("service_selector_guard"),
            ca_secret: "wink-admission-ca",
        });
    }
    for (lang, _) in &langs {
        let (target, ca_secret) = match lang {
            Lang::Python => ("wink-python", "wink-admission-ca-python"),
            Lang::Js => ("wink-js", "wink-admission-ca-js"),
        };
        let component = built.next().unwrap();
        guards.push(Guard {
            target,
            component,
            ca_secret,
        });
    }
    guards
}

/// The daemon's binary: `ADMISSION_WINK_BIN` (e.g. `target/release/wink`,
/// built beforehand), else the debug build the other benchmarks run.
pub fn wink_binary() -> PathBuf {
    match std::env::var_os("ADMISSION_WINK_BIN") {
        Some(bin) => common::root().join(bin),
        None => common::wink_bin().to_path_buf(),
    }
}

/// `wink run` as a child process, its output lines collected.
pub struct Daemon {
    child: std::process::Child,
    lines: Arc<std::sync::Mutex<Vec<String>>>,
}

/// A daemon left running (a bench that panicked) is killed with it.
impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Daemon {
    pub fn run(bin: &Path, plugins: &Path, kubeconfig: &Path, extra: &[String]) -> Daemon {
        let mut child = Command::new(bin)
            .args([
                "run",
                "--plugins",
                plugins.to_str().unwrap(),
                "--kubeconfig",
                kubeconfig.to_str().unwrap(),
            ])
            .args(extra)
            .env("RUST_LOG", "info")
            .env_remove("KUBECONFIG")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn wink");
        let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
        for out in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let lines = lines.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    lines.lock().unwrap().push(line);
                }
            });
        }
        Daemon { child, lines }
    }

    pub fn wait_for_line(&self, needle: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !self.lines.lock().unwrap().iter().any(|l| l.contains(needle)) {
            assert!(
                Instant::now() < deadline,
                "wink never said {needle:?}:\n{}",
                self.lines.lock().unwrap().join("\n")
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn terminate(&mut self, timeout: Duration) {
        // SAFETY: kill has no preconditions; the pid is our own child's.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
