//! Request accounting of the simulated API server: requests received per
//! (verb, resource), open watches per resource, the resourceVersion each
//! watch request asked for (so tests can see where clients resume), and
//! the work the control plane has done ([`ControlWork`]).
//!
//! Owns: counters only. Must not touch: anything it counts.

use serde_json::{Value, json};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

const KEEP_WATCH_RVS: usize = 1000;

#[derive(Debug, Default)]
pub struct Stats {
    requests: Mutex<BTreeMap<(String, String), u64>>,
    watches: Mutex<BTreeMap<String, usize>>,
    watch_rvs: Mutex<BTreeMap<String, VecDeque<String>>>,
    control_rounds: AtomicU64,
    control_visits: AtomicU64,
}

/// The work the control plane has done since the server started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ControlWork {
    /// Rounds run (each works the controllers' queues once; none when idle).
    pub rounds: u64,
    /// Stored objects the controllers read (each a deep copy).
    pub visits: u64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `plural` for core resources, `plural.group` otherwise: the resource key.
fn base(resource: &str) -> &str {
    resource.split('.').next().unwrap_or(resource)
}

impl Stats {
    pub fn count(&self, verb: &str, resource: &str) {
        *lock(&self.requests)
            .entry((verb.to_string(), resource.to_string()))
            .or_default() += 1;
    }

    /// Requests of `verb` on `resource` (plural, optionally `plural.group`).
    pub fn requests(&self, verb: &str, resource: &str) -> u64 {
        lock(&self.requests)
            .iter()
            .filter(|((v, r), _)| v == verb && (r == resource || base(r) == resource))
            .map(|(_, n)| n)
            .sum()
    }

    pub fn watch_requested(&self, resource: &str, rv: &str) {
        let mut m = lock(&self.watch_rvs);
        let q = m.entry(resource.to_string()).or_default();
        if q.len() == KEEP_WATCH_RVS {
            q.pop_front();
        }
        q.push_back(rv.to_string());
    }

    pub fn watch_rvs(&self, resource: &str) -> Vec<String> {
        lock(&self.watch_rvs)
            .iter()
            .filter(|(r, _)| *r == resource || base(r) == resource)
            .flat_map(|(_, q)| q.iter().cloned())
            .collect()
    }

    pub fn watch_opened(&self, resource: &str) {
        *lock(&self.watches).entry(resource.to_string()).or_default() += 1;
    }

    pub fn watch_closed(&self, resource: &str) {
        if let Some(n) = lock(&self.watches).get_mut(resource) {
            *n = n.saturating_sub(1);
        }
    }

    pub fn open_watches(&self, resource: &str) -> usize {
        lock(&self.watches)
            .iter()
            .filter(|(r, _)| *r == resource || base(r) == resource)
            .map(|(_, n)| n)
            .sum()
    }

    pub fn control_worked(&self, rounds: u64, visits: u64) {
        self.control_rounds.store(rounds, Ordering::Relaxed);
        self.control_visits.store(visits, Ordering::Relaxed);
    }

    pub fn control_work(&self) -> ControlWork {
        ControlWork {
            rounds: self.control_rounds.load(Ordering::Relaxed),
            visits: self.control_visits.load(Ordering::Relaxed),
        }
    }

    pub fn to_json(&self) -> Value {
        let requests: BTreeMap<String, u64> = lock(&self.requests)
            .iter()
            .map(|((v, r), n)| (format!("{v} {r}"), *n))
            .collect();
        let c = self.control_work();
        json!({"requests": requests, "openWatches": *lock(&self.watches),
            "control": {"rounds": c.rounds, "visits": c.visits}})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_plural_and_qualified_name() {
        let s = Stats::default();
        s.count("list", "deployments.apps");
        s.count("list", "pods");
        assert_eq!(s.requests("list", "deployments"), 1);
        assert_eq!(s.requests("list", "deployments.apps"), 1);
        s.watch_opened("pods");
        assert_eq!(s.open_watches("pods"), 1);
        s.watch_closed("pods");
        assert_eq!(s.open_watches("pods"), 0);
    }
}
