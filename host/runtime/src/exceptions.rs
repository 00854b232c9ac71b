//! Exceptions the operator makes to a plugin's policy: `WinkException`s
//! (`wink.dev/v1alpha1`, namespaced), as Kyverno's PolicyException. One
//! names plugins (and, optionally, which of their webhooks: `validate`,
//! `mutate`) and the objects it excepts (namespaces, names with `*` and `?`
//! wildcards, kinds, an object selector: every field given must hold), an
//! optional expiry after which it stops applying, and a required reason.
//!
//! Owns parsing one exception (strict, every list capped) and the set in
//! force ([`ExceptionSet`]): which unexpired exception excepts an object
//! from a plugin, the first by namespace and name. Expiry is judged at each
//! question, against the clock the caller passes; the set reads no cluster
//! state.

use crate::scope::selection::{MAX_ITEMS, MAX_TEXT, Selection, Selector};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

/// The most exceptions held; past it, new ones are refused (said by the caller).
pub const MAX_EXCEPTIONS: usize = 4096;
/// The longest reason, in bytes.
pub const MAX_REASON: usize = 1024;
/// The admission doors a plugin's webhooks are named by.
pub const WEBHOOKS: [&str; 2] = ["validate", "mutate"];

/// One plugin an exception names, and optionally which of its webhooks.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginRef {
    pub name: String,
    /// `validate`, `mutate`: only at those doors (admission alone); none:
    /// everywhere the plugin meets the object.
    #[serde(default)]
    pub webhooks: Option<Vec<String>>,
}

/// The objects an exception excepts: every field given must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Targets {
    pub namespaces: Option<Vec<String>>,
    /// Object names, `*` any run of characters and `?` one.
    pub names: Option<Vec<String>>,
    /// `Kind` or `apiVersion/Kind`.
    pub kinds: Option<Vec<String>>,
    pub object_selector: Option<Selector>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Spec {
    plugins: Vec<PluginRef>,
    #[serde(rename = "match")]
    targets: Targets,
    #[serde(default)]
    expires: Option<String>,
    reason: String,
}

/// One WinkException.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exception {
    pub namespace: String,
    pub name: String,
    pub plugins: Vec<PluginRef>,
    pub targets: Targets,
    pub expires: Option<SystemTime>,
    pub reason: String,
}

/// An object as an exception is asked about.
pub struct Target<'a, L: Fn(&str) -> Option<&'a str>> {
    pub api_version: &'a str,
    pub kind: &'a str,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    pub labels: L,
}

/// A cached object as a target.
pub fn target_of<'a>(obj: &'a wink_informer::ObjRef) -> Target<'a, impl Fn(&str) -> Option<&'a str> + 'a> {
    Target {
        api_version: obj.api_version(),
        kind: obj.kind(),
        namespace: obj.namespace(),
        name: obj.name(),
        labels: |k: &str| obj.label(k),
    }
}

impl Exception {
    /// The exception a WinkException object (its JSON) says; else why not.
    pub fn from_object(obj: &serde_json::Value) -> Result<Exception, String> {
        let meta = |k: &str| obj.pointer(&format!("/metadata/{k}")).and_then(|v| v.as_str());
        let namespace = meta("namespace").ok_or("no metadata.namespace")?.to_string();
        let name = meta("name").ok_or("no metadata.name")?.to_string();
        let spec = obj.get("spec").cloned().ok_or("no spec")?;
        let spec: Spec = serde_json::from_value(spec).map_err(|e| format!("spec: {e}"))?;
        if spec.reason.trim().is_empty() || spec.reason.len() > MAX_REASON {
            return Err(format!("spec.reason: empty or longer than {MAX_REASON}"));
        }
        if spec.plugins.is_empty() || spec.plugins.len() > MAX_ITEMS {
            return Err(format!("spec.plugins: 1 to {MAX_ITEMS} plugins"));
        }
        for (i, p) in spec.plugins.iter().enumerate() {
            if p.name.is_empty() || p.name.len() > MAX_TEXT {
                return Err(format!("spec.plugins[{i}].name: empty or longer than {MAX_TEXT}"));
            }
            if let Some(w) = p
                .webhooks
                .iter()
                .flatten()
                .find(|w| !WEBHOOKS.contains(&w.as_str()))
            {
                return Err(format!(
                    "spec.plugins[{i}].webhooks: {w:?} is not one of {WEBHOOKS:?}"
                ));
            }
        }
        let t = &spec.targets;
        if *t == Targets::default() {
            return Err("spec.match: give at least one field".into());
        }
        t.as_selection().check("spec.match")?;
        let names = t.names.iter().flatten();
        if t.names.as_ref().is_some_and(|n| n.len() > MAX_ITEMS)
            || names.clone().any(|n| n.is_empty() || n.len() > MAX_TEXT)
        {
            return Err(format!(
                "spec.match.names: at most {MAX_ITEMS} of 1 to {MAX_TEXT} characters"
            ));
        }
        let expires = match &spec.expires {
            None => None,
            Some(s) => {
                let t: k8s_openapi::jiff::Timestamp = s
                    .parse()
                    .map_err(|e| format!("spec.expires: {s:?} is not an RFC 3339 time: {e}"))?;
                Some(SystemTime::from(t))
            }
        };
        Ok(Exception {
            namespace,
            name,
            plugins: spec.plugins,
            targets: spec.targets,
            expires,
            reason: spec.reason,
        })
    }

    /// Whether it has expired at `now`.
    pub fn expired(&self, now: SystemTime) -> bool {
        self.expires.is_some_and(|t| t <= now)
    }

    /// Whether it names `plugin`, at `webhook` (none: events and reports,
    /// which an exception limited to webhooks leaves alone).
    pub fn names_plugin(&self, plugin: &str, webhook: Option<&str>) -> bool {
        self.plugins.iter().any(|p| {
            p.name == plugin
                && match (&p.webhooks, webhook) {
                    (None, _) => true,
                    (Some(_), None) => false,
                    (Some(w), Some(door)) => w.iter().any(|x| x == door),
                }
        })
    }

    /// Whether the object is among its targets (expiry aside).
    pub fn targets<'a, L: Fn(&str) -> Option<&'a str>>(&self, o: &Target<'a, L>) -> bool {
        let t = &self.targets;
        t.as_selection().has_kind(o.api_version, o.kind)
            && t.namespaces
                .as_ref()
                .is_none_or(|n| o.namespace.is_some_and(|ns| n.iter().any(|x| x == ns)))
            && t.names
                .as_ref()
                .is_none_or(|n| n.iter().any(|p| wildcard(p, o.name)))
            && t.object_selector.as_ref().is_none_or(|s| s.matches(&o.labels))
    }

    /// `<namespace>/<name>`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// What a review it lets in is warned, and a result it skips says.
    pub fn message(&self) -> String {
        format!("excepted by WinkException {}: {}", self.key(), self.reason)
    }
}

impl Targets {
    /// The fields a scope's selection shares, to check and match them alike.
    fn as_selection(&self) -> Selection {
        Selection {
            namespace_selector: None,
            object_selector: self.object_selector.clone(),
            namespaces: self.namespaces.clone(),
            kinds: self.kinds.clone(),
        }
    }
}

/// Whether `name` matches `pattern`: `*` any run of characters, `?` one.
pub fn wildcard(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // The classic greedy match with one backtrack point: linear enough for
    // names capped at MAX_TEXT.
    let (mut i, mut j, mut star, mut from) = (0, 0, None, 0);
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            from = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            from += 1;
            j = from;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == '*')
}

/// Exceptions by namespace and name.
type ByName = BTreeMap<(String, String), Arc<Exception>>;

/// The exceptions in force, shared by everything that honours them.
#[derive(Clone, Default)]
pub struct ExceptionSet {
    by_name: Arc<RwLock<ByName>>,
    /// Bumped by each change (what re-decides delivered objects watches).
    changes: Arc<std::sync::atomic::AtomicU64>,
}

impl ExceptionSet {
    /// Put `e` in force (replacing one of its name); false when the set is
    /// full ([`MAX_EXCEPTIONS`]).
    pub fn put(&self, e: Exception) -> bool {
        let mut set = self.by_name.write().unwrap_or_else(|e| e.into_inner());
        let key = (e.namespace.clone(), e.name.clone());
        if set.len() >= MAX_EXCEPTIONS && !set.contains_key(&key) {
            return false;
        }
        if set.get(&key).is_none_or(|old| **old != e) {
            set.insert(key, Arc::new(e));
            self.changes.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        }
        true
    }

    /// Take the exception `namespace`/`name` away.
    pub fn remove(&self, namespace: &str, name: &str) {
        let mut set = self.by_name.write().unwrap_or_else(|e| e.into_inner());
        if set.remove(&(namespace.to_string(), name.to_string())).is_some() {
            self.changes.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        }
    }

    /// How many changes the set has seen.
    pub fn changes(&self) -> u64 {
        self.changes.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Every exception held, expired or not, by namespace and name.
    pub fn all(&self) -> Vec<Arc<Exception>> {
        let set = self.by_name.read().unwrap_or_else(|e| e.into_inner());
        set.values().cloned().collect()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.by_name.read().unwrap_or_else(|e| e.into_inner()).is_empty()
    }

    /// The first unexpired exception at `now` that excepts the object from
    /// `plugin` (at `webhook`, for a review).
    pub fn excepting<'a, L: Fn(&str) -> Option<&'a str>>(
        &self,
        plugin: &str,
        webhook: Option<&str>,
        object: &Target<'a, L>,
        now: SystemTime,
    ) -> Option<Arc<Exception>> {
        let set = self.by_name.read().unwrap_or_else(|e| e.into_inner());
        set.values()
            .find(|e| !e.expired(now) && e.names_plugin(plugin, webhook) && e.targets(object))
            .cloned()
    }

    /// [`Self::excepting`] for an object of the cache.
    pub fn excepting_obj(
        &self,
        plugin: &str,
        obj: &wink_informer::ObjRef,
        now: SystemTime,
    ) -> Option<Arc<Exception>> {
        if self.is_empty() {
            return None;
        }
        self.excepting(plugin, None, &target_of(obj), now)
    }
}

#[cfg(test)]
mod tests;
