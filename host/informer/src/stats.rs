//! What an informer counts for its operators: watch events by type, watch
//! errors (each followed by a restart with backoff), and when its last
//! list completed. Counters only; the informer updates them, metrics read
//! them.

use std::sync::atomic::{AtomicU64, Ordering};

/// One informer's counters.
#[derive(Debug, Default)]
pub struct InformerStats {
    added: AtomicU64,
    modified: AtomicU64,
    deleted: AtomicU64,
    watch_errors: AtomicU64,
    /// Unix seconds of the last completed list (0: none yet).
    last_sync: AtomicU64,
}

/// A watch event's type, as the API server names it.
#[derive(Debug, Clone, Copy)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl InformerStats {
    pub(super) fn event(&self, ty: EventType) {
        let counter = match ty {
            EventType::Added => &self.added,
            EventType::Modified => &self.modified,
            EventType::Deleted => &self.deleted,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn watch_error(&self) {
        self.watch_errors.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn synced_now(&self) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.last_sync.store(now, Ordering::Relaxed);
    }

    /// Watch events applied, by type: (added, modified, deleted).
    pub fn events(&self) -> (u64, u64, u64) {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        (load(&self.added), load(&self.modified), load(&self.deleted))
    }

    /// Watch errors (each followed by a restart of the watch, with backoff).
    pub fn watch_errors(&self) -> u64 {
        self.watch_errors.load(Ordering::Relaxed)
    }

    /// Unix seconds of the last completed list; 0 before the first.
    pub fn last_sync(&self) -> u64 {
        self.last_sync.load(Ordering::Relaxed)
    }
}
