//! The scope's decisions, one object at a time.

use super::*;
use kube::api::{ApiResource, DynamicObject};
use kube::core::GroupVersionKind;
use serde_json::Value;
use wink_informer::object::{CachePolicy, CachedObject};

/// A cached object of `api_version`/`kind`.
pub(crate) fn object(
    api_version: &str,
    kind: &str,
    namespace: Option<&str>,
    name: &str,
    rv: u64,
    labels: &[(&str, &str)],
) -> ObjRef {
    let labels: serde_json::Map<String, Value> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), Value::from(*v)))
        .collect();
    let obj: DynamicObject = serde_json::from_value(serde_json::json!({
        "metadata": {"namespace": namespace, "name": name, "uid": format!("u-{name}"),
                     "resourceVersion": rv.to_string(), "labels": labels},
    }))
    .unwrap();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let plural = format!("{}s", kind.to_lowercase());
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), &plural);
    CachedObject::from_dynamic(obj, &ar, CachePolicy::default())
}

fn scope(include: &str, exclude: &str) -> Scope {
    let read = |y: &str| (!y.is_empty()).then(|| serde_norway::from_str::<Selection>(y).unwrap());
    Scope::new(read(include).as_ref(), read(exclude).as_ref()).unwrap()
}

/// A Namespace store holding `namespaces` with their labels.
fn namespaces(namespaces: &[(&str, &[(&str, &str)])]) -> wink_informer::Store {
    let writer = wink_informer::store::Writer::new();
    for (name, labels) in namespaces {
        writer.upsert(object("v1", "Namespace", None, name, 1, labels));
    }
    writer.reader()
}

#[test]
fn namespace_selectors_read_the_namespace_labels_at_each_decision() {
    let store = namespaces(&[("a", &[("enforce", "yes")]), ("b", &[])]);
    let s = scope("{namespaceSelector: {matchLabels: {enforce: 'yes'}}}", "").with_namespaces(store.clone());
    assert!(s.needs_namespaces());
    let pod = |ns: &str| object("v1", "Pod", Some(ns), "p", 1, &[]);
    assert!(s.admits(&pod("a")));
    assert!(!s.admits(&pod("b")));
    assert!(
        !s.admits(&pod("unknown")),
        "a namespace not (yet) cached has no labels"
    );
    assert!(s.admits_namespace("v1", "Pod", "a"));
    assert!(!s.admits_namespace("v1", "Pod", "b"));
    // Cluster-scoped objects pass the namespace fields; a Namespace is
    // matched on its own labels.
    assert!(s.admits(&object("v1", "Node", None, "n", 1, &[])));
    assert!(s.admits(&object("v1", "Namespace", None, "a", 1, &[("enforce", "yes")])));
    assert!(!s.admits(&object("v1", "Namespace", None, "b", 1, &[])));
    // The name label is the namespace's own, whatever the store says.
    let named = scope(
        "{namespaceSelector: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: In, values: [b]}]}}",
        "",
    )
    .with_namespaces(store);
    assert!(named.admits(&pod("b")) && !named.admits(&pod("a")));
}

#[test]
fn relabelling_a_namespace_moves_its_objects() {
    let writer = wink_informer::store::Writer::new();
    writer.upsert(object("v1", "Namespace", None, "a", 1, &[]));
    let s =
        scope("{namespaceSelector: {matchLabels: {enforce: 'yes'}}}", "").with_namespaces(writer.reader());
    let pod = object("v1", "Pod", Some("a"), "p", 1, &[]);
    assert!(!s.admits(&pod));
    writer.upsert(object("v1", "Namespace", None, "a", 2, &[("enforce", "yes")]));
    assert!(s.admits(&pod));
}

#[test]
fn match_and_exclude_combine_every_field() {
    let s = scope(
        "{namespaces: [a, b], kinds: [Pod, apps/v1/Deployment]}",
        "{namespaces: [b], objectSelector: {matchLabels: {skip: 'true'}}}",
    );
    let obj =
        |kind: &str, v: &str, ns: &str, labels: &[(&str, &str)]| object(v, kind, Some(ns), "x", 1, labels);
    assert!(
        s.admits(&obj("Pod", "v1", "a", &[("skip", "true")])),
        "exclude needs both its fields"
    );
    assert!(s.admits(&obj("Pod", "v1", "b", &[])));
    assert!(!s.admits(&obj("Pod", "v1", "b", &[("skip", "true")])));
    assert!(!s.admits(&obj("Pod", "v1", "c", &[])));
    assert!(!s.admits(&obj("ConfigMap", "v1", "a", &[])));
    assert!(s.admits(&obj("Deployment", "apps/v1", "a", &[])));
    // A namespace alone: the exclude needs labels, so it cannot exclude b.
    assert!(s.admits_namespace("v1", "Pod", "b"));
    assert!(!s.admits_namespace("v1", "Pod", "c"));
    let ex = scope("", "{namespaces: [kube-system]}");
    assert!(!ex.admits(&obj("Pod", "v1", "kube-system", &[])));
    assert!(ex.admits(&obj("Pod", "v1", "default", &[])));
    assert!(
        Scope::new(None, Some(&Selection::default())).is_none(),
        "nothing to narrow"
    );
}

#[test]
fn a_cell_without_a_scope_admits_everything() {
    let cell = ScopeCell::default();
    let pod = object("v1", "Pod", Some("a"), "p", 1, &[]);
    assert!(cell.admits(&pod));
    cell.set(Some(scope("{namespaces: [b]}", "")));
    assert!(!cell.admits(&pod));
}
