//! The `/scale` subresource (autoscaling/v1 `Scale`) of deployments,
//! replicasets, statefulsets and CRDs that declare one: a view of the
//! replica fields, written back through the main resource's update.
//!
//! Owns: Scale rendering and replica writes. Must not touch: routing.

use super::patch::Patch;
use super::resources::{ResourceDef, ScalePaths};
use super::status::ApiError;
use super::store::{Obj, State, key};
use super::write;
use serde_json::{Value, json};
use std::sync::Arc;

fn paths(def: &ResourceDef) -> Result<&ScalePaths, ApiError> {
    def.scale.as_ref().ok_or_else(ApiError::no_route)
}

fn selector(obj: &Value, p: &ScalePaths) -> String {
    if let Some(sp) = &p.selector {
        return obj.pointer(sp).and_then(Value::as_str).unwrap_or("").to_string();
    }
    let mut parts: Vec<String> = obj
        .pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    for e in obj
        .pointer("/spec/selector/matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let k = e["key"].as_str().unwrap_or("");
        let vals: Vec<&str> = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        parts.push(match e["operator"].as_str() {
            Some("In") => format!("{k} in ({})", vals.join(",")),
            Some("NotIn") => format!("{k} notin ({})", vals.join(",")),
            Some("DoesNotExist") => format!("!{k}"),
            _ => k.to_string(),
        });
    }
    parts.join(",")
}

/// The Scale view of an object.
pub fn render(def: &ResourceDef, obj: &Obj) -> Result<Value, ApiError> {
    let p = paths(def)?;
    let v = &obj.value;
    let m = &v["metadata"];
    let mut meta = json!({"name": m["name"], "uid": m["uid"], "resourceVersion": m["resourceVersion"],
        "creationTimestamp": m["creationTimestamp"]});
    if let Some(ns) = m.get("namespace") {
        meta["namespace"] = ns.clone();
    }
    Ok(json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": meta,
        "spec": {"replicas": v.pointer(&p.spec_replicas).and_then(Value::as_i64).unwrap_or(0)},
        "status": {"replicas": v.pointer(&p.status_replicas).and_then(Value::as_i64).unwrap_or(0),
            "selector": selector(v, p)},
    }))
}

fn current(st: &State, def: &ResourceDef, ns: Option<&str>, name: &str) -> Result<Arc<Obj>, ApiError> {
    st.table(&def.qualified())
        .and_then(|t| t.objects.get(&key(ns.filter(|_| def.namespaced), name)))
        .cloned()
        .ok_or_else(|| ApiError::not_found(&def.qualified(), name))
}

/// Write `scale.spec.replicas` (PUT of a Scale, or a patched Scale).
fn apply(
    st: &mut State,
    def: &Arc<ResourceDef>,
    ns: Option<&str>,
    name: &str,
    scale: &Value,
) -> Result<Value, ApiError> {
    let p = paths(def)?;
    let cur = current(st, def, ns, name)?;
    let replicas = scale
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .ok_or_else(|| {
            ApiError::invalid(
                &def.qualified(),
                "Scale",
                name,
                &["spec.replicas: Required value".into()],
            )
        })?;
    if replicas < 0 {
        return Err(ApiError::invalid(
            &def.qualified(),
            "Scale",
            name,
            &[format!(
                "spec.replicas: Invalid value: {replicas}: must be greater than or equal to 0"
            )],
        ));
    }
    let mut new = cur.value.clone();
    let rv = match scale
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        Some(rv) => rv.to_string(),
        None => cur.rv.to_string(),
    };
    new["metadata"]["resourceVersion"] = json!(rv);
    let (parent, field) = p.spec_replicas.rsplit_once('/').unwrap_or(("", &p.spec_replicas));
    let mut target = &mut new;
    for part in parent.split('/').filter(|p| !p.is_empty()) {
        if !target.get(part).is_some_and(Value::is_object) {
            target[part] = json!({});
        }
        target = &mut target[part];
    }
    target[field] = json!(replicas);
    let o = write::update(st, def, ns, name, new, false)?;
    render(def, &o)
}

pub fn get(st: &State, def: &ResourceDef, ns: Option<&str>, name: &str) -> Result<Value, ApiError> {
    render(def, &*current(st, def, ns, name)?)
}

pub fn put(
    st: &mut State,
    def: &Arc<ResourceDef>,
    ns: Option<&str>,
    name: &str,
    body: &Value,
) -> Result<Value, ApiError> {
    apply(st, def, ns, name, body)
}

pub fn patch(
    st: &mut State,
    def: &Arc<ResourceDef>,
    ns: Option<&str>,
    name: &str,
    patch: Result<Patch, ApiError>,
) -> Result<Value, ApiError> {
    let cur = get(st, def, ns, name)?;
    // A malformed patch matters only once the object is known to exist.
    let patch = patch?;
    let mut new = patch.apply(&cur)?;
    if patch.resource_version().is_none() {
        new["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"].clone();
    }
    apply(st, def, ns, name, &new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::PatchType;

    #[test]
    fn scale_reads_and_writes_replicas() {
        let mut st = State::new(100, 0);
        let ns = st.registry.get("namespaces").unwrap().clone();
        let deps = st.registry.get("deployments.apps").unwrap().clone();
        write::create(&mut st, &ns, None, "v1", json!({"metadata":{"name":"d"}})).unwrap();
        write::create(
            &mut st,
            &deps,
            Some("d"),
            "apps/v1",
            json!({"metadata":{"name":"web"},
            "spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}}}}),
        )
        .unwrap();
        let s = get(&st, &deps, Some("d"), "web").unwrap();
        assert_eq!(
            (s["spec"]["replicas"].as_i64(), s["status"]["selector"].as_str()),
            (Some(2), Some("app=web"))
        );
        let s = patch(
            &mut st,
            &deps,
            Some("d"),
            "web",
            Patch::parse(br#"{"spec":{"replicas":5}}"#, PatchType::Merge),
        )
        .unwrap();
        assert_eq!(s["spec"]["replicas"], 5);
        let d = &st.table("deployments.apps").unwrap().objects["d/web"];
        assert_eq!(
            (
                d.value["spec"]["replicas"].as_i64(),
                d.value["metadata"]["generation"].as_i64()
            ),
            (Some(5), Some(2))
        );
        let stale = json!({"metadata":{"resourceVersion":"1"},"spec":{"replicas":1}});
        assert_eq!(
            put(&mut st, &deps, Some("d"), "web", &stale).unwrap_err().code,
            409
        );
    }
}
