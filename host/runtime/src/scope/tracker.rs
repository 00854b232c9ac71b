//! A plugin's view of one watch under a scope: which objects it has been
//! told of, so that an object entering the scope is an add and one leaving
//! it a delete, as client-go delivers for a watch's selector. Every
//! notification goes through [`Tracker::map`] on its way to the guest (in
//! the listener's order); a change of the scope itself (a namespace
//! relabelled, a grant changed) is re-decided by queueing the objects it may
//! move as markers ([`Tracker::rescope`]) behind what is queued.
//!
//! With the operator's exceptions ([`Excepting`]), an object an exception
//! excepts is kept from the plugin as one outside the scope is.
//!
//! Owns the set of keys delivered; it decides nothing about the scope
//! ([`super::Scope`] does) or the exceptions ([`Excepting`] does).

use super::excepting::Excepting;
use super::{Scope, ScopeCell};
use std::collections::HashSet;
use std::sync::Mutex;
use wink_informer::{Notification, ObjRef};

/// What one watch of a scoped plugin has delivered.
#[derive(Default)]
pub struct Tracker {
    scope: ScopeCell,
    /// Keys of the objects the plugin was told of and not told are gone.
    known: Mutex<HashSet<String>>,
    /// Keys queued to be decided again (their marker is an update of an
    /// object to itself, delivered only when it moves the object).
    rescoping: Mutex<HashSet<String>>,
    /// The operator's exceptions, when they are honoured.
    excepting: Option<Excepting>,
}

impl Tracker {
    /// A tracker deciding with the plugin's `scope`.
    pub fn new(scope: ScopeCell) -> Self {
        Tracker {
            scope,
            ..Tracker::default()
        }
    }

    /// Keep what `excepting` excepts from the plugin too.
    pub fn with_exceptions(mut self, excepting: Excepting) -> Self {
        self.excepting = Some(excepting);
        self
    }

    /// Whether a queued update from `old` to `new` may move the object in
    /// or out of what the plugin sees (it must reach [`Tracker::map`]
    /// whatever filters the updates).
    pub fn moves(&self, old: &ObjRef, new: &ObjRef) -> bool {
        let scope = self.scope.get();
        let shown = |o: &ObjRef| {
            scope.as_ref().is_none_or(|s| s.admits(o))
                && !self.excepting.as_ref().is_some_and(|e| e.excepts(o))
        };
        (scope.is_some() || self.excepting.is_some()) && shown(old) != shown(new)
    }

    /// Whether an exception excepts `obj` now (nothing else done).
    pub fn excepts(&self, obj: &ObjRef) -> bool {
        self.excepting.as_ref().is_some_and(|e| e.excepts(obj))
    }

    /// Whether the plugin is to see `obj` (in scope, not excepted); a
    /// decision made on delivery, which sets or takes back its `skip`.
    fn shows(&self, scope: Option<&Scope>, obj: &ObjRef) -> bool {
        let in_scope = scope.is_none_or(|s| s.admits(obj));
        match &self.excepting {
            Some(e) if in_scope => !e.decide(obj),
            Some(e) => {
                e.unskip(obj);
                false
            }
            None => in_scope,
        }
    }

    /// The markers that re-decide `objects`: queue them on the listener.
    pub fn rescope(&self, objects: Vec<ObjRef>) -> Vec<Notification> {
        let mut rescoping = self.rescoping.lock().unwrap();
        objects
            .into_iter()
            .map(|o| {
                rescoping.insert(o.key());
                Notification::Update {
                    old: o.clone(),
                    new: o,
                }
            })
            .collect()
    }

    /// What the plugin is told of `n`: `n`, an add or delete in its place,
    /// or nothing.
    pub fn map(&self, n: Notification) -> Option<Notification> {
        let scope = self.scope.get();
        if scope.is_none() && self.excepting.is_none() {
            return Some(n);
        }
        let scope = scope.as_deref();
        let mut known = self.known.lock().unwrap();
        match n {
            Notification::Add { ref obj, .. } => {
                if self.shows(scope, obj) {
                    known.insert(obj.key());
                    Some(n)
                } else {
                    known.remove(&obj.key());
                    None
                }
            }
            Notification::Update { ref old, ref new } => {
                let key = new.key();
                let marker = std::sync::Arc::ptr_eq(old, new) && self.rescoping.lock().unwrap().remove(&key);
                match (known.contains(&key), self.shows(scope, new)) {
                    (true, true) if marker => None,
                    (true, true) => Some(n),
                    (true, false) => {
                        known.remove(&key);
                        Some(Notification::Delete {
                            obj: new.clone(),
                            final_state_unknown: false,
                        })
                    }
                    (false, true) => {
                        known.insert(key);
                        Some(Notification::Add {
                            obj: new.clone(),
                            in_initial_list: false,
                        })
                    }
                    (false, false) => None,
                }
            }
            Notification::Delete { ref obj, .. } => {
                if let Some(e) = &self.excepting {
                    e.unskip(obj);
                }
                known.remove(&obj.key()).then_some(n)
            }
            Notification::Synced => Some(n),
        }
    }

    /// How many objects the plugin knows of through this watch.
    pub fn known(&self) -> usize {
        self.known.lock().unwrap().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scope::{Scope, Selection};

    fn pod(rv: u64, name: &str, app: &str) -> ObjRef {
        crate::scope::tests::object("v1", "Pod", Some("ns"), name, rv, &[("app", app)])
    }

    fn kind(n: &Option<Notification>) -> &'static str {
        match n {
            Some(Notification::Add { .. }) => "add",
            Some(Notification::Update { .. }) => "update",
            Some(Notification::Delete { .. }) => "delete",
            Some(Notification::Synced) => "synced",
            None => "-",
        }
    }

    #[test]
    fn leaving_the_scope_is_a_delete_and_entering_an_add() {
        let cell = ScopeCell::default();
        let web: Selection = serde_norway::from_str("{objectSelector: {matchLabels: {app: web}}}").unwrap();
        cell.set(Scope::new(Some(&web), None));
        let t = Tracker::new(cell.clone());
        let (a, b, c) = (pod(1, "p", "db"), pod(2, "p", "web"), pod(3, "p", "db"));
        let add = |o: &ObjRef| Notification::Add {
            obj: o.clone(),
            in_initial_list: true,
        };
        let update = |o: &ObjRef, n: &ObjRef| Notification::Update {
            old: o.clone(),
            new: n.clone(),
        };
        assert_eq!(kind(&t.map(add(&a))), "-");
        assert!(t.moves(&a, &b));
        assert_eq!(kind(&t.map(update(&a, &b))), "add");
        assert_eq!(kind(&t.map(update(&b, &b))), "update", "a resync stays one");
        assert_eq!(kind(&t.map(update(&b, &c))), "delete");
        assert_eq!(kind(&t.map(update(&c, &c))), "-");
        let gone = Notification::Delete {
            obj: c.clone(),
            final_state_unknown: false,
        };
        assert_eq!(
            kind(&t.map(gone)),
            "-",
            "a delete of what it never saw is not told"
        );
        assert_eq!(t.known(), 0);
        // The scope changes: markers move only what changed side.
        assert_eq!(kind(&t.map(update(&b, &b))), "add");
        let other = pod(4, "q", "db");
        assert_eq!(kind(&t.map(add(&other))), "-");
        let everything: Selection = serde_norway::from_str("{namespaces: [ns]}").unwrap();
        cell.set(Scope::new(Some(&everything), None));
        let markers = t.rescope(vec![b.clone(), other.clone()]);
        let told: Vec<_> = markers.into_iter().map(|m| kind(&t.map(m))).collect();
        assert_eq!(told, ["-", "add"]);
        // Without a scope everything passes as it is.
        cell.set(None);
        assert_eq!(kind(&t.map(add(&a))), "add");
    }

    #[test]
    fn an_excepted_object_is_kept_from_the_plugin_and_holds_a_skip() {
        use crate::exceptions::{Exception, ExceptionSet};
        let set = ExceptionSet::default();
        let reports = crate::capabilities::report::ReportScope::default();
        let aggregator = crate::reports::Aggregator::new();
        reports.connect(aggregator.clone());
        let excepting = super::Excepting::new(set.clone(), "p".into(), 1, reports);
        let t = Tracker::new(ScopeCell::default()).with_exceptions(excepting);
        let (db, web) = (pod(1, "p", "db"), pod(2, "p", "web"));
        let add = |o: &ObjRef| Notification::Add {
            obj: o.clone(),
            in_initial_list: true,
        };
        let update = |o: &ObjRef, n: &ObjRef| Notification::Update {
            old: o.clone(),
            new: n.clone(),
        };
        assert_eq!(kind(&t.map(add(&db))), "add", "no exception: delivered");
        let e = Exception::from_object(&serde_json::json!({
            "metadata": {"namespace": "ops", "name": "web"},
            "spec": {"plugins": [{"name": "p"}], "match": {"objectSelector": {"matchLabels": {"app": "web"}}},
                     "reason": "r"}}))
        .unwrap();
        set.put(e);
        assert!(t.moves(&db, &web));
        assert_eq!(
            kind(&t.map(update(&db, &web))),
            "delete",
            "excepted: gone for the plugin"
        );
        let skipped = aggregator.snapshot(&Some("ns".to_string()));
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0].result.outcome, crate::reports::Outcome::Skip);
        assert_eq!(skipped[0].result.message, "excepted by WinkException ops/web: r");
        assert_eq!(kind(&t.map(update(&web, &db))), "add", "no longer excepted");
        assert!(aggregator.snapshot(&Some("ns".to_string())).is_empty());
        set.remove("ops", "web");
        assert_eq!(
            kind(&t.map(update(&db, &web))),
            "update",
            "the exception gone: delivered"
        );
    }
}
