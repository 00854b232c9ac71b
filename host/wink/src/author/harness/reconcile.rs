//! `wink test` for reconcilers: the plugin's work queue played offline.
//! Its watches' events add keys by the same rule as `wink run`
//! ([`enqueue_keys`]), every key of the queue's resource is added once the
//! plugin synced, and after the initial list and each step the queue is
//! drained: each key reconciled, one at a time, its answer recorded as
//! `KEY done`, `KEY requeue-after MS`, `KEY requeue` or `KEY error: WHY`.
//! No time passes: a requeue or an error is retried at once, at most
//! [`MAX_ATTEMPTS`] times in all; a requeue-after is only recorded. The
//! plugin's own `queue.add` adds to the same queue; its `add-after` is
//! recorded as `KEY added after MS`. Owns only that playing; the queue's
//! timing is `wink run`'s.

use crate::informer::{Notification, ObjRef};
use crate::runtime::bindings::reconciler::Action;
use crate::runtime::bindings::types::{Enqueue, Registration};
use crate::runtime::capabilities::KeySink;
use crate::runtime::instance::PluginInstance;
use crate::runtime::manager::enqueue_keys;
use crate::runtime::workqueue::{Full, Limits, MAX_KEYS};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

/// How many times one key is reconciled in a drain before it is given up.
pub const MAX_ATTEMPTS: u32 = 5;

/// The plugin's queue in a case.
pub(super) struct Offline {
    /// apiVersion and kind of the queue's resource.
    resource: (String, String),
    /// How each watch's events feed it, by watch number.
    feeds: Vec<Enqueue>,
    /// Keys waiting, in order, each once.
    keys: Mutex<VecDeque<String>>,
    /// What each reconcile answered, in order.
    pub(super) answers: Mutex<Vec<String>>,
}

impl Offline {
    /// The queue `registration` asks for, if any.
    pub(super) fn of(registration: &Registration) -> Option<Self> {
        let q = registration.queue.as_ref()?;
        Some(Offline {
            resource: (q.resource.api_version.clone(), q.resource.kind.clone()),
            feeds: registration.watches.iter().map(|w| w.enqueue.clone()).collect(),
            keys: Mutex::default(),
            answers: Mutex::default(),
        })
    }

    fn add(&self, key: String) {
        let mut keys = self.keys.lock().unwrap();
        if !keys.contains(&key) {
            keys.push_back(key);
        }
    }

    /// Add the keys an event of watch `watch` concerns.
    pub(super) fn notified(&self, instance: &PluginInstance, watch: u32, n: &Notification) {
        let Some(how) = self.feeds.get(watch as usize) else {
            return;
        };
        let objects: Vec<&ObjRef> = match n {
            Notification::Add { obj, .. } | Notification::Delete { obj, .. } => vec![obj],
            Notification::Update { old, new } => vec![new, old],
            Notification::Synced => Vec::new(),
        };
        let queue = (self.resource.0.as_str(), self.resource.1.as_str());
        for obj in objects {
            for key in futures::executor::block_on(enqueue_keys(how, queue, instance, watch, obj)) {
                self.add(key);
            }
        }
    }

    /// The plugin synced: every key of the queue's resource in its
    /// scope, once.
    pub(super) fn synced(&self, instance: &PluginInstance) {
        let (v, k) = &self.resource;
        let scope = instance.cache_scope().scope();
        if let Some(store) = instance.cache_scope().granted(v, k) {
            for obj in store.list(None, None).iter().filter(|o| scope.admits(o)) {
                self.add(obj.key());
            }
        }
    }

    /// Reconcile until the queue is empty (or the plugin traps).
    ///
    /// The queue's lock is not held during a reconcile: the plugin may add
    /// keys from it.
    pub(super) fn drain(&self, instance: &PluginInstance) {
        let mut attempts: HashMap<String, u32> = HashMap::new();
        loop {
            let Some(key) = self.keys.lock().unwrap().pop_front() else {
                return;
            };
            if instance.is_crashed() {
                return;
            }
            let tries = attempts.entry(key.clone()).or_default();
            *tries += 1;
            let answer = futures::executor::block_on(instance.reconcile(&key));
            let retry = matches!(answer, Ok(Action::Requeue) | Err(_));
            let line = match answer {
                Ok(Action::Done) => format!("{key} done"),
                Ok(Action::RequeueAfter(ms)) => format!("{key} requeue-after {ms}"),
                Ok(Action::Requeue) => format!("{key} requeue"),
                Err(e) => format!("{key} error: {e}"),
            };
            self.answers.lock().unwrap().push(line);
            if retry && *tries < MAX_ATTEMPTS {
                self.add(key);
            }
        }
    }
}

impl KeySink for Offline {
    /// The plugin's own add: refused, as under `wink run`, past the queue's
    /// key cap.
    fn add(&self, key: &str) -> Result<(), String> {
        let full = {
            let keys = self.keys.lock().unwrap();
            keys.len() >= MAX_KEYS && !keys.iter().any(|k| k == key)
        };
        if full {
            return Err(Full(Limits::default()).to_string());
        }
        Offline::add(self, key.to_string());
        Ok(())
    }

    fn add_after(&self, key: &str, delay: Duration) -> Result<(), String> {
        let mut answers = self.answers.lock().unwrap();
        if answers.len() >= MAX_KEYS {
            return Err(Full(Limits::default()).to_string());
        }
        answers.push(format!("{key} added after {}", delay.as_millis()));
        Ok(())
    }
}
