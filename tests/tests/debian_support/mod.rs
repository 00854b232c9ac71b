//! The Debian packages the suites need (`prometheus` for promtool,
//! `docker-registry`, `skopeo`, `chromium`), installed with apt-get where
//! their binary is missing. Owns every apt-get the tests run: one install at
//! a time in this process (a mutex) and across the test processes (a file
//! lock), each apt-get waiting up to 10 minutes for dpkg's own lock (held by
//! another apt user), `apt-get update` run once when an install fails (a
//! fresh machine has no package lists, or old ones), the install then tried
//! once more, and a panic naming the package with apt-get's last lines when
//! it still fails.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// How long an apt-get waits for dpkg's lock, held by another apt user.
const DPKG_LOCK_TIMEOUT_S: u32 = 600;

/// The last lines of apt-get's output a failure shows.
const TAIL_LINES: usize = 30;

/// Held while this process runs apt-get.
static APT: Mutex<()> = Mutex::new(());

/// Whether this process ran `apt-get update`.
static UPDATED: AtomicBool = AtomicBool::new(false);

/// Installs (an `apt-get install`, and its retry when it failed) by
/// package, for the tests of this module.
static INSTALLS: Mutex<Option<HashMap<String, usize>>> = Mutex::new(None);

/// `binary` as found on PATH (then in /usr/sbin, /usr/games, where Debian
/// puts some), if anywhere.
pub fn find(binary: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/games"].map(PathBuf::from))
        .map(|dir| dir.join(binary))
        .find(|p| p.is_file())
}

/// The path of `binary`, installing the Debian package `package` for it when
/// it is missing; at once when it is there. Panics, naming the package and
/// showing apt-get's last lines, when the install fails.
pub fn ensure(package: &str, binary: &str) -> PathBuf {
    if let Some(found) = find(binary) {
        return found;
    }
    // A thread that panicked while installing leaves nothing to protect.
    let _apt = APT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(found) = find(binary) {
        return found;
    }
    // Another test process may be installing: one at a time.
    let _across = ProcessLock::take();
    if let Some(found) = find(binary) {
        return found;
    }
    install(package);
    find(binary).unwrap_or_else(|| panic!("apt-get installed {package}, and yet no {binary} on PATH"))
}

/// How many times this process installed `package` (an `apt-get install`,
/// and its retry when it failed).
pub fn installs(package: &str) -> usize {
    let counts = INSTALLS.lock().unwrap_or_else(|e| e.into_inner());
    counts.as_ref().and_then(|c| c.get(package)).copied().unwrap_or(0)
}

/// Install `package` (the caller holds both locks): once, then after an
/// `apt-get update` (this process's first) once more.
fn install(package: &str) {
    let args = ["install", "-y", "-q", "--no-install-recommends", package];
    count_install(package);
    let first = apt(&args);
    if first.ok {
        return;
    }
    let mut said = first.output;
    if !UPDATED.swap(true, Ordering::SeqCst) {
        eprintln!("apt-get install {package} failed: running apt-get update, then installing again");
        let update = apt(&["update", "-q"]);
        said.push_str(&update.output);
        if !update.ok {
            panic!("apt-get update (for {package}) failed:\n{}", tail(&said));
        }
    }
    let second = apt(&args);
    said.push_str(&second.output);
    assert!(
        second.ok,
        "apt-get install {package} failed twice:\n{}",
        tail(&said)
    );
}

fn count_install(package: &str) {
    let mut counts = INSTALLS.lock().unwrap_or_else(|e| e.into_inner());
    *counts
        .get_or_insert_with(HashMap::new)
        .entry(package.to_string())
        .or_default() += 1;
}

/// What one apt-get said, and whether it succeeded.
struct Apt {
    ok: bool,
    output: String,
}

fn apt(args: &[&str]) -> Apt {
    let timeout = format!("DPkg::Lock::Timeout={DPKG_LOCK_TIMEOUT_S}");
    let out = Command::new("apt-get")
        .args(["-o", &timeout])
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .output();
    match out {
        Ok(out) => Apt {
            ok: out.status.success(),
            output: format!(
                "$ apt-get {}\n{}{}({})\n",
                args.join(" "),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
                out.status
            ),
        },
        Err(e) => Apt {
            ok: false,
            output: format!("$ apt-get {}\ncannot run apt-get: {e}\n", args.join(" ")),
        },
    }
}

/// The last [`TAIL_LINES`] lines of `text`.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
}

/// The file lock the test processes take around their apt-get runs (dpkg's
/// lock covers an install, not `apt-get update`'s lists nor the gap
/// between a failed install and its retry).
struct ProcessLock(std::fs::File);

impl ProcessLock {
    fn take() -> ProcessLock {
        let path = Path::new("/tmp/wink-tests-apt.lock");
        let file = std::fs::File::create(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        file.lock()
            .unwrap_or_else(|e| panic!("lock {}: {e}", path.display()));
        ProcessLock(file)
    }
}

impl Drop for ProcessLock {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

#[cfg(test)]
mod tests;
