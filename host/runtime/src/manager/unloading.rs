//! Unloading plugins (by name, or by the file they came from) and the one
//! spelling of a plugin file's path the manager keys plugins by. Owns only
//! that; loading is the manager's.

use super::PluginManager;
use std::path::{Path, PathBuf};

impl PluginManager {
    /// Unload a plugin by name: its listeners stop, unused informers stop.
    pub async fn unload(&self, name: &str) -> bool {
        let Some(running) = self.plugins.lock().await.remove(name) else {
            return false;
        };
        for r in running.registered {
            self.factory.release(&r.spec, r.listener_id);
        }
        self.options.reports.unload(name);
        self.queues.remove(name);
        tracing::info!(plugin = %name, "plugin unloaded");
        true
    }

    /// Unload the plugin loaded from `path`, if any (and stop waiting for it).
    pub async fn unload_path(&self, path: &Path) -> bool {
        let path = &plugin_path(path);
        self.waiting.stop(path);
        let name = self
            .plugins
            .lock()
            .await
            .iter()
            .find(|(_, r)| &r.path == path)
            .map(|(n, _)| n.clone());
        match name {
            Some(n) => self.unload(&n).await,
            None => false,
        }
    }

    /// Whether a plugin loaded from `path` is in the manager (running,
    /// restarting or quarantined).
    pub async fn has_path(&self, path: &Path) -> bool {
        let path = plugin_path(path);
        self.plugins.lock().await.values().any(|r| r.path == path)
    }
}

/// A plugin file's path as the manager keys it: absolute (without touching
/// the file system), so `plugins/a.wasm` and `/srv/wink/plugins/a.wasm`
/// name one plugin.
pub(super) fn plugin_path(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
