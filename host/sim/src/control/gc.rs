//! The garbage collector: ownerReferences. An object all of whose owners
//! are gone (the uid index has none of them) is deleted (background
//! cascading: its own dependents follow in later rounds). An owner deleted in the
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
use super::index::{Place, owner_uids};
use super::{Ctx, deleting, has_finalizer, name, namespace, uid, update};
use serde_json::{Value, json};
use std::collections::BTreeSet;

fn delete(st: &mut State, table: &str, v: &Value, propagation: &str) {
    let Some(def) = st.registry.get(table).cloned() else {
        return;
    };
    let pre = Preconditions {
        propagation: Some(propagation.into()),
        ..Default::default()
    };
    let _ = write::delete(st, &def, namespace(v), name(v), &pre);
}

fn drop_finalizer(st: &mut State, table: &str, cur: &Value, f: &str) {
    let mut new = cur.clone();
    if let Some(a) = new
        .pointer_mut("/metadata/finalizers")
        .and_then(Value::as_array_mut)
    {
        a.retain(|x| x != f);
    }
    update(st, table, cur, new);
}

/// Delete the queued dependents none of whose owners exists any more
/// (the uid index says), and move the queued owners deleted in the
/// foreground or orphaning on.
pub fn collect(cx: &mut Ctx, orphans: &BTreeSet<Place>, owners: &BTreeSet<Place>) {
    for (table, key) in orphans {
        let Some(v) = cx.get(table, key) else { continue };
        let ids = owner_uids(&v);
        if !ids.is_empty() && !deleting(&v) && ids.iter().all(|o| !cx.ix.exists(o)) {
            delete(cx.st, table, &v, "Background");
        }
    }
    for (table, key) in owners {
        let Some(owner) = cx.get(table, key).filter(deleting) else {
            continue;
        };
        let deps = cx.ix.dependents(uid(&owner));
        if has_finalizer(&owner, "foregroundDeletion") {
            for (t, k) in &deps {
                if let Some(d) = cx.get(t, k).filter(|d| !deleting(d)) {
                    delete(cx.st, t, &d, "Foreground");
                }
            }
            if deps.is_empty() {
                drop_finalizer(cx.st, table, &owner, "foregroundDeletion");
            }
        } else if has_finalizer(&owner, "orphan") {
            for (t, k) in &deps {
                let Some(cur) = cx.get(t, k) else { continue };
                let mut new = cur.clone();
                if let Some(refs) = new
                    .pointer_mut("/metadata/ownerReferences")
                    .and_then(Value::as_array_mut)
                {
                    refs.retain(|r| r["uid"] != json!(uid(&owner)));
                }
                update(cx.st, t, &cur, new);
            }
            drop_finalizer(cx.st, table, &owner, "orphan");
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
        // The emptied list is dropped, as Go's omitempty drops it.
        assert!(rss[0]["metadata"].get("ownerReferences").is_none());
        assert_eq!(
            all(&st, "pods").len(),
            2,
            "the orphaned ReplicaSet keeps its pods"
        );
    }

    #[test]
    fn dependents_of_custom_resources_go_with_their_crd() {
        let mut st = state();
        let mut c = super::super::Controllers::default();
        let crd = json!({"metadata": {"name": "widgets.example.com"}, "spec": {"group": "example.com",
            "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true}]}});
        let crds = "customresourcedefinitions.apiextensions.k8s.io";
        create(&mut st, crds, None, "apiextensions.k8s.io/v1", crd);
        settle_with(&mut c, &mut st);
        let w = create(
            &mut st,
            "widgets.example.com",
            Some("default"),
            "example.com/v1",
            json!({"metadata": {"name": "w"}}),
        );
        let owned = json!({"metadata": {"name": "c", "ownerReferences": [{"apiVersion": "example.com/v1",
            "kind": "Widget", "name": "w", "uid": w["metadata"]["uid"]}]}});
        create(&mut st, "configmaps", Some("default"), "v1", owned);
        settle_with(&mut c, &mut st);
        assert_eq!(all(&st, "configmaps").len(), 1, "its owner is there");
        let def = st.registry.get(crds).cloned().unwrap();
        write::delete(
            &mut st,
            &def,
            None,
            "widgets.example.com",
            &Preconditions::default(),
        )
        .unwrap();
        settle_with(&mut c, &mut st);
        assert!(all(&st, "configmaps").is_empty(), "its owner went with the CRD");
    }
}
