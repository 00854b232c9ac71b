//! The namespace controller: a namespace being deleted (Terminating, held
//! by `kubernetes` in `spec.finalizers`) has every object in it deleted;
//! once none is left (objects with finalizers of their own wait for them),
//! `kubernetes` is removed from its finalizers, and so the namespace goes.
//!
//! Owns: deleting a Terminating namespace's contents and its `kubernetes`
//! finalizer. Must not touch: active namespaces, cluster-scoped objects.

use super::super::write::{self, Preconditions};
use super::{Ctx, deleting, name, update};
use serde_json::Value;

/// Empty the namespace `ns` if it is Terminating, and let it go once empty.
pub fn sync(cx: &mut Ctx, ns_name: &str) {
    let Some(ns) = cx.get("namespaces", ns_name) else {
        return;
    };
    let held = ns
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|f| f == "kubernetes"));
    if !deleting(&ns) || !held {
        return;
    }
    let prefix = format!("{}/", name(&ns));
    let tables = cx.st.namespaced_tables();
    let mut left = 0;
    for q in tables {
        let contents: Vec<Value> = cx.st.tables[&q]
            .objects
            .range::<str, _>((
                std::ops::Bound::Included(prefix.as_str()),
                std::ops::Bound::Unbounded,
            ))
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(_, o)| o.value.clone())
            .collect();
        *cx.visits += contents.len() as u64;
        let def = cx.st.tables[&q].def.clone();
        for o in contents {
            left += 1;
            if !deleting(&o) {
                let pre = Preconditions {
                    propagation: Some("Background".into()),
                    ..Default::default()
                };
                let _ = write::delete(cx.st, &def, Some(name(&ns)), name(&o), &pre);
            }
        }
    }
    if left == 0 {
        let mut done = ns.clone();
        if let Some(a) = done.pointer_mut("/spec/finalizers").and_then(Value::as_array_mut) {
            a.retain(|f| f != "kubernetes");
        }
        update(cx.st, "namespaces", &ns, done);
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::write::{self, Preconditions};
    use super::super::testing::*;
    use serde_json::json;

    #[test]
    fn a_deleted_namespace_terminates_then_goes_with_its_contents() {
        let mut st = state();
        create(
            &mut st,
            "configmaps",
            Some("team"),
            "v1",
            json!({"metadata": {"name": "c"}}),
        );
        let d = json!({"metadata": {"name": "web"}, "spec": {"replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
        create(&mut st, "deployments.apps", Some("team"), "apps/v1", d);
        settle(&mut st);
        assert_eq!(
            all(&st, "namespaces")[1]["spec"]["finalizers"],
            json!(["kubernetes"])
        );
        let def = st.registry.get("namespaces").cloned().unwrap();
        let (ns, gone) = write::delete(&mut st, &def, None, "team", &Preconditions::default()).unwrap();
        assert!(!gone);
        assert_eq!(ns.value["status"]["phase"], "Terminating");
        let cm = st.registry.get("configmaps").cloned().unwrap();
        let e = write::create(
            &mut st,
            &cm,
            Some("team"),
            "v1",
            json!({"metadata": {"name": "late"}}),
        )
        .unwrap_err();
        assert_eq!(e.code, 403);
        assert!(
            e.message.contains("because it is being terminated"),
            "{}",
            e.message
        );
        settle(&mut st);
        assert!(!st.namespace_exists("team"));
        for t in ["configmaps", "pods", "replicasets.apps", "deployments.apps"] {
            assert!(all(&st, t).is_empty(), "{t}");
        }
    }
}
