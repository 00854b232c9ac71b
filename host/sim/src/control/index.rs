//! The controllers' indexes over the store, kept from its events as an
//! informer's indexers are: every object by uid, dependents by owner uid
//! (what a Deployment's ReplicaSets and a ReplicaSet's Pods are found
//! through), Pods by node and the unbound ones, Pod IPs in use.
//!
//! Owns: these indexes and their upkeep ([`Index::apply`]). Must not touch:
//! the store (it is told what changed) or what controllers do.

use super::{s, uid};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

/// An object's place in the store: its table (qualified plural) and key.
pub type Place = (String, Arc<str>);

#[derive(Debug, Default)]
pub struct Index {
    by_uid: HashMap<String, Place>,
    dependents: HashMap<String, BTreeSet<Place>>,
    pods_on: HashMap<String, BTreeSet<Arc<str>>>,
    unbound: BTreeSet<Arc<str>>,
    ips: HashSet<String>,
}

/// The uids an object's ownerReferences name.
pub fn owner_uids(v: &Value) -> Vec<&str> {
    v.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| refs.iter().filter_map(|r| r["uid"].as_str()).collect())
        .unwrap_or_default()
}

impl Index {
    /// One change of the object at (`table`, `key`): its state before
    /// (`old`) and after (`new`, none when deleted).
    pub fn apply(&mut self, table: &str, key: &Arc<str>, old: Option<&Value>, new: Option<&Value>) {
        if let Some(o) = old {
            self.remove(table, key, o);
        }
        if let Some(n) = new {
            self.add(table, key, n);
        }
    }

    fn place(table: &str, key: &Arc<str>) -> Place {
        (table.to_string(), key.clone())
    }

    fn remove(&mut self, table: &str, key: &Arc<str>, v: &Value) {
        let place = Self::place(table, key);
        if self.by_uid.get(uid(v)) == Some(&place) {
            self.by_uid.remove(uid(v));
        }
        for owner in owner_uids(v) {
            if let Some(deps) = self.dependents.get_mut(owner) {
                deps.remove(&place);
                if deps.is_empty() {
                    self.dependents.remove(owner);
                }
            }
        }
        if table == "pods" {
            let node = s(v, "/spec/nodeName");
            if let Some(pods) = self.pods_on.get_mut(node) {
                pods.remove(key);
                if pods.is_empty() {
                    self.pods_on.remove(node);
                }
            }
            self.unbound.remove(key);
            self.ips.remove(s(v, "/status/podIP"));
        }
    }

    fn add(&mut self, table: &str, key: &Arc<str>, v: &Value) {
        let place = Self::place(table, key);
        if !uid(v).is_empty() {
            self.by_uid.insert(uid(v).to_string(), place.clone());
        }
        for owner in owner_uids(v) {
            self.dependents
                .entry(owner.to_string())
                .or_default()
                .insert(place.clone());
        }
        if table == "pods" {
            match s(v, "/spec/nodeName") {
                "" => {
                    self.unbound.insert(key.clone());
                }
                node => {
                    self.pods_on
                        .entry(node.to_string())
                        .or_default()
                        .insert(key.clone());
                }
            }
            let ip = s(v, "/status/podIP");
            if !ip.is_empty() {
                self.ips.insert(ip.to_string());
            }
        }
    }

    /// Whether an object with this uid exists.
    pub fn exists(&self, uid: &str) -> bool {
        self.by_uid.contains_key(uid)
    }

    /// Where the object with this uid is.
    pub fn place_of(&self, uid: &str) -> Option<&Place> {
        self.by_uid.get(uid)
    }

    /// The objects whose ownerReferences name `owner_uid`.
    pub fn dependents(&self, owner_uid: &str) -> Vec<Place> {
        self.dependents
            .get(owner_uid)
            .map(|d| d.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Pods bound to `node`.
    pub fn pods_on(&self, node: &str) -> Vec<Arc<str>> {
        self.pods_on
            .get(node)
            .map(|p| p.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// How many Pods are bound to `node`.
    pub fn load(&self, node: &str) -> usize {
        self.pods_on.get(node).map_or(0, BTreeSet::len)
    }

    /// Pods bound to no node.
    pub fn unbound(&self) -> Vec<Arc<str>> {
        self.unbound.iter().cloned().collect()
    }

    /// Take a Pod IP (false: it is in use).
    pub fn take_ip(&mut self, ip: &str) -> bool {
        self.ips.insert(ip.to_string())
    }
}

/// The name of the object's controller of `kind` (its ownerReference with
/// `controller: true`), if it has one.
pub fn controller_of<'a>(v: &'a Value, kind: &str) -> Option<&'a str> {
    v.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r["controller"] == true && r["kind"] == kind)
        .and_then(|r| r["name"].as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn follows_owners_nodes_and_ips_through_changes() {
        let mut ix = Index::default();
        let k: Arc<str> = "d/p".into();
        let unbound = json!({"metadata": {"name": "p", "uid": "u1",
            "ownerReferences": [{"uid": "rs1", "kind": "ReplicaSet", "name": "rs", "controller": true}]}});
        ix.apply("pods", &k, None, Some(&unbound));
        assert!(ix.exists("u1"));
        assert_eq!(ix.dependents("rs1"), [("pods".to_string(), k.clone())]);
        assert_eq!(ix.unbound(), std::slice::from_ref(&k));
        let mut bound = unbound.clone();
        bound["spec"] = json!({"nodeName": "n1"});
        bound["status"] = json!({"podIP": "10.0.0.2"});
        ix.apply("pods", &k, Some(&unbound), Some(&bound));
        assert!(ix.unbound().is_empty());
        assert_eq!((ix.load("n1"), ix.pods_on("n1")), (1, vec![k.clone()]));
        assert!(!ix.take_ip("10.0.0.2"), "the IP is in use");
        ix.apply("pods", &k, Some(&bound), None);
        assert!(!ix.exists("u1") && ix.dependents("rs1").is_empty() && ix.load("n1") == 0);
        assert!(ix.take_ip("10.0.0.2"), "the IP is free again");
        assert_eq!(controller_of(&bound, "ReplicaSet"), Some("rs"));
        assert_eq!(controller_of(&bound, "Deployment"), None);
    }
}
