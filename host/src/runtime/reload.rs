//! The reload watcher: watches the plugin directory with `notify` and turns
//! file events (create, modify, rename, remove) into loads and unloads on the
//! [`PluginManager`], debounced per file. A file that fails to load is
//! reported once per distinct content and error; the running version stays.
//! Owns only the watching and debouncing.

use super::manager::PluginManager;
use notify::{RecursiveMode, Watcher};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// How long a file must be quiet before it is (re)loaded.
pub const DEBOUNCE: Duration = Duration::from_millis(50);

/// A running directory watch; dropping it stops watching.
pub struct ReloadWatcher {
    _watcher: notify::RecommendedWatcher,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ReloadWatcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn is_plugin_file(p: &Path) -> bool {
    p.extension().is_some_and(|x| x == "wasm" || x == "json")
}

/// Watch `dir` and keep `manager` in step with it.
pub fn watch(dir: &Path, manager: Arc<PluginManager>) -> anyhow::Result<ReloadWatcher> {
    let (tx, mut rx) = mpsc::unbounded_channel::<PathBuf>();
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| match res {
        Ok(event) => {
            for p in event.paths {
                if is_plugin_file(&p) {
                    let _ = tx.send(p);
                }
            }
        }
        Err(e) => tracing::warn!("plugin directory watch error: {e}"),
    })?;
    watcher.watch(dir, RecursiveMode::NonRecursive)?;
    let task = tokio::spawn(async move {
        let mut last_error: HashMap<PathBuf, String> = HashMap::new();
        loop {
            let Some(first) = rx.recv().await else { return };
            let mut pending = vec![first];
            // Debounce: gather until the directory is quiet.
            while let Ok(Some(p)) = tokio::time::timeout(DEBOUNCE, rx.recv()).await {
                pending.push(p);
            }
            // A component and its config changed together load once.
            let mut components: Vec<PathBuf> = pending.iter().map(|p| p.with_extension("wasm")).collect();
            components.sort();
            components.dedup();
            for wasm in components {
                if wasm.is_file() {
                    match manager.load_file(&wasm).await {
                        Ok(()) => {
                            last_error.remove(&wasm);
                        }
                        Err(e) => {
                            let msg = format!("{e:#}");
                            if last_error.get(&wasm) != Some(&msg) {
                                tracing::error!("plugin not reloaded, the running version stays: {msg}");
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
    Ok(ReloadWatcher {
        _watcher: watcher,
        task,
    })
}
