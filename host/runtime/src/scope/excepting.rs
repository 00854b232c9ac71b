//! The operator's exceptions on one tracked watch of a plugin: which
//! objects a [`super::Tracker`] keeps from the plugin because a
//! WinkException excepts them ([`crate::exceptions`]), and the `skip`
//! result each of them holds in the reports instead of the plugin's, naming
//! the exception. The result is the host's, kept apart from the plugin's
//! own (under its own key), set when the object is decided excepted and
//! taken back when it is not any more or is deleted.
//!
//! Owns the set of objects given a `skip`; the decision is the exception
//! set's, the watch's bookkeeping the tracker's.

use crate::capabilities::report::ReportScope;
use crate::exceptions::ExceptionSet;
use crate::reports::{Outcome, PolicyResult, Subject};
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;
use wink_informer::ObjRef;

/// The rule a `skip` result names.
pub const RULE: &str = "wink-exception";

/// Exceptions honoured by one watch of one instance of a plugin.
pub struct Excepting {
    set: ExceptionSet,
    plugin: Arc<str>,
    instance: usize,
    reports: ReportScope,
    /// Uids of the objects given a `skip` result.
    skipped: Mutex<HashSet<String>>,
}

/// The report key of an object's `skip` (never a uid, so never the plugin's).
fn key(uid: &str) -> String {
    format!("wink-exception/{uid}")
}

impl Excepting {
    /// For `plugin`'s instance `instance`, its results going to `reports`.
    pub fn new(set: ExceptionSet, plugin: Arc<str>, instance: usize, reports: ReportScope) -> Self {
        Excepting {
            set,
            plugin,
            instance,
            reports,
            skipped: Mutex::default(),
        }
    }

    /// Whether an exception excepts `obj` now (nothing else done).
    pub fn excepts(&self, obj: &ObjRef) -> bool {
        self.set
            .excepting_obj(&self.plugin, obj, SystemTime::now())
            .is_some()
    }

    /// Decide `obj` (in the plugin's scope): whether it is excepted, its
    /// `skip` result set or taken back to match.
    pub fn decide(&self, obj: &ObjRef) -> bool {
        match self.set.excepting_obj(&self.plugin, obj, SystemTime::now()) {
            Some(e) => {
                self.skip(obj, e.key(), e.message());
                true
            }
            None => {
                self.unskip(obj);
                false
            }
        }
    }

    fn skip(&self, obj: &ObjRef, exception: String, message: String) {
        let Some(aggregator) = self.reports.get() else {
            return;
        };
        if obj.uid().is_empty() {
            return;
        }
        let subject = Subject {
            api_version: obj.api_version().to_string(),
            kind: obj.kind().to_string(),
            namespace: obj.namespace().map(str::to_string),
            name: obj.name().to_string(),
            uid: obj.uid().to_string(),
        };
        let result = PolicyResult {
            policy: self.plugin.to_string(),
            rule: RULE.to_string(),
            outcome: Outcome::Skip,
            severity: None,
            category: None,
            message,
            properties: BTreeMap::from([("exception".to_string(), exception)]),
        };
        aggregator.set_keyed(&self.plugin, self.instance, key(obj.uid()), subject, vec![result]);
        self.skipped.lock().unwrap().insert(obj.uid().to_string());
    }

    /// Take `obj`'s `skip` back, if it has one (it is no longer excepted,
    /// out of scope, or deleted).
    pub fn unskip(&self, obj: &ObjRef) {
        if !self.skipped.lock().unwrap().remove(obj.uid()) {
            return;
        }
        if let Some(aggregator) = self.reports.get() {
            aggregator.forget(&self.plugin, &key(obj.uid()));
        }
    }
}
