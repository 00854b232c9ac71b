//! The garbage collector: ownerReferences. An object all of whose owners
//! are gone (no object has their uid) is deleted (background cascading:
//! its own dependents follow in later passes). An owner deleted in the
//! foreground (`foregroundDeletion` finalizer, deletionTimestamp set) has
//! its dependents deleted in the foreground too, and loses the finalizer,
//! and so goes, once none is left. An owner deleted with `Orphan`
//! (`orphan` finalizer) has its ownerReferences removed from its
//! dependents, then loses the finalizer.
//!
//! Owns: deleting dependents, the `foregroundDeletion` and `orphan`
//! finalizers, dependents' ownerReferences to orphaning owners. Must not
//! touch: objects without ownerReferences, other finalizers.

use super::super::store::State;
use super::super::write::{self, Preconditions};
use super::{deleting, name, namespace, uid, update};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};

/// One stored object: its table (qualified plural) and value.
struct Entry {
    table: String,
    value: Value,
}

fn owner_uids(v: &Value) -> Vec<&str> {
    v.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| refs.iter().filter_map(|r| r["uid"].as_str()).collect())
        .unwrap_or_default()
}

fn has_finalizer(v: &Value, f: &str) -> bool {
    v.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|x| x == f))
}

fn delete(st: &mut State, e: &Entry, propagation: Option<&str>) {
    let Some(def) = st.registry.get(&e.table).cloned() else {
        return;
    };
    let pre = Preconditions {
        propagation: propagation.map(String::from),
        ..Default::default()
    };
    let _ = write::delete(st, &def, namespace(&e.value), name(&e.value), &pre);
}

/// The stored version of `v` (the pass may have changed it).
fn current(st: &State, e: &Entry) -> Option<Value> {
    st.table(&e.table)
        .and_then(|t| {
            t.objects
                .get(&super::super::store::key(namespace(&e.value), name(&e.value)))
        })
        .map(|o| o.value.clone())
}

fn drop_finalizer(st: &mut State, e: &Entry, f: &str) {
    let Some(cur) = current(st, e) else { return };
    let mut new = cur.clone();
    if let Some(a) = new
        .pointer_mut("/metadata/finalizers")
        .and_then(Value::as_array_mut)
    {
        a.retain(|x| x != f);
    }
    update(st, &e.table, &cur, new);
}

pub fn reconcile(st: &mut State) {
    let entries: Vec<Entry> = st
        .tables
        .iter()
        .flat_map(|(q, t)| {
            t.objects.values().map(move |o| Entry {
                table: q.clone(),
                value: o.value.clone(),
            })
        })
        .collect();
    let uids: HashSet<&str> = entries.iter().map(|e| uid(&e.value)).collect();
    let mut dependents: HashMap<&str, Vec<&Entry>> = HashMap::new();
    for e in &entries {
        for o in owner_uids(&e.value) {
            dependents.entry(o).or_default().push(e);
        }
    }
    for e in &entries {
        let owners = owner_uids(&e.value);
        if !owners.is_empty() && !deleting(&e.value) && owners.iter().all(|o| !uids.contains(o)) {
            delete(st, e, Some("Background"));
        }
    }
    for owner in &entries {
        let v = &owner.value;
        if !deleting(v) {
            continue;
        }
        let deps = dependents.get(uid(v)).map(Vec::as_slice).unwrap_or(&[]);
        if has_finalizer(v, "foregroundDeletion") {
            for d in deps.iter().filter(|d| !deleting(&d.value)) {
                delete(st, d, Some("Foreground"));
            }
            if deps.is_empty() {
                drop_finalizer(st, owner, "foregroundDeletion");
            }
        } else if has_finalizer(v, "orphan") {
            for d in deps {
                let Some(cur) = current(st, d) else { continue };
                let mut new = cur.clone();
                if let Some(refs) = new
                    .pointer_mut("/metadata/ownerReferences")
                    .and_then(Value::as_array_mut)
                {
                    refs.retain(|r| r["uid"] != json!(uid(v)));
                }
                update(st, &d.table, &cur, new);
            }
            drop_finalizer(st, owner, "orphan");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::store::State;
    use super::super::super::write::{self, Preconditions};
    use super::super::testing::*;
    use serde_json::json;

    fn web(st: &mut State) {
        let d = json!({"metadata": {"name": "web"}, "spec": {"replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
        create(st, "deployments.apps", Some("default"), "apps/v1", d);
        settle(st);
        assert_eq!(all(st, "pods").len(), 2);
    }

    fn delete_web(st: &mut State, propagation: &str) -> bool {
        let def = st.registry.get("deployments.apps").cloned().unwrap();
        let pre = Preconditions {
            propagation: Some(propagation.into()),
            ..Default::default()
        };
        write::delete(st, &def, Some("default"), "web", &pre).unwrap().1
    }

    #[test]
    fn background_deletion_takes_the_dependents() {
        let mut st = state();
        web(&mut st);
        assert!(delete_web(&mut st, "Background"), "the owner goes at once");
        settle(&mut st);
        assert!(all(&st, "replicasets.apps").is_empty());
        assert!(all(&st, "pods").is_empty());
    }

    #[test]
    fn foreground_deletion_holds_the_owner_until_the_dependents_go() {
        let mut st = state();
        web(&mut st);
        assert!(!delete_web(&mut st, "Foreground"));
        let d = &all(&st, "deployments.apps")[0];
        assert_eq!(d["metadata"]["finalizers"], json!(["foregroundDeletion"]));
        assert!(d["metadata"]["deletionTimestamp"].is_string());
        settle(&mut st);
        assert!(all(&st, "pods").is_empty());
        assert!(all(&st, "replicasets.apps").is_empty());
        assert!(all(&st, "deployments.apps").is_empty());
        let history: Vec<_> = st.table("pods").unwrap().history.iter().map(|e| e.ty).collect();
        assert!(history.contains(&super::super::super::store::EvType::Deleted));
    }

    #[test]
    fn orphan_deletion_keeps_the_dependents_without_their_owner() {
        let mut st = state();
        web(&mut st);
        assert!(!delete_web(&mut st, "Orphan"));
        settle(&mut st);
        assert!(all(&st, "deployments.apps").is_empty());
        let rss = all(&st, "replicasets.apps");
        assert_eq!(rss.len(), 1);
        assert!(
            rss[0]["metadata"]["ownerReferences"]
                .as_array()
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            all(&st, "pods").len(),
            2,
            "the orphaned ReplicaSet keeps its pods"
        );
    }
}
