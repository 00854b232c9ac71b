//! Admission on the simulator's write paths: what each write (create, PUT,
//! patch, delete, deletecollection, on a resource or its `status`) sends to
//! the webhooks and when. Mutating webhooks see the object as the client
//! sent it (its namespace filled in from the URL, as the API server does);
//! the validating ones see the object as it would be stored (a dry run of
//! the write after the mutations: defaults, uid, timestamps), and a write
//! the store would refuse is refused before they are called, as the API
//! server validates before its validating admission.
//!
//! Owns: the order admission and storing happen in for each verb. Must not
//! touch: routing (`http`), the write semantics (`write`).

use super::super::Shared;
use super::super::events;
use super::super::resources::ResourceDef;
use super::super::status::ApiError;
use super::super::store::{Obj, WriteMode, key};
use super::super::write;
use super::{Ctx, Op, options};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;

/// A write being admitted: the type, the URL's version and subresource.
#[derive(Clone, Copy)]
pub struct Target<'a> {
    pub def: &'a Arc<ResourceDef>,
    pub version: &'a str,
    pub sub: Option<&'a str>,
    pub ns: Option<&'a str>,
    pub mode: &'a WriteMode,
}

fn manager(mode: &WriteMode) -> Option<&str> {
    let named = mode.field_manager.as_ref().filter(|_| mode.manager_named);
    named.map(|(m, _)| m.as_str())
}

fn dry(mode: &WriteMode) -> WriteMode {
    WriteMode {
        dry_run: true,
        ..mode.clone()
    }
}

/// The stored object `name`, if any.
pub fn current(shared: &Shared, t: &Target, name: &str) -> Option<Arc<Obj>> {
    let st = shared.store.lock();
    let k = key(t.ns.filter(|_| t.def.namespaced), name);
    st.table(&t.def.storage())
        .and_then(|tb| tb.objects.get(&k))
        .cloned()
}

/// Admit a create of `body` (options: CreateOptions, or PatchOptions turned
/// into them for an apply that creates); the body to store.
pub fn create(shared: &Shared, ctx: &Ctx, t: &Target, mut body: Value) -> Result<Value, ApiError> {
    // The NamespaceLifecycle plugin runs before the webhooks: a create in a
    // missing or terminating namespace is refused without calling them.
    if let (true, Some(ns)) = (t.def.namespaced, t.ns) {
        let st = shared.store.lock();
        let namespace = st.table("namespaces").and_then(|tb| tb.objects.get(ns));
        if namespace.is_none_or(|n| n.value.pointer("/metadata/deletionTimestamp").is_some()) {
            return Ok(body);
        }
    }
    let ctx = ctx.dry_run(t.mode.dry_run);
    if let (true, Some(ns), Some(m)) = (
        t.def.namespaced,
        t.ns,
        body.get_mut("metadata").and_then(Value::as_object_mut),
    ) && m
        .get("namespace")
        .is_none_or(|n| n.as_str().is_none_or(str::is_empty))
    {
        m.insert("namespace".into(), json!(ns));
    }
    let name = body
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let op = Op {
        def: t.def,
        version: t.version,
        sub: t.sub,
        ns: t.ns,
        name: &name,
        operation: "CREATE",
        options: options("CreateOptions", manager(t.mode), t.mode.dry_run),
    };
    let body = ctx.mutate(&op, body, None)?;
    let api_version = t.def.api_version(t.version);
    let preview = write::create(
        &mut shared.store.lock_for_write(dry(t.mode)),
        t.def,
        t.ns,
        &api_version,
        body.clone(),
    )?;
    ctx.validate(&op, Some(&events::as_version(&preview.value, &api_version)), None)?;
    Ok(body)
}

/// Admit an update (PUT, or a patch: `patch` true) of `name` from `old` to
/// `body`; the body to store.
pub fn update(
    shared: &Shared,
    ctx: &Ctx,
    t: &Target,
    name: &str,
    old: &Value,
    body: Value,
    patch: bool,
) -> Result<Value, ApiError> {
    let ctx = ctx.dry_run(t.mode.dry_run);
    let kind = if patch { "PatchOptions" } else { "UpdateOptions" };
    let op = Op {
        def: t.def,
        version: t.version,
        sub: t.sub,
        ns: t.ns,
        name,
        operation: "UPDATE",
        options: options(kind, manager(t.mode), t.mode.dry_run),
    };
    let api_version = t.def.api_version(t.version);
    let old = &events::as_version(old, &api_version);
    let body = ctx.mutate(&op, body, Some(old))?;
    let status = t.sub == Some("status");
    let preview = write::update(
        &mut shared.store.lock_for_write(dry(t.mode)),
        t.def,
        t.ns,
        name,
        body.clone(),
        status,
    )?;
    ctx.validate(
        &op,
        Some(&events::as_version(&preview.value, &api_version)),
        Some(old),
    )?;
    Ok(body)
}

/// Admit a delete of `name` (`options`: the request's DeleteOptions, if any).
pub fn delete(shared: &Shared, ctx: &Ctx, t: &Target, name: &str, body: &[u8]) -> Result<(), ApiError> {
    let Some(old) = current(shared, t, name) else {
        return Ok(());
    };
    let ctx = ctx.dry_run(t.mode.dry_run);
    let mut opts: Value = serde_json::from_slice(body)
        .ok()
        .filter(Value::is_object)
        .unwrap_or(json!({}));
    opts["kind"] = json!("DeleteOptions");
    opts["apiVersion"] = json!("meta.k8s.io/v1");
    let op = Op {
        def: t.def,
        version: t.version,
        sub: None,
        ns: old
            .value
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .or(t.ns),
        name,
        operation: "DELETE",
        options: opts,
    };
    let old = events::as_version(&old.value, &t.def.api_version(t.version));
    ctx.mutate(&op, Value::Null, Some(&old))?;
    ctx.validate(&op, None, Some(&old))?;
    Ok(())
}

/// Admit each object a deletecollection is to delete, as its own DELETE:
/// the (namespace, name) of those refused, and the first refusal.
pub fn delete_each(
    shared: &Shared,
    ctx: &Ctx,
    t: &Target,
    items: &[Arc<Obj>],
    body: &[u8],
) -> (HashSet<(Option<String>, String)>, Option<ApiError>) {
    let (mut refused, mut first) = (HashSet::new(), None);
    for o in items {
        let ns = o
            .value
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .map(String::from);
        let target = Target {
            ns: ns.as_deref(),
            ..*t
        };
        if let Err(e) = delete(shared, ctx, &target, o.name(), body) {
            first.get_or_insert(e);
            refused.insert((ns, o.name().to_string()));
        }
    }
    (refused, first)
}
