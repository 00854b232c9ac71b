//! Write semantics of the simulated API server: what create, update (main
//! resource and `/status`), delete (finalizers, namespaces, CRDs) and
//! deletecollection do to an object before it is committed.
//!
//! Owns: when validation, defaulting and server-managed metadata (uid,
//! creationTimestamp, generation, deletionTimestamp) apply, and
//! preconditions; the checks and values themselves are in `meta`.
//! Must not touch: the history/MVCC internals (`store`) or HTTP (`http`).

use super::meta::{
    self, check_identity, fold_string_data, meta, mstr, now, parse_rv, spec_part, suffix, uid, valid_name,
};
use super::object_meta;
use super::resources::{self, ResourceDef};
use super::status::ApiError;
use super::store::{EvType, Obj, State, key};
use super::validate;
use super::{decode, defaults, events};
use serde_json::{Value, json};
use std::sync::Arc;

/// Create an object (POST to a collection). `api_version` is the URL's.
pub fn create(
    st: &mut State,
    def: &Arc<ResourceDef>,
    ns: Option<&str>,
    api_version: &str,
    mut body: Value,
) -> Result<Arc<Obj>, ApiError> {
    let q = def.qualified();
    let version = api_version.rsplit('/').next().unwrap_or(api_version);
    decode::check(def, version, &body).map_err(|why| decode::bad_request(def, version, &body, &why))?;
    check_identity(def, ns, &mut body, None)?;
    let (mut body, api_version) = (
        events::to_storage(def, body),
        events::stored_api_version(def, api_version),
    );
    if def.namespaced {
        let ns = ns.ok_or_else(|| ApiError::bad_request("the namespace of the object is required"))?;
        let Some(namespace) = st.table("namespaces").and_then(|t| t.objects.get(ns)) else {
            return Err(ApiError::not_found("namespaces", ns));
        };
        if namespace.value.pointer("/metadata/deletionTimestamp").is_some() {
            let name = mstr(&body, "name").or(mstr(&body, "generateName")).unwrap_or("");
            return Err(ApiError::forbidden(
                &q,
                name,
                &format!("unable to create new content in namespace {ns} because it is being terminated"),
            ));
        }
        if def.group.is_empty() && def.plural == "pods" {
            super::service_accounts::admit_pod(st, ns, &body)?;
        }
    }
    if mstr(&body, "resourceVersion").is_some() {
        return Err(ApiError::new(
            500,
            "InternalError",
            "Internal error occurred: resourceVersion should not be set on objects to be created",
        ));
    }
    let table = st.table(&def.storage()).ok_or_else(ApiError::no_route)?;
    let name = match (mstr(&body, "name"), mstr(&body, "generateName")) {
        (Some(n), _) => n.to_string(),
        (None, Some(g)) => loop {
            let n = format!("{g}{}", suffix());
            if !table
                .objects
                .contains_key(&key(ns.filter(|_| def.namespaced), &n))
            {
                break n;
            }
        },
        (None, None) => {
            return Err(ApiError::invalid(
                &q,
                &def.kind,
                "",
                &["metadata.name: Required value: name or generateName is required".into()],
            ));
        }
    };
    meta(&mut body).insert("name".into(), json!(name));
    let mut errs = valid_name(&name, is_namespace(def));
    if let Some(g) = mstr(&body, "generateName") {
        errs.extend(meta::valid_generate_name(g, is_namespace(def)));
    }
    defaults::apply(def, &mut body);
    errs.extend(object_meta::errors(&body));
    errs.extend(validate::values(def, &body, None));
    if !errs.is_empty() {
        return Err(ApiError::invalid(&q, &def.kind, &name, &errs));
    }
    let k = key(ns.filter(|_| def.namespaced), &name);
    if table.objects.contains_key(&k) {
        return Err(ApiError::already_exists(&q, &name));
    }
    let new_def = if def.plural == "customresourcedefinitions" && def.group == "apiextensions.k8s.io" {
        let mut b = body.clone();
        meta(&mut b).insert("name".into(), json!(name));
        Some(resources::from_crd(&b).map_err(|e| ApiError::invalid(&q, &def.kind, &name, &e))?)
    } else {
        None
    };
    body["apiVersion"] = json!(api_version);
    body["kind"] = json!(def.kind);
    let m = meta(&mut body);
    m.insert("name".into(), json!(name));
    m.insert("uid".into(), json!(uid()));
    m.insert("creationTimestamp".into(), json!(now()));
    for f in [
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "managedFields",
    ] {
        m.remove(f);
    }
    if def.has_generation() {
        m.insert("generation".into(), json!(1));
    }
    object_meta::omit_empty(&mut body);
    super::prepare::for_create(def, &mut body, new_def.as_ref(), st.control_plane);
    if let Some(nd) = new_def.filter(|_| !st.mode.dry_run) {
        st.add_table(nd);
    }
    let o = st.commit(&def.storage(), k, EvType::Added, body);
    if is_namespace(def) && !st.mode.dry_run {
        super::service_accounts::create_default(st, &name);
    }
    Ok(o)
}

/// Replace an object (PUT), on the main resource or on `/status`.
pub fn update(
    st: &mut State,
    def: &Arc<ResourceDef>,
    ns: Option<&str>,
    name: &str,
    mut body: Value,
    status: bool,
) -> Result<Arc<Obj>, ApiError> {
    let q = def.qualified();
    let version = &def.versions[0];
    decode::check(def, version, &body).map_err(|why| decode::bad_request(def, version, &body, &why))?;
    check_identity(def, ns, &mut body, Some(name))?;
    let mut body = events::to_storage(def, body);
    let k = key(ns.filter(|_| def.namespaced), name);
    let table = st.table(&def.storage()).ok_or_else(ApiError::no_route)?;
    let old = table
        .objects
        .get(&k)
        .cloned()
        .ok_or_else(|| ApiError::not_found(&q, name))?;
    if let Some(rv) = mstr(&body, "resourceVersion")
        && parse_rv(rv)? != old.rv
    {
        return Err(ApiError::conflict(&q, name));
    }
    defaults::apply(def, &mut body);
    let mut errs = object_meta::errors(&body);
    errs.extend(validate::values(def, &body, Some(&old.value)));
    if !errs.is_empty() {
        return Err(ApiError::invalid(&q, &def.kind, name, &errs));
    }
    let mut new = if status {
        // The status strategy keeps everything but status.
        let mut n = old.value.clone();
        match body.get("status") {
            Some(s) => n["status"] = s.clone(),
            None => {
                n.as_object_mut().expect("object").remove("status");
            }
        }
        n
    } else {
        if def.has_status {
            match old.value.get("status") {
                Some(s) => body["status"] = s.clone(),
                None => {
                    body.as_object_mut().expect("object").remove("status");
                }
            }
        }
        body
    };
    new["apiVersion"] = old.value["apiVersion"].clone();
    new["kind"] = json!(def.kind);
    let om = old.value["metadata"].as_object().cloned().unwrap_or_default();
    let m = meta(&mut new);
    for f in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        match om.get(f) {
            Some(v) => m.insert(f.into(), v.clone()),
            None => m.remove(f),
        };
    }
    // A write that sends no managedFields keeps the stored ones.
    if let (None, Some(f)) = (m.get("managedFields"), om.get("managedFields")) {
        m.insert("managedFields".into(), f.clone());
    }
    m.insert("resourceVersion".into(), json!(old.rv.to_string()));
    object_meta::omit_empty(&mut new);
    if def.plural == "secrets" && def.group.is_empty() {
        fold_string_data(&mut new);
    }
    if def.has_generation() && spec_part(&new) != spec_part(&old.value) {
        let g = old
            .value
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        new["metadata"]["generation"] = json!(g + 1);
    }
    let is_crd = def.plural == "customresourcedefinitions" && def.group == "apiextensions.k8s.io";
    if is_crd && !status {
        let d = resources::from_crd(&new).map_err(|e| ApiError::invalid(&q, &def.kind, name, &e))?;
        new["status"] = super::prepare::crd_status(&new, &d);
        st.add_table(d);
    }
    if new == old.value {
        return Ok(old); // a no-op write is not persisted
    }
    let empty = |ptr: &str| {
        new.pointer(ptr)
            .and_then(Value::as_array)
            .is_none_or(|a| a.is_empty())
    };
    // A namespace also waits for its spec.finalizers (the namespace controller's).
    let finalizers_empty = empty("/metadata/finalizers") && (!is_namespace(def) || empty("/spec/finalizers"));
    if new.pointer("/metadata/deletionTimestamp").is_some() && finalizers_empty {
        return Ok(remove(st, def, k, new));
    }
    Ok(st.commit(&def.storage(), k, EvType::Modified, new))
}

/// Delete preconditions (`DeleteOptions.preconditions`) and the
/// propagation policy (`Background`, `Foreground`, `Orphan`).
#[derive(Debug, Default, Clone)]
pub struct Preconditions {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub propagation: Option<String>,
}

fn is_namespace(def: &ResourceDef) -> bool {
    def.group.is_empty() && def.plural == "namespaces"
}

/// Mark an object deleted and held by `finalizer` (added when missing):
/// what the real server does for foreground and orphan deletion, which the
/// garbage collector then completes.
fn hold_for(st: &mut State, def: &ResourceDef, k: Arc<str>, old: &Obj, finalizer: &str) -> Arc<Obj> {
    let mut new = old.value.clone();
    let m = meta(&mut new);
    let mut finalizers: Vec<Value> = m
        .get("finalizers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !finalizers.iter().any(|f| f == finalizer) {
        finalizers.push(json!(finalizer));
    }
    m.insert("finalizers".into(), json!(finalizers));
    if !m.contains_key("deletionTimestamp") {
        m.insert("deletionTimestamp".into(), json!(now()));
        m.insert("deletionGracePeriodSeconds".into(), json!(0));
    }
    st.commit(&def.storage(), k, EvType::Modified, new)
}

/// A namespace being deleted with the control plane on: Terminating, held
/// by the `kubernetes` finalizer until the namespace controller has
/// deleted its contents.
fn terminate_namespace(st: &mut State, def: &ResourceDef, k: Arc<str>, old: &Obj) -> Arc<Obj> {
    let mut new = old.value.clone();
    let fins = new
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !fins.iter().any(|f| f == "kubernetes") {
        let mut fins = fins;
        fins.push(json!("kubernetes"));
        new["spec"]["finalizers"] = json!(fins);
    }
    new["status"]["phase"] = json!("Terminating");
    meta(&mut new).insert("deletionTimestamp".into(), json!(now()));
    st.commit(&def.storage(), k, EvType::Modified, new)
}

/// Namespaces the real server's NamespaceLifecycle admission refuses to
/// delete (before looking at the object or the preconditions).
const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// Delete an object. Returns it and whether it is gone (false: finalizers
/// hold it, deletionTimestamp set); 403 for the immortal namespaces.
pub fn delete(
    st: &mut State,
    def: &Arc<ResourceDef>,
    ns: Option<&str>,
    name: &str,
    pre: &Preconditions,
) -> Result<(Arc<Obj>, bool), ApiError> {
    let q = def.qualified();
    if is_namespace(def) && IMMORTAL_NAMESPACES.contains(&name) {
        return Err(ApiError::forbidden(&q, name, "this namespace may not be deleted"));
    }
    let k = key(ns.filter(|_| def.namespaced), name);
    let table = st.table(&def.storage()).ok_or_else(ApiError::no_route)?;
    let old = table
        .objects
        .get(&k)
        .cloned()
        .ok_or_else(|| ApiError::not_found(&q, name))?;
    if let Some(u) = &pre.uid
        && mstr(&old.value, "uid") != Some(u.as_str())
    {
        return Err(ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {q} \"{name}\": Precondition failed: UID in precondition: {u}, UID in object meta: {}",
                mstr(&old.value, "uid").unwrap_or("")
            ),
        ));
    }
    if let Some(rv) = &pre.resource_version
        && parse_rv(rv)? != old.rv
    {
        return Err(ApiError::conflict(&q, name));
    }
    if st.control_plane && !st.mode.dry_run {
        let deleting = old.value.pointer("/metadata/deletionTimestamp").is_some();
        if is_namespace(def) {
            return Ok(match deleting {
                true => (old, false),
                false => (terminate_namespace(st, def, k, &old), false),
            });
        }
        let finalizer = match pre.propagation.as_deref() {
            Some("Foreground") => Some("foregroundDeletion"),
            Some("Orphan") => Some("orphan"),
            _ => None,
        };
        if let Some(f) = finalizer {
            return Ok((hold_for(st, def, k, &old, f), false));
        }
    }
    let has_finalizers = old
        .value
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if has_finalizers {
        if old.value.pointer("/metadata/deletionTimestamp").is_some() {
            return Ok((old, false));
        }
        let mut new = old.value.clone();
        let m = meta(&mut new);
        m.insert("deletionTimestamp".into(), json!(now()));
        m.insert("deletionGracePeriodSeconds".into(), json!(0));
        if let Some(g) = m.get("generation").and_then(Value::as_i64) {
            m.insert("generation".into(), json!(g + 1));
        }
        return Ok((st.commit(&def.storage(), k, EvType::Modified, new), false));
    }
    let last = old.value.clone();
    Ok((remove(st, def, k, last), true))
}

/// Remove an object now (cascading namespaces and CRDs).
fn remove(st: &mut State, def: &Arc<ResourceDef>, k: Arc<str>, last: Value) -> Arc<Obj> {
    if is_namespace(def) {
        let prefix = format!("{k}/");
        let tables = st.namespaced_tables();
        for q in tables {
            let doomed: Vec<(Arc<str>, Value)> = st.tables[&q]
                .objects
                .range::<str, _>((
                    std::ops::Bound::Included(prefix.as_str()),
                    std::ops::Bound::Unbounded,
                ))
                .take_while(|(key, _)| key.starts_with(&prefix))
                .map(|(key, o)| (key.clone(), o.value.clone()))
                .collect();
            for (key, v) in doomed {
                st.commit(&q, key, EvType::Deleted, v);
            }
        }
    }
    let crd = (def.group == "apiextensions.k8s.io" && def.plural == "customresourcedefinitions")
        .then(|| k.to_string());
    if let Some(crd) = &crd
        && st.tables.contains_key(crd)
    {
        let doomed: Vec<(Arc<str>, Value)> = st.tables[crd]
            .objects
            .iter()
            .map(|(key, o)| (key.clone(), o.value.clone()))
            .collect();
        for (key, v) in doomed {
            st.commit(crd, key, EvType::Deleted, v);
        }
        st.remove_table(crd);
    }
    st.commit(&def.storage(), k, EvType::Deleted, last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> (State, Arc<ResourceDef>, Arc<ResourceDef>) {
        let mut st = State::new(100, 0);
        let ns = st.registry.get("namespaces").unwrap().clone();
        let cm = st.registry.get("configmaps").unwrap().clone();
        create(&mut st, &ns, None, "v1", json!({"metadata":{"name":"default"}})).unwrap();
        (st, ns, cm)
    }

    #[test]
    fn create_update_conflict_and_noop() {
        let (mut st, _, cm) = state();
        let a = create(
            &mut st,
            &cm,
            Some("default"),
            "v1",
            json!({"metadata":{"name":"a"},"data":{"k":"v"}}),
        )
        .unwrap();
        assert_eq!(a.rv, 3, "after the namespace and its default ServiceAccount");
        assert_eq!(a.value["kind"], "ConfigMap");
        assert!(a.value["metadata"]["uid"].is_string());
        let e = create(
            &mut st,
            &cm,
            Some("default"),
            "v1",
            json!({"metadata":{"name":"a"}}),
        )
        .unwrap_err();
        assert_eq!((e.code, e.reason), (409, "AlreadyExists"));
        let e = create(&mut st, &cm, Some("nope"), "v1", json!({"metadata":{"name":"a"}})).unwrap_err();
        assert_eq!(e.message, "namespaces \"nope\" not found");
        let g = create(
            &mut st,
            &cm,
            Some("default"),
            "v1",
            json!({"metadata":{"generateName":"x-"}}),
        )
        .unwrap();
        assert!(g.name().starts_with("x-") && g.name().len() == 7);
        let stale = json!({"metadata":{"name":"a","resourceVersion":"1"},"data":{"k":"w"}});
        assert_eq!(
            update(&mut st, &cm, Some("default"), "a", stale, false)
                .unwrap_err()
                .reason,
            "Conflict"
        );
        let same = a.value.clone();
        assert_eq!(
            update(&mut st, &cm, Some("default"), "a", same, false)
                .unwrap()
                .rv,
            a.rv
        );
    }

    #[test]
    fn finalizers_hold_deletion_and_namespaces_cascade() {
        let (mut st, ns, cm) = state();
        let a = create(
            &mut st,
            &cm,
            Some("default"),
            "v1",
            json!({"metadata":{"name":"a","finalizers":["x"]}}),
        )
        .unwrap();
        let (held, gone) = delete(&mut st, &cm, Some("default"), "a", &Preconditions::default()).unwrap();
        assert!(!gone && held.value["metadata"]["deletionTimestamp"].is_string());
        let mut v = held.value.clone();
        v["metadata"]["finalizers"] = json!([]);
        update(&mut st, &cm, Some("default"), "a", v, false).unwrap();
        assert!(st.table("configmaps").unwrap().objects.is_empty());
        let h = &st.table("configmaps").unwrap().history;
        assert_eq!(
            h.iter().map(|e| e.ty).collect::<Vec<_>>(),
            vec![EvType::Added, EvType::Modified, EvType::Deleted]
        );
        assert!(a.rv < h[2].rv);
        create(&mut st, &ns, None, "v1", json!({"metadata":{"name":"team"}})).unwrap();
        create(&mut st, &cm, Some("team"), "v1", json!({"metadata":{"name":"b"}})).unwrap();
        delete(&mut st, &ns, None, "team", &Preconditions::default()).unwrap();
        assert!(st.table("configmaps").unwrap().objects.is_empty());
    }

    #[test]
    fn immortal_namespaces_are_forbidden_to_delete() {
        let (mut st, ns, _) = state();
        for name in ["kube-system", "kube-public", "kube-node-lease"] {
            create(&mut st, &ns, None, "v1", json!({"metadata":{"name":name}})).unwrap();
        }
        for name in ["default", "kube-system", "kube-public"] {
            let e = delete(&mut st, &ns, None, name, &Preconditions::default()).unwrap_err();
            assert_eq!((e.code, e.reason), (403, "Forbidden"));
            assert_eq!(
                e.message,
                format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted")
            );
            assert_eq!(e.details.unwrap(), json!({"name": name, "kind": "namespaces"}));
            assert!(st.namespace_exists(name));
        }
        delete(&mut st, &ns, None, "kube-node-lease", &Preconditions::default()).unwrap();
        assert!(!st.namespace_exists("kube-node-lease"));
    }
}
