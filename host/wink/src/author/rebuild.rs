//! `wink dev`'s plugin projects: which it loads ([`examples`]), and its
//! source watcher, which watches plugin projects' sources (Rust crates,
//! Python and JavaScript/TypeScript projects; [`project`] tells them apart
//! and builds them), rebuilds a changed project after its sources are
//! quiet ([`QUIET`]) and puts its component where the reload watcher loads
//! it from, so a saved edit reaches the running plugin. A build that fails
//! is shown once (its first errors) and changes nothing: the running
//! version stays. Owns the watching of sources and when to build; how a
//! project builds is [`project`]'s, loading the reload watcher's.

pub mod project;

pub use project::{Project, projects_in};

use notify::Watcher;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// How long sources must be quiet before a build starts (an editor's save
/// is several events).
pub const QUIET: Duration = Duration::from_millis(150);

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
            let manifest = project::read_project_file(&e.path().join("Cargo.toml"))?;
            let name = manifest
                .lines()
                .find_map(|l| l.trim().strip_prefix("name = "))?
                .trim_matches('"');
            // The plugin cargo's `<crate_name>.wasm` is: its stem, `_` read as `-`.
            Some(name.replace('_', "-"))
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

/// Watch the sources of `projects` and rebuild a project into `out` when
/// they change.
pub fn watch(projects: Vec<Project>, out: PathBuf) -> anyhow::Result<SourceWatcher> {
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
    for p in &projects {
        for (dir, mode) in p.watches() {
            watcher.watch(&dir, mode)?;
        }
    }
    std::thread::Builder::new()
        .name("wink-dev-rebuild".into())
        .spawn(move || rebuild_loop(projects, out, rx))?;
    Ok(SourceWatcher { _watcher: watcher })
}

fn rebuild_loop(projects: Vec<Project>, out: PathBuf, rx: mpsc::Receiver<PathBuf>) {
    let owner = |p: &Path| projects.iter().position(|c| c.is_source(p));
    // Each project's last errors, shown once.
    let mut failing: BTreeMap<usize, String> = BTreeMap::new();
    while let Ok(first) = rx.recv() {
        let mut changed = BTreeSet::new();
        changed.extend(owner(&first));
        while let Ok(p) = rx.recv_timeout(QUIET) {
            changed.extend(owner(&p));
        }
        for i in changed {
            let p = &projects[i];
            println!("wink dev: {} changed: rebuilding", p.name);
            match p.build(&out) {
                Ok(took) => {
                    failing.remove(&i);
                    println!("wink dev: {} built in {} ms; reloading", p.name, took.as_millis());
                }
                Err(e) if failing.get(&i) == Some(&e) => println!(
                    "wink dev: {} still does not build (the same errors); the running version stays",
                    p.name
                ),
                Err(e) => {
                    println!(
                        "wink dev: {} does not build; the running version stays:\n{e}",
                        p.name
                    );
                    failing.insert(i, e);
                }
            }
        }
    }
}
