//! The aggregator: every plugin's current policy results, by namespace and
//! subject. The `report` capability puts results in; the report writer takes
//! snapshots of the namespaces that changed. Owns the replace/forget/sweep
//! rules the WIT `report` interface documents; it never reaches the API
//! server and knows nothing of wasm.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::Notify;

/// What a rule concluded (the report's `result`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    Pass,
    Fail,
    Warn,
    Error,
    Skip,
}

impl Outcome {
    /// As a PolicyReport spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Warn => "warn",
            Outcome::Error => "error",
            Outcome::Skip => "skip",
        }
    }

    /// Every outcome, in the order of a report's `summary`.
    pub const ALL: [Outcome; 5] = [
        Outcome::Pass,
        Outcome::Fail,
        Outcome::Warn,
        Outcome::Error,
        Outcome::Skip,
    ];
}

/// How much a result matters (the report's `severity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Info,
    Low,
    Medium,
    High,
    Critical,
}

impl Severity {
    /// As a PolicyReport spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }
}

/// One rule's result about one object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PolicyResult {
    pub policy: String,
    pub rule: String,
    pub outcome: Outcome,
    pub severity: Option<Severity>,
    pub category: Option<String>,
    pub message: String,
    pub properties: BTreeMap<String, String>,
}

/// The object a result is about, as a report's `resources[]` names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Subject {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    pub uid: String,
}

/// One plugin's results about one subject, and which instance gave them.
#[derive(Debug, Clone)]
struct Entry {
    instance: usize,
    subject: Subject,
    results: Vec<PolicyResult>,
}

/// A namespace's results, or (none) the cluster-scoped subjects'.
pub type Scope = Option<String>;

/// The property naming the team (its namespace) on every result of a team
/// plugin; the host's, whatever the plugin says under the same key.
pub const TEAM_PROPERTY: &str = "wink.dev/team";

#[derive(Default)]
struct Inner {
    /// By scope, then (plugin, subject uid).
    entries: BTreeMap<Scope, HashMap<(Arc<str>, String), Entry>>,
    /// Where each (plugin, uid) is, to forget it without its namespace.
    scope_of: HashMap<(Arc<str>, String), Scope>,
    /// Scopes changed since the writer last took them.
    dirty: BTreeSet<Scope>,
    /// Per plugin: the instance whose initial replay finished last, and when.
    synced: HashMap<Arc<str>, (usize, Instant)>,
    /// Results given in total (for metrics).
    given: u64,
    /// The team of each team plugin, by plugin: its results carry it.
    teams: HashMap<Arc<str>, String>,
}

impl Inner {
    /// Whether a later instance of `plugin` than `instance` has synced, or
    /// has stated results about `key`'s subject.
    fn is_superseded(&self, plugin: &Arc<str>, instance: usize, key: &(Arc<str>, String)) -> bool {
        let synced_later = self
            .synced
            .get(plugin)
            .is_some_and(|(newest, _)| *newest > instance);
        let stated_later = self
            .scope_of
            .get(key)
            .and_then(|scope| self.entries.get(scope)?.get(key))
            .is_some_and(|e| e.instance > instance);
        synced_later || stated_later
    }

    /// Drop the entries `gone` picks, marking their scopes changed.
    fn drop_where(&mut self, gone: impl Fn(&Arc<str>, &Entry) -> bool) {
        for (scope, m) in self.entries.iter_mut() {
            let before = m.len();
            m.retain(|(p, _), e| !gone(p, e));
            if m.len() != before {
                self.dirty.insert(scope.clone());
            }
        }
        let entries = &self.entries;
        self.scope_of
            .retain(|key, scope| entries.get(scope).is_some_and(|m| m.contains_key(key)));
    }
}

/// Every plugin's current results. Cheap to share: one lock, held briefly.
#[derive(Default)]
pub struct Aggregator {
    inner: Mutex<Inner>,
    changed: Notify,
    /// What the report writer did with them (it alone updates these).
    pub stats: super::stats::WriteStats,
}

/// One result in a snapshot, with the plugin that gave it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Held {
    pub subject: Subject,
    pub result: PolicyResult,
}

impl Aggregator {
    /// A new, empty aggregator.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `plugin`'s `instance` states `results` about `subject`: they replace
    /// what it stated before (an empty list clears). A predecessor still
    /// draining its last events (instances are numbered in the order they
    /// start) changes nothing its successor has stated.
    pub fn set(&self, plugin: &Arc<str>, instance: usize, subject: Subject, results: Vec<PolicyResult>) {
        let key = subject.uid.clone();
        self.set_keyed(plugin, instance, key, subject, results);
    }

    /// [`Aggregator::set`] under `key` instead of the subject's uid: for
    /// results about an object that may have no uid yet (an admission
    /// request's). A key that is never a uid keeps them apart from the
    /// plugin's results of its event handlers.
    pub fn set_keyed(
        &self,
        plugin: &Arc<str>,
        instance: usize,
        key: String,
        subject: Subject,
        mut results: Vec<PolicyResult>,
    ) {
        results.sort();
        results.dedup();
        let key = (plugin.clone(), key);
        let scope = subject.namespace.clone();
        let mut inner = self.lock();
        if inner.is_superseded(plugin, instance, &key) {
            return;
        }
        inner.given += results.len() as u64;
        let moved = inner.scope_of.get(&key).filter(|s| **s != scope).cloned();
        if let Some(old) = moved.clone() {
            // A uid never changes namespace; a plugin that says otherwise
            // still gets one entry per uid.
            if let Some(m) = inner.entries.get_mut(&old) {
                m.remove(&key);
            }
            inner.dirty.insert(old);
        }
        let changed = {
            let entries = inner.entries.entry(scope.clone()).or_default();
            match entries.get_mut(&key) {
                Some(e) if e.results == results && e.subject == subject => {
                    e.instance = instance;
                    false
                }
                _ if results.is_empty() => entries.remove(&key).is_some(),
                _ => {
                    entries.insert(
                        key.clone(),
                        Entry {
                            instance,
                            subject,
                            results,
                        },
                    );
                    true
                }
            }
        };
        if inner.entries.get(&scope).is_some_and(|m| m.contains_key(&key)) {
            inner.scope_of.insert(key, scope.clone());
        } else {
            inner.scope_of.remove(&key);
        }
        if changed || moved.is_some() {
            inner.dirty.insert(scope);
            drop(inner);
            self.changed.notify_one();
        }
    }

    /// `plugin` was handed the deletion of the object `uid`: its results
    /// about it go.
    pub fn forget(&self, plugin: &Arc<str>, uid: &str) {
        let key = (plugin.clone(), uid.to_string());
        let mut inner = self.lock();
        let Some(scope) = inner.scope_of.remove(&key) else {
            return;
        };
        if let Some(m) = inner.entries.get_mut(&scope) {
            m.remove(&key);
        }
        inner.dirty.insert(scope);
        drop(inner);
        self.changed.notify_one();
    }

    /// `plugin`'s `instance` was replayed the whole cache: results of its
    /// predecessors that it did not state again go. A predecessor that
    /// finishes after its successor did sweeps nothing.
    pub fn synced(&self, plugin: &Arc<str>, instance: usize) {
        let mut inner = self.lock();
        if inner
            .synced
            .get(plugin)
            .is_some_and(|(newest, _)| *newest > instance)
        {
            return;
        }
        inner.drop_where(|p, e| p == plugin && e.instance != instance);
        inner.synced.insert(plugin.clone(), (instance, Instant::now()));
        drop(inner);
        self.changed.notify_one();
    }

    /// `plugin` was unloaded: every result it gave goes.
    pub fn unload(&self, plugin: &str) {
        let mut inner = self.lock();
        inner.drop_where(|p, _| &**p == plugin);
        inner.synced.remove(plugin);
        drop(inner);
        self.changed.notify_one();
    }

    /// When `plugin`'s instance `instance` finished its replay, if it did.
    pub fn synced_at(&self, plugin: &str, instance: usize) -> Option<Instant> {
        let inner = self.lock();
        inner
            .synced
            .get(plugin)
            .filter(|(i, _)| *i == instance)
            .map(|(_, at)| *at)
    }

    /// Wait until something changed (or was already pending).
    pub async fn changed(&self) {
        self.changed.notified().await
    }

    /// The scopes changed since the last call, emptied.
    pub fn take_dirty(&self) -> BTreeSet<Scope> {
        std::mem::take(&mut self.lock().dirty)
    }

    /// Whether any scope changed since the writer last took them.
    pub fn has_dirty(&self) -> bool {
        !self.lock().dirty.is_empty()
    }

    /// Mark `scopes` as changed again (a write that failed is retried).
    pub fn mark_dirty(&self, scopes: impl IntoIterator<Item = Scope>) {
        self.lock().dirty.extend(scopes);
    }

    /// Every scope that holds results.
    pub fn scopes(&self) -> BTreeSet<Scope> {
        let inner = self.lock();
        inner
            .entries
            .iter()
            .filter(|(_, m)| !m.is_empty())
            .map(|(s, _)| s.clone())
            .collect()
    }

    /// Say that `plugin` is the team `team`'s (its namespace; none: the
    /// operator's): its results carry the team ([`TEAM_PROPERTY`]), those
    /// held now included.
    pub fn set_team(&self, plugin: &str, team: Option<&str>) {
        let mut inner = self.lock();
        let changed = match team {
            Some(t) => inner.teams.insert(plugin.into(), t.to_string()).as_deref() != Some(t),
            None => inner.teams.remove(plugin).is_some(),
        };
        if !changed {
            return;
        }
        let holding: Vec<Scope> = inner
            .entries
            .iter()
            .filter(|(_, m)| m.keys().any(|(p, _)| &**p == plugin))
            .map(|(s, _)| s.clone())
            .collect();
        inner.dirty.extend(holding);
        drop(inner);
        self.changed.notify_one();
    }

    /// The team `plugin` is, when it is a team plugin.
    pub fn team(&self, plugin: &str) -> Option<String> {
        self.lock().teams.get(plugin).cloned()
    }

    /// The results held for `scope`, sorted (subject, then result); a team
    /// plugin's carry its team.
    pub fn snapshot(&self, scope: &Scope) -> Vec<Held> {
        let inner = self.lock();
        let mut held: Vec<Held> = inner
            .entries
            .get(scope)
            .into_iter()
            .flat_map(|m| m.iter())
            .flat_map(|((plugin, _), e)| {
                let team = inner.teams.get(plugin);
                e.results.iter().map(move |r| {
                    let mut result = r.clone();
                    if let Some(t) = team {
                        result.properties.insert(TEAM_PROPERTY.to_string(), t.clone());
                    }
                    Held {
                        subject: e.subject.clone(),
                        result,
                    }
                })
            })
            .collect();
        held.sort();
        held
    }

    /// (subjects, results) held in total, and results given since start.
    pub fn counts(&self) -> (usize, usize, u64) {
        let inner = self.lock();
        let subjects = inner.entries.values().map(HashMap::len).sum();
        let results = inner
            .entries
            .values()
            .flat_map(|m| m.values())
            .map(|e| e.results.len())
            .sum();
        (subjects, results, inner.given)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject(ns: &str, name: &str) -> Subject {
        Subject {
            api_version: "v1".into(),
            kind: "Pod".into(),
            namespace: Some(ns.into()),
            name: name.into(),
            uid: format!("uid-{ns}-{name}"),
        }
    }

    fn result(rule: &str, outcome: Outcome) -> PolicyResult {
        PolicyResult {
            policy: "p".into(),
            rule: rule.into(),
            outcome,
            severity: None,
            category: None,
            message: String::new(),
            properties: BTreeMap::new(),
        }
    }

    #[test]
    fn results_replace_and_only_changes_mark_the_namespace() {
        let a = Aggregator::new();
        let p: Arc<str> = "p".into();
        a.set(&p, 1, subject("a", "x"), vec![result("r", Outcome::Fail)]);
        assert_eq!(a.take_dirty(), BTreeSet::from([Some("a".to_string())]));
        a.set(&p, 1, subject("a", "x"), vec![result("r", Outcome::Fail)]);
        assert!(a.take_dirty().is_empty(), "the same content is no change");
        a.set(&p, 1, subject("a", "x"), vec![result("r", Outcome::Pass)]);
        assert_eq!(a.snapshot(&Some("a".into()))[0].result.outcome, Outcome::Pass);
        assert_eq!(a.take_dirty().len(), 1);
        a.set(&p, 1, subject("a", "x"), vec![]);
        assert!(a.snapshot(&Some("a".into())).is_empty(), "an empty list clears");
    }

    #[test]
    fn a_team_plugins_results_carry_its_team_over_what_it_says() {
        let a = Aggregator::new();
        let (team, other): (Arc<str>, Arc<str>) = ("probe--team-a".into(), "p".into());
        let mut forged = result("a", Outcome::Fail);
        forged.properties.insert(TEAM_PROPERTY.into(), "team-b".into());
        a.set(&team, 1, subject("team-a", "x"), vec![forged]);
        a.set(
            &other,
            1,
            subject("team-a", "x"),
            vec![result("b", Outcome::Pass)],
        );
        a.take_dirty();
        a.set_team("probe--team-a", Some("team-a"));
        assert_eq!(
            a.take_dirty(),
            BTreeSet::from([Some("team-a".to_string())]),
            "rewritten"
        );
        assert_eq!(a.team("probe--team-a").as_deref(), Some("team-a"));
        assert_eq!(a.team("p"), None);
        let held = a.snapshot(&Some("team-a".into()));
        let teams: Vec<Option<&str>> = held
            .iter()
            .map(|h| h.result.properties.get(TEAM_PROPERTY).map(String::as_str))
            .collect();
        assert_eq!(teams, [Some("team-a"), None], "{held:?}");
        a.set_team("probe--team-a", Some("team-a"));
        assert!(a.take_dirty().is_empty(), "the same team is no change");
        a.set_team("probe--team-a", None);
        let held = a.snapshot(&Some("team-a".into()));
        assert_eq!(
            held[0].result.properties.get(TEAM_PROPERTY).map(String::as_str),
            Some("team-b"),
            "the plugin's own, once not a team's"
        );
    }

    #[test]
    fn a_predecessor_draining_after_its_successor_changes_nothing() {
        let a = Aggregator::new();
        let p: Arc<str> = "p".into();
        // Instance 1 reported x; its successor 2 restates x and syncs.
        a.set(&p, 1, subject("a", "x"), vec![result("r", Outcome::Fail)]);
        a.set(&p, 2, subject("a", "x"), vec![result("r", Outcome::Fail)]);
        a.set(&p, 2, subject("a", "y"), vec![result("r", Outcome::Pass)]);
        // Instance 1, draining, states x again and changes y, then syncs.
        a.set(&p, 1, subject("a", "x"), vec![result("r", Outcome::Fail)]);
        a.set(&p, 1, subject("a", "y"), vec![result("r", Outcome::Fail)]);
        a.synced(&p, 2);
        a.synced(&p, 1);
        let left = a.snapshot(&Some("a".into()));
        assert_eq!(left.len(), 2, "nothing of the successor's is swept: {left:?}");
        assert!(
            left.iter().any(|r| r.result.outcome == Outcome::Pass),
            "y is the successor's"
        );
        assert!(a.synced_at("p", 2).is_some());
    }

    #[test]
    fn a_deletion_forgets_and_a_synced_successor_sweeps_the_rest() {
        let a = Aggregator::new();
        let p: Arc<str> = "p".into();
        let q: Arc<str> = "q".into();
        a.set(&p, 1, subject("a", "x"), vec![result("r", Outcome::Fail)]);
        a.set(&p, 1, subject("a", "y"), vec![result("r", Outcome::Fail)]);
        a.set(&q, 7, subject("a", "y"), vec![result("s", Outcome::Pass)]);
        a.forget(&p, "uid-a-x");
        assert_eq!(a.snapshot(&Some("a".into())).len(), 2);
        // Instance 2 restates nothing about y: after its replay, p's y goes,
        // q's stays.
        a.set(&p, 2, subject("b", "z"), vec![result("r", Outcome::Pass)]);
        a.synced(&p, 2);
        let left = a.snapshot(&Some("a".into()));
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].result.rule, "s");
        assert!(a.synced_at("p", 2).is_some() && a.synced_at("p", 1).is_none());
        a.unload("q");
        assert!(a.snapshot(&Some("a".into())).is_empty());
        assert_eq!(a.counts().0, 1);
    }
}
