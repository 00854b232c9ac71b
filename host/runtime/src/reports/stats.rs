//! What the report writer did: its requests by outcome, bytes, the largest
//! report, and the writes one report per subject would have needed (for
//! comparison). Counters only; the writer alone updates them.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// What the writer did, for metrics and benchmarks.
#[derive(Default)]
pub struct WriteStats {
    /// Requests by (operation, outcome).
    pub(super) requests: Mutex<BTreeMap<(&'static str, String), u64>>,
    /// The largest report written, in bytes.
    pub(super) largest: AtomicUsize,
    /// Flushes that wrote something.
    pub(super) flushes: AtomicU64,
    /// The writes one report per subject would have needed for the same
    /// changes (the layout the writer does not use, counted for comparison).
    pub(super) per_subject: AtomicU64,
    /// Bytes of report bodies written, and what one report per subject
    /// would have written for the same changes.
    pub(super) bytes: AtomicU64,
    pub(super) per_subject_bytes: AtomicU64,
    pub(super) phase: Mutex<&'static str>,
}

impl WriteStats {
    pub(super) fn count(&self, op: &'static str, outcome: &str) {
        *self
            .requests
            .lock()
            .unwrap()
            .entry((op, outcome.to_string()))
            .or_default() += 1;
    }

    /// Requests by (operation, outcome: HTTP code or `unavailable`).
    pub fn requests(&self) -> Vec<(&'static str, String, u64)> {
        let m = self.requests.lock().unwrap();
        m.iter().map(|((op, o), n)| (*op, o.clone(), *n)).collect()
    }

    /// Successful writes (creates, patches and deletes).
    pub fn writes(&self) -> u64 {
        let m = self.requests.lock().unwrap();
        m.iter()
            .filter(|((op, o), _)| *op != "list" && *op != "get" && o.starts_with('2'))
            .map(|(_, n)| n)
            .sum()
    }

    /// The largest report written so far, in bytes.
    pub fn largest(&self) -> usize {
        self.largest.load(Ordering::Relaxed)
    }

    /// Writes one report per subject would have needed.
    pub fn per_subject_writes(&self) -> u64 {
        self.per_subject.load(Ordering::Relaxed)
    }

    /// Bytes of reports written, and what one report per subject would
    /// have written.
    pub fn bytes(&self) -> (u64, u64) {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        (load(&self.bytes), load(&self.per_subject_bytes))
    }

    /// The writer's phase.
    pub fn phase(&self) -> &'static str {
        *self.phase.lock().unwrap()
    }
}
