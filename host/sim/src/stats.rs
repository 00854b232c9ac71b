//! Request accounting of the simulated API server: requests received per
//! (verb, resource), open watches per resource, and the resourceVersion each
//! watch request asked for (so tests can see where clients resume).
//!
//! Owns: counters only. Must not touch: anything it counts.

use serde_json::{Value, json};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

const KEEP_WATCH_RVS: usize = 1000;

#[derive(Debug, Default)]
pub struct Stats {
    requests: Mutex<BTreeMap<(String, String), u64>>,
    watches: Mutex<BTreeMap<String, usize>>,
    watch_rvs: Mutex<BTreeMap<String, VecDeque<String>>>,
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

    pub fn to_json(&self) -> Value {
        let requests: BTreeMap<String, u64> = lock(&self.requests)
            .iter()
            .map(|((v, r), n)| (format!("{v} {r}"), *n))
            .collect();
        json!({"requests": requests, "openWatches": *lock(&self.watches)})
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
