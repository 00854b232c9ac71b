//! The reload watcher: watches the plugin directory with `notify` and turns
//! file events (create, modify, rename, remove) into loads and unloads on the
//! [`PluginManager`], debounced: a file still being written waits until it
//! has been quiet for [`DEBOUNCE`]; one whose last event says it is complete
//! (renamed into place, closed after writing, removed) only [`SETTLE`]. A file that fails to load is
//! reported once per distinct content and error; the running version stays.
//! With a grants file (`--grants`), its directory is watched too: before
//! each batch of loads the manager reads the file again
//! ([`PluginManager::reread_grants`]), and when the grants changed every
//! plugin of the directory is loaded again (a no-op for one loaded and
//! unchanged; one refused before may be allowed now). The grants file's
//! own name and Kubernetes' `..data` swap of a mounted ConfigMap count as
//! its changes. Owns only the watching and debouncing.

use super::manager::PluginManager;
use super::plugin_file;
use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecursiveMode, Watcher};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// How long a file being written must be quiet before it is (re)loaded.
pub const DEBOUNCE: Duration = Duration::from_millis(50);

/// How long to wait after an event that marks a file complete, for a
/// companion change (a config written along with its component).
pub const SETTLE: Duration = Duration::from_millis(5);

/// A running directory watch; dropping it stops watching.
pub struct ReloadWatcher {
    _watcher: notify::RecommendedWatcher,
    _grants_watcher: Option<notify::RecommendedWatcher>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ReloadWatcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Whether an event may mean a changed file. Opening or reading one (as the
/// loader itself does) is no change: reacting to it would reload in a loop.
fn is_change(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

/// Whether an event means the file is complete: moved into place (how
/// builds and editors install files), closed after writing, or removed.
fn is_complete(kind: &EventKind) -> bool {
    use notify::event::{ModifyKind, RenameMode};
    matches!(
        kind,
        EventKind::Access(AccessKind::Close(AccessMode::Write))
            | EventKind::Modify(ModifyKind::Name(RenameMode::To | RenameMode::Both))
            | EventKind::Remove(_)
    )
}

/// Watch `dir` and keep `manager` in step with it.
pub fn watch(dir: &Path, manager: Arc<PluginManager>) -> anyhow::Result<ReloadWatcher> {
    Ok(record(dir)?.apply_to(manager))
}

/// A change the watchers saw.
enum Change {
    /// A plugin file, and whether the event says it is complete.
    Plugin(PathBuf, bool),
    /// The grants file (or its directory's `..data`).
    Grants,
}

/// The plugin directory's changes, recorded from the moment [`record`]
/// returns and applied once [`DirChanges::apply_to`] has the manager. The
/// daemon records before its first scan of the directory, so a file added,
/// changed or removed while that scan loads plugins is not missed.
pub struct DirChanges {
    dir: PathBuf,
    watcher: notify::RecommendedWatcher,
    tx: mpsc::UnboundedSender<Change>,
    rx: mpsc::UnboundedReceiver<Change>,
}

/// Start recording the changes of `dir`.
pub fn record(dir: &Path) -> anyhow::Result<DirChanges> {
    let (tx, rx) = mpsc::unbounded_channel::<Change>();
    let sender = tx.clone();
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| match res {
        Ok(event) if !is_change(&event.kind) => {}
        Ok(event) => {
            for p in event.paths {
                if p.file_name().is_some_and(plugin_file::is_plugin_file_name) {
                    tracing::debug!(path = %p.display(), kind = ?event.kind, "plugin directory event");
                    let complete = is_complete(&event.kind);
                    let _ = sender.send(Change::Plugin(p, complete));
                }
            }
        }
        Err(e) => tracing::warn!("plugin directory watch error: {e}"),
    })?;
    watcher.watch(dir, RecursiveMode::NonRecursive)?;
    Ok(DirChanges {
        dir: dir.to_path_buf(),
        watcher,
        tx,
        rx,
    })
}

/// Whether a file name in the grants file's directory is the grants
/// file's, or the `..data` link Kubernetes swaps to update a mounted
/// ConfigMap (and its `..`-named siblings).
fn is_grants_name(name: &std::ffi::OsStr, grants: &std::ffi::OsStr) -> bool {
    name == grants || name.as_encoded_bytes().starts_with(b"..")
}

/// Watch the directory of the grants file `path`; its changes go to `tx`.
fn watch_grants(
    path: &Path,
    tx: mpsc::UnboundedSender<Change>,
) -> notify::Result<notify::RecommendedWatcher> {
    let name = path.file_name().unwrap_or_default().to_owned();
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| match res {
        Ok(event) if !is_change(&event.kind) => {}
        Ok(event) => {
            if event
                .paths
                .iter()
                .any(|p| p.file_name().is_some_and(|n| is_grants_name(n, &name)))
            {
                let _ = tx.send(Change::Grants);
            }
        }
        Err(e) => tracing::warn!("grants file watch error: {e}"),
    })?;
    watcher.watch(&dir, RecursiveMode::NonRecursive)?;
    Ok(watcher)
}

impl DirChanges {
    /// Apply what was recorded so far, then every change as it comes, to
    /// `manager`, until the returned watcher is dropped.
    pub fn apply_to(self, manager: Arc<PluginManager>) -> ReloadWatcher {
        let DirChanges {
            dir,
            watcher,
            tx,
            mut rx,
        } = self;
        let grants_watcher = manager.grants_file().and_then(|file| {
            watch_grants(&file.path, tx)
                .map_err(|e| {
                    tracing::warn!(
                        "the grants file {} is not watched ({e}): it is read again only before a plugin loads",
                        file.path.display()
                    )
                })
                .ok()
        });
        let task = tokio::spawn(async move {
            let mut last_error: HashMap<PathBuf, String> = HashMap::new();
            loop {
                let Some(first) = rx.recv().await else {
                    return;
                };
                let mut pending = Vec::new();
                let mut complete = true;
                let mut add = |change: Change, complete: &mut bool| {
                    match change {
                        Change::Plugin(p, c) => {
                            pending.push(p);
                            *complete = c;
                        }
                        // An editor's writes come in several events.
                        Change::Grants => *complete = false,
                    }
                };
                add(first, &mut complete);
                // Debounce: gather until the directory is quiet, briefly when
                // the last event said its file is complete.
                loop {
                    let quiet = if complete { SETTLE } else { DEBOUNCE };
                    match tokio::time::timeout(quiet, rx.recv()).await {
                        Ok(Some(change)) => add(change, &mut complete),
                        _ => break,
                    }
                }
                // A component and its config changed together load once.
                let mut components: Vec<PathBuf> =
                    pending.iter().map(|p| plugin_file::component_of(p)).collect();
                // The grants first: what loads below gets what the file says
                // now; when they changed, every plugin is loaded again (a
                // no-op for one loaded and unchanged).
                if manager.reread_grants().await {
                    components.extend(plugin_file::component_files(&dir).unwrap_or_default());
                }
                components.sort();
                components.dedup();
                for wasm in components {
                    // Anything under the name (a FIFO or a directory too) gets
                    // its load error; only a name with nothing under it unloads.
                    let exists = |p: &Path| std::fs::symlink_metadata(p).is_ok();
                    if exists(&wasm) {
                        match manager.load_file(&wasm).await {
                            Ok(()) => {
                                last_error.remove(&wasm);
                            }
                            Err(_) if !exists(&wasm) => {
                                // Removed while being loaded: its removal event follows.
                                last_error.remove(&wasm);
                            }
                            Err(e) => {
                                let msg = format!("{e:#}");
                                if last_error.get(&wasm) != Some(&msg) {
                                    if manager.has_path(&wasm).await {
                                        tracing::error!(
                                            "plugin not reloaded, the running version stays: {msg}"
                                        );
                                    } else {
                                        tracing::error!("plugin not loaded: {msg}");
                                    }
                                    last_error.insert(wasm, msg);
                                }
                            }
                        }
                    } else {
                        last_error.remove(&wasm);
                        manager.unload_path(&wasm).await;
                    }
                }
            }
        });
        ReloadWatcher {
            _watcher: watcher,
            _grants_watcher: grants_watcher,
            task,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, DataChange, ModifyKind, RemoveKind, RenameMode};

    #[test]
    fn reading_a_file_is_not_a_change_writing_renaming_removing_are() {
        let access = |k| EventKind::Access(k);
        assert!(!is_change(&access(AccessKind::Open(AccessMode::Any))));
        assert!(!is_change(&access(AccessKind::Read)));
        assert!(!is_change(&access(AccessKind::Close(AccessMode::Read))));
        assert!(is_change(&access(AccessKind::Close(AccessMode::Write))));
        assert!(is_change(&EventKind::Create(CreateKind::File)));
        assert!(is_change(&EventKind::Modify(ModifyKind::Data(DataChange::Any))));
        assert!(is_change(&EventKind::Modify(ModifyKind::Name(RenameMode::To))));
        assert!(is_change(&EventKind::Remove(RemoveKind::File)));
    }

    #[test]
    fn the_grants_file_and_a_configmaps_data_swap_are_grants_changes() {
        use std::ffi::OsStr;
        let grants = OsStr::new("grants.yaml");
        assert!(is_grants_name(OsStr::new("grants.yaml"), grants));
        assert!(is_grants_name(OsStr::new("..data"), grants));
        assert!(is_grants_name(OsStr::new("..2026_11_25_21_00_00.123"), grants));
        assert!(!is_grants_name(OsStr::new("grants.yaml.swp"), grants));
        assert!(!is_grants_name(OsStr::new("other.yaml"), grants));
    }

    #[test]
    fn a_rename_a_close_after_writing_and_a_removal_mark_a_file_complete_a_write_does_not() {
        assert!(is_complete(&EventKind::Modify(ModifyKind::Name(RenameMode::To))));
        assert!(is_complete(&EventKind::Access(AccessKind::Close(
            AccessMode::Write
        ))));
        assert!(is_complete(&EventKind::Remove(RemoveKind::File)));
        assert!(!is_complete(&EventKind::Modify(ModifyKind::Data(
            DataChange::Any
        ))));
        assert!(!is_complete(&EventKind::Create(CreateKind::File)));
        assert!(!is_complete(&EventKind::Modify(ModifyKind::Name(
            RenameMode::From
        ))));
    }
}
