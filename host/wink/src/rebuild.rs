//! `wink dev`'s plugin crates: which it loads ([`examples`]), and its
//! source watcher, which watches plugin crates' sources, rebuilds a
//! changed crate for `wasm32-wasip2` and puts its component where the
//! reload watcher loads it from, so a saved edit reaches the running
//! plugin. A build that fails is shown once (its first errors) and changes
//! nothing: the running version stays. Owns the watching of sources and
//! running `cargo build`; loading is the reload watcher's.

use notify::{RecursiveMode, Watcher};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long sources must be quiet before a build starts (an editor's save
/// is several events).
pub const QUIET: Duration = Duration::from_millis(150);

/// One plugin crate: its name and directory.
#[derive(Debug, Clone)]
pub struct Crate {
    pub name: String,
    pub dir: PathBuf,
}

/// The plugin crates in `dir`: `dir` itself when it is one, else every
/// subdirectory with a `Cargo.toml`.
pub fn crates_in(dir: &Path) -> Vec<Crate> {
    let one = |d: &Path| {
        let manifest = std::fs::read_to_string(d.join("Cargo.toml")).ok()?;
        let name = manifest
            .lines()
            .find_map(|l| l.trim().strip_prefix("name = "))?
            .trim_matches('"')
            .to_string();
        // Absolute: file events name absolute paths.
        Some(Crate {
            name,
            dir: d.canonicalize().ok()?,
        })
    };
    if let Some(c) = one(dir) {
        return vec![c];
    }
    let mut crates: Vec<Crate> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| one(&e.path()))
        .collect();
    crates.sort_by(|a, b| a.name.cmp(&b.name));
    crates
}

/// Build `krate` (release, wasm32-wasip2) and copy its component into
/// `out` as `<crate>.wasm` (renamed into place, so the reload watcher sees
/// one complete file). Returns the first lines of the errors when it fails.
pub fn build(krate: &Crate, out: &Path) -> Result<Duration, String> {
    let started = Instant::now();
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(&krate.dir)
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--message-format=json-render-diagnostics",
            "-p",
            &krate.name,
        ])
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !output.status.success() {
        let errors = String::from_utf8_lossy(&output.stderr);
        let shown: Vec<&str> = errors
            .lines()
            .filter(|l| !l.trim_start().starts_with("Compiling"))
            .take(30)
            .collect();
        return Err(shown.join("\n"));
    }
    let artifact = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| {
            m["reason"] == "compiler-artifact"
                && m["target"]["name"].as_str().map(|n| n.replace('_', "-"))
                    == Some(krate.name.replace('_', "-"))
        })
        .flat_map(|m| m["filenames"].as_array().cloned().unwrap_or_default())
        .filter_map(|f| f.as_str().map(PathBuf::from))
        .find(|f| f.extension().is_some_and(|e| e == "wasm"))
        .ok_or_else(|| format!("{} built no .wasm (crate-type = [\"cdylib\"]?)", krate.name))?;
    let target = out.join(artifact.file_name().unwrap_or_default());
    if artifact.canonicalize().ok() != target.canonicalize().ok() {
        let tmp = out.join(format!(".{}.tmp", krate.name));
        std::fs::copy(&artifact, &tmp).map_err(|e| format!("copy {}: {e}", artifact.display()))?;
        std::fs::rename(&tmp, &target).map_err(|e| format!("install {}: {e}", target.display()))?;
    }
    Ok(started.elapsed())
}

/// With the default plugin directory (the workspace's wasm build), the
/// plugins `wink dev` loads: the crates of `plugins/`, the examples meant
/// for people; the test and benchmark plugins of `tests/plugins/` are built
/// into the same directory and skipped. A directory given with `--plugins`
/// is loaded as it is.
pub fn examples(plugins: &Path, default: &Path) -> Option<BTreeSet<String>> {
    if plugins != default {
        return None;
    }
    let names: BTreeSet<String> = std::fs::read_dir("plugins")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let manifest = std::fs::read_to_string(e.path().join("Cargo.toml")).ok()?;
            let name = manifest
                .lines()
                .find_map(|l| l.trim().strip_prefix("name = "))?
                .trim_matches('"');
            Some(name.replace('-', "_"))
        })
        .collect();
    println!(
        "wink dev: loading the examples of plugins/: {} (--plugins DIR loads a directory as it is)",
        names.iter().cloned().collect::<Vec<_>>().join(", ")
    );
    Some(names)
}

/// A running source watch; dropping it stops watching.
pub struct SourceWatcher {
    _watcher: notify::RecommendedWatcher,
}

/// Watch the sources of `crates` (each one's `Cargo.toml` and `src/`) and
/// rebuild a crate into `out` when they change.
pub fn watch(crates: Vec<Crate>, out: PathBuf) -> anyhow::Result<SourceWatcher> {
    let (tx, rx) = mpsc::channel::<PathBuf>();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event
            && !matches!(event.kind, notify::EventKind::Access(_))
        {
            for path in event.paths {
                let _ = tx.send(path);
            }
        }
    })?;
    // The manifest beside, the sources below: never the build directory
    // (it may be a link into a large shared one).
    for c in &crates {
        watcher.watch(&c.dir, RecursiveMode::NonRecursive)?;
        let src = c.dir.join("src");
        if src.is_dir() {
            watcher.watch(&src, RecursiveMode::Recursive)?;
        }
    }
    std::thread::Builder::new()
        .name("wink-dev-rebuild".into())
        .spawn(move || rebuild_loop(crates, out, rx))?;
    Ok(SourceWatcher { _watcher: watcher })
}

fn rebuild_loop(crates: Vec<Crate>, out: PathBuf, rx: mpsc::Receiver<PathBuf>) {
    let owner = |p: &Path| {
        crates.iter().find(|c| {
            p.starts_with(&c.dir)
                && !p.starts_with(c.dir.join("target"))
                && !p.components().any(|x| x.as_os_str() == ".git")
        })
    };
    let mut last_error: Option<String> = None;
    while let Ok(first) = rx.recv() {
        let mut changed = BTreeSet::new();
        changed.extend(owner(&first).map(|c| c.name.clone()));
        while let Ok(p) = rx.recv_timeout(QUIET) {
            changed.extend(owner(&p).map(|c| c.name.clone()));
        }
        for c in crates.iter().filter(|c| changed.contains(&c.name)) {
            println!("wink dev: {} changed: rebuilding", c.name);
            match build(c, &out) {
                Ok(took) => {
                    last_error = None;
                    println!("wink dev: {} built in {} ms; reloading", c.name, took.as_millis());
                }
                Err(e) if last_error.as_ref() == Some(&e) => {}
                Err(e) => {
                    println!(
                        "wink dev: {} does not build; the running version stays:\n{e}",
                        c.name
                    );
                    last_error = Some(e);
                }
            }
        }
    }
}
