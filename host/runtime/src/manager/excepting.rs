//! The operator's exceptions followed: when the set of WinkExceptions
//! changes, or one of them expires, every tracked watch of every plugin has
//! its objects decided again (the markers of [`super::scoping::Rescope`]),
//! so an object an exception comes to except is a delete for the plugin and
//! one it stops excepting an add, within [`EVERY`] and with no event of
//! the object's own.

use super::PluginManager;
use std::sync::Weak;
use std::time::{Duration, SystemTime};

/// How often the exceptions are looked at.
pub const EVERY: Duration = Duration::from_secs(1);

impl PluginManager {
    /// Until the manager goes: re-decide what the plugins see when the
    /// exceptions changed or one expired.
    pub(super) async fn follow_exceptions(me: Weak<PluginManager>) {
        let mut seen = None;
        loop {
            tokio::time::sleep(EVERY).await;
            let Some(manager) = me.upgrade() else {
                return;
            };
            let set = manager.exceptions();
            let now = SystemTime::now();
            let expired = set.all().iter().filter(|e| e.expired(now)).count();
            let state = Some((set.changes(), expired));
            if state == seen {
                continue;
            }
            let first = seen.is_none();
            seen = state;
            // The first look finds what the loads decided with.
            if !first || set.changes() > 0 {
                manager.rescope_all().await;
            }
        }
    }

    /// Re-decide every tracked watch's objects.
    async fn rescope_all(&self) {
        let plugins = self.plugins.lock().await;
        for p in plugins.values() {
            for r in p.registered.iter().filter_map(|r| r.rescope.as_ref()) {
                r.queue(None);
            }
        }
    }
}
