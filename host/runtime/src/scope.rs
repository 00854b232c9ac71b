//! Scope set by the operator: where a plugin applies. A grants entry (and a
//! WinkPlugin, whose grant it is) may say `match` and `exclude`
//! ([`Selection`]); the host enforces them wherever the plugin meets the
//! cluster: events ([`tracker`]), cache queries, writes, Events and policy
//! results (the capabilities), admission reviews and webhook
//! configurations (the daemon). An object is in scope when it matches
//! `match` (every field given) and not `exclude` (every field given).
//!
//! Owns [`Scope`], the decision for one object, and [`ScopeCell`], the
//! scope in force for one plugin (changed with its grant). Namespace labels
//! are read from the shared Namespace informer's store at each decision, so
//! a namespace relabelled takes effect at once.

pub mod excepting;
pub mod selection;
pub mod tracker;
pub mod webhook;

pub use selection::{Operator, Requirement, Selection, Selector};
pub use tracker::Tracker;

use std::sync::{Arc, RwLock};
use wink_informer::{ObjRef, Store};

/// The label every namespace carries with its own name (set by the API server).
pub const NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// A plugin's scope: `match` and `exclude`, and the Namespace store their
/// namespace selectors read.
#[derive(Clone)]
pub struct Scope {
    include: Selection,
    exclude: Option<Selection>,
    namespaces: Option<Store>,
    /// The cluster-scoped kinds seen (but Namespaces, which go by the
    /// selections); none: every one.
    cluster_reads: Option<Vec<String>>,
}

impl std::fmt::Debug for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope")
            .field("match", &self.include)
            .field("exclude", &self.exclude)
            .finish()
    }
}

impl Scope {
    /// The scope of `include` and `exclude`; none when neither narrows anything.
    /// A namespace selector needs [`Scope::with_namespaces`] to match
    /// anything but the namespace's name label.
    pub fn new(include: Option<&Selection>, exclude: Option<&Selection>) -> Option<Scope> {
        let include = include.cloned().unwrap_or_default();
        let exclude = exclude.filter(|e| !e.is_empty()).cloned();
        if include.is_empty() && exclude.is_none() {
            return None;
        }
        Some(Scope {
            include,
            exclude,
            namespaces: None,
            cluster_reads: None,
        })
    }

    /// The scope that narrows nothing (to narrow with [`Scope::with_cluster_reads`]).
    pub fn everywhere() -> Scope {
        Scope {
            include: Selection::default(),
            exclude: None,
            namespaces: None,
            cluster_reads: None,
        }
    }

    /// See only these cluster-scoped kinds (`Kind` or `apiVersion/Kind`)
    /// besides Namespaces.
    pub fn with_cluster_reads(mut self, kinds: Vec<String>) -> Self {
        self.cluster_reads = Some(kinds);
        self
    }

    /// The selection `match`.
    pub fn include(&self) -> &Selection {
        &self.include
    }

    /// The selection `exclude`.
    pub fn exclude(&self) -> Option<&Selection> {
        self.exclude.as_ref()
    }

    /// Whether a namespace selector is read (the Namespace informer is needed).
    pub fn needs_namespaces(&self) -> bool {
        std::iter::once(&self.include)
            .chain(self.exclude.as_ref())
            .any(|s| s.namespace_selector.is_some())
    }

    /// Read namespace labels from `store` (the Namespace informer's).
    pub fn with_namespaces(mut self, store: Store) -> Self {
        self.namespaces = Some(store);
        self
    }

    /// Whether `obj` is in scope.
    pub fn admits(&self, obj: &ObjRef) -> bool {
        let own_name = (obj.kind() == "Namespace").then(|| obj.name());
        self.admits_parts(obj.api_version(), obj.kind(), obj.namespace(), |k| match k {
            NAME_LABEL if own_name.is_some() => own_name,
            k => obj.label(k),
        })
    }

    /// Whether an object of `api_version`/`kind` in `namespace` (none:
    /// cluster-scoped) with the labels `label` reads is in scope.
    pub fn admits_parts<'a>(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        label: impl Fn(&str) -> Option<&'a str>,
    ) -> bool {
        let object = Object {
            api_version,
            kind,
            namespace,
        };
        if namespace.is_none()
            && !(kind == "Namespace" && api_version == "v1")
            && let Some(kinds) = &self.cluster_reads
        {
            let allowed = Selection {
                kinds: Some(kinds.clone()),
                ..Selection::default()
            };
            if !allowed.has_kind(api_version, kind) {
                return false;
            }
        }
        self.selects(&self.include, &object, &label)
            && !self
                .exclude
                .as_ref()
                .is_some_and(|e| self.selects(e, &object, &label))
    }

    /// Whether the namespace `name` is in scope for `api_version`/`kind`,
    /// whatever an object's own labels: what a write or review can be told
    /// before its object is known.
    pub fn admits_namespace(&self, api_version: &str, kind: &str, name: &str) -> bool {
        let object = Object {
            api_version,
            kind,
            namespace: Some(name),
        };
        let no_labels = |s: &Selection| Selection {
            object_selector: None,
            ..s.clone()
        };
        let include = no_labels(&self.include);
        // An exclude that needs the object's labels cannot exclude a namespace.
        let exclude = self
            .exclude
            .as_ref()
            .filter(|e| e.object_selector.is_none())
            .map(no_labels);
        let none = |_: &str| None;
        self.selects(&include, &object, &none) && !exclude.is_some_and(|e| self.selects(&e, &object, &none))
    }

    /// Whether `s` selects the object (every field given holds).
    fn selects<'a>(&self, s: &Selection, o: &Object<'_>, label: &impl Fn(&str) -> Option<&'a str>) -> bool {
        if !s.has_kind(o.api_version, o.kind) {
            return false;
        }
        if let Some(sel) = &s.object_selector
            && !sel.matches(label)
        {
            return false;
        }
        // A Namespace is matched on its own name and labels; any other
        // cluster-scoped object passes the namespace fields.
        let is_namespace = o.namespace.is_none() && o.kind == "Namespace" && o.api_version == "v1";
        let (name, own) = match (o.namespace, is_namespace) {
            (Some(ns), _) => (ns, false),
            (None, true) => ("", true),
            (None, false) => return true,
        };
        if own {
            // The name of a Namespace is not known here without its object:
            // read it from its name label.
            let name = label(NAME_LABEL).unwrap_or_default();
            return s.namespaces.as_ref().is_none_or(|n| n.iter().any(|x| x == name))
                && s.namespace_selector.as_ref().is_none_or(|sel| sel.matches(label));
        }
        if let Some(names) = &s.namespaces
            && !names.iter().any(|n| n == name)
        {
            return false;
        }
        match &s.namespace_selector {
            None => true,
            Some(sel) => {
                let ns = self.namespaces.as_ref().and_then(|store| store.get(name));
                sel.matches(|k| match k {
                    NAME_LABEL => Some(name),
                    k => ns.as_ref().and_then(|o| o.label(k)),
                })
            }
        }
    }
}

struct Object<'a> {
    api_version: &'a str,
    kind: &'a str,
    namespace: Option<&'a str>,
}

/// The scope in force for one plugin, shared by everything that enforces
/// it; none when the plugin applies everywhere.
#[derive(Clone, Default)]
pub struct ScopeCell(Arc<RwLock<Option<Arc<Scope>>>>);

impl ScopeCell {
    /// The scope in force.
    pub fn get(&self) -> Option<Arc<Scope>> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Put `scope` in force.
    pub fn set(&self, scope: Option<Scope>) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = scope.map(Arc::new);
    }

    /// Whether `obj` is in scope (everything is, without a scope).
    pub fn admits(&self, obj: &ObjRef) -> bool {
        self.get().is_none_or(|s| s.admits(obj))
    }
}

#[cfg(test)]
mod tests;
