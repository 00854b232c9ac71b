//! Events in two API groups over one storage. kube-apiserver keeps one
//! Event and serves it as core `v1` (`/api/v1/.../events`) and as
//! `events.k8s.io/v1` (`/apis/events.k8s.io/v1/.../events`): same name,
//! uid and resourceVersion, one watch history. The simulator stores the
//! core `v1` form (the `events` table) and converts at the edges, with the
//! field mapping of Kubernetes' `pkg/apis/events/v1` conversion:
//! regarding ↔ involvedObject, note ↔ message, reportingController ↔
//! reportingComponent, deprecatedSource ↔ source, deprecatedFirstTimestamp /
//! deprecatedLastTimestamp / deprecatedCount ↔ firstTimestamp /
//! lastTimestamp / count; eventTime, series, related, action, reason, type
//! and reportingInstance keep their names. Either form is written as the
//! real server serializes its Go type: a field without `omitempty` is always
//! there (`eventTime: null`, `source: {}`, `reportingComponent: ""`), an
//! empty one with it is left out.
//!
//! Field selectors match the event strategy's selectable fields
//! (`pkg/registry/core/event/strategy.go`: `source` is the source's
//! component, or the reporting controller when that is empty), named the
//! core way or, through events.k8s.io, the events.k8s.io way (its field
//! label conversion maps `regarding.*` and `reportingController` onto them).
//!
//! Owns: the conversion, the stored form, the selectable fields and the
//! field labels of events.k8s.io. Must not touch: the store, HTTP, tables.

use super::resources::ResourceDef;
use serde_json::{Map, Value, json};

/// The API group of the newer Events API.
pub const GROUP: &str = "events.k8s.io";
/// The `apiVersion` Events are read as through [`GROUP`].
pub const API_VERSION: &str = "events.k8s.io/v1";

/// Fields renamed between the versions: (core v1, events.k8s.io/v1).
const RENAMED: [(&str, &str); 7] = [
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("reportingComponent", "reportingController"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
];

/// Fields both versions name alike (besides apiVersion and kind).
const SHARED: [&str; 8] = [
    "metadata",
    "reason",
    "type",
    "eventTime",
    "series",
    "action",
    "related",
    "reportingInstance",
];

/// How a field of one version is serialized.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    /// `omitempty` string, number, pointer: left out when empty.
    Omitted,
    /// A struct (an ObjectReference or EventSource): always there, `{}` when
    /// empty, its own empty fields left out.
    Struct,
    /// A `metav1.Time`/`MicroTime` without a value: `null`.
    Time,
    /// A string without `omitempty`: `""` when empty.
    Text,
}

/// The fields of core v1 Event that are always serialized.
const CORE_SHAPES: [(&str, Shape); 7] = [
    ("involvedObject", Shape::Struct),
    ("source", Shape::Struct),
    ("firstTimestamp", Shape::Time),
    ("lastTimestamp", Shape::Time),
    ("eventTime", Shape::Time),
    ("reportingComponent", Shape::Text),
    ("reportingInstance", Shape::Text),
];

/// The fields of events.k8s.io/v1 Event that are always serialized.
const EVENTS_SHAPES: [(&str, Shape); 5] = [
    ("regarding", Shape::Struct),
    ("deprecatedSource", Shape::Struct),
    ("deprecatedFirstTimestamp", Shape::Time),
    ("deprecatedLastTimestamp", Shape::Time),
    ("eventTime", Shape::Time),
];

/// Field labels of events.k8s.io/v1 Events besides metadata.name and
/// metadata.namespace (its field label conversion function's keys).
pub const EVENTS_FIELD_LABELS: &[&str] = &[
    "regarding.kind",
    "regarding.namespace",
    "regarding.name",
    "regarding.uid",
    "regarding.apiVersion",
    "regarding.resourceVersion",
    "regarding.fieldPath",
    "reason",
    "reportingController",
    "source",
    "type",
];

/// The fields of an ObjectReference a field selector can name.
const REFERENCE_FIELDS: [&str; 7] = [
    "kind",
    "namespace",
    "name",
    "uid",
    "apiVersion",
    "resourceVersion",
    "fieldPath",
];

/// Whether `def` is the core `v1` Event type.
pub fn is_core(def: &ResourceDef) -> bool {
    def.crd.is_none() && def.group.is_empty() && def.plural == "events"
}

/// Whether `def` is the events.k8s.io Event type (stored as core Events).
pub fn is_events_group(def: &ResourceDef) -> bool {
    def.crd.is_none() && def.group == GROUP && def.plural == "events"
}

/// Whether `def` is an Event type of either group.
pub fn is_event(def: &ResourceDef) -> bool {
    is_core(def) || is_events_group(def)
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Bool(b) => !b,
        Value::Object(_) | Value::Array(_) => false,
    }
}

/// A struct field as Go writes it: its empty `omitempty` fields left out.
fn compact_struct(v: Option<&Value>) -> Value {
    let mut out = Map::new();
    if let Some(Value::Object(m)) = v {
        for (k, x) in m {
            if !is_empty(x) {
                out.insert(k.clone(), x.clone());
            }
        }
    }
    Value::Object(out)
}

/// Shape `o`'s known fields as the Go type of `shapes` serializes them;
/// `known` lists every field of that type (others are left alone).
fn serialize(o: &mut Map<String, Value>, shapes: &[(&str, Shape)], known: &[&str]) {
    for f in known {
        let shape = shapes
            .iter()
            .find(|(n, _)| n == f)
            .map_or(Shape::Omitted, |(_, s)| *s);
        let v = o.remove(*f);
        let out = match shape {
            Shape::Omitted => v.filter(|x| !is_empty(x)),
            Shape::Struct => Some(compact_struct(v.as_ref())),
            Shape::Time => Some(v.filter(|x| !is_empty(x)).unwrap_or(Value::Null)),
            Shape::Text => Some(v.filter(|x| !x.is_null()).unwrap_or(json!(""))),
        };
        if let Some(x) = out {
            o.insert(f.to_string(), x);
        }
    }
}

fn core_fields() -> Vec<&'static str> {
    RENAMED.iter().map(|(c, _)| *c).chain(SHARED).collect()
}

fn events_fields() -> Vec<&'static str> {
    RENAMED.iter().map(|(_, e)| *e).chain(SHARED).collect()
}

/// A core v1 Event as the real server writes it (the stored form);
/// fields it does not know are kept, as the simulator keeps them elsewhere.
pub fn normalize_core(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        serialize(o, &CORE_SHAPES, &core_fields());
    }
    v
}

/// An events.k8s.io/v1 Event (a request body) as the core v1 Event it is
/// stored as; fields events.k8s.io/v1 does not have are dropped, as the
/// real server's decoder drops them.
pub fn to_core(v: &Value) -> Value {
    let mut out = Map::new();
    for (core, events) in RENAMED {
        if let Some(x) = v.get(events) {
            out.insert(core.to_string(), x.clone());
        }
    }
    for f in SHARED {
        if let Some(x) = v.get(f) {
            out.insert(f.to_string(), x.clone());
        }
    }
    out.insert("apiVersion".into(), json!("v1"));
    out.insert("kind".into(), json!("Event"));
    normalize_core(Value::Object(out))
}

/// A stored (core v1) Event as events.k8s.io/v1 serves it.
pub fn from_core(v: &Value) -> Value {
    let mut out = Map::new();
    out.insert("kind".into(), json!("Event"));
    out.insert("apiVersion".into(), json!(API_VERSION));
    for (core, events) in RENAMED {
        if let Some(x) = v.get(core) {
            out.insert(events.to_string(), x.clone());
        }
    }
    for f in SHARED {
        if let Some(x) = v.get(f) {
            out.insert(f.to_string(), x.clone());
        }
    }
    serialize(&mut out, &EVENTS_SHAPES, &events_fields());
    Value::Object(out)
}

/// A request body of `def` in the stored form: events.k8s.io Events become core ones, core Events are
/// serialized as the real server does; anything else is unchanged.
pub fn to_storage(def: &ResourceDef, body: Value) -> Value {
    if is_events_group(def) {
        to_core(&body)
    } else if is_core(def) {
        normalize_core(body)
    } else {
        body
    }
}

/// The apiVersion an object of `def` written through `api_version` is
/// stored under (`v1` for Events of either group).
pub fn stored_api_version<'a>(def: &ResourceDef, api_version: &'a str) -> &'a str {
    match is_events_group(def) {
        true => "v1",
        false => api_version,
    }
}

/// A stored object as read through `api_version`: a core Event read as
/// events.k8s.io/v1 converted, anything else relabelled.
pub fn as_version(v: &Value, api_version: &str) -> Value {
    let stored_core = v.get("apiVersion").and_then(Value::as_str) == Some("v1");
    if api_version == API_VERSION && stored_core && v.get("kind").and_then(Value::as_str) == Some("Event") {
        return from_core(v);
    }
    let mut out = v.clone();
    out["apiVersion"] = json!(api_version);
    out
}

/// A core v1 view of an Event in either form (what the printers read).
pub fn core_view(v: &Value) -> std::borrow::Cow<'_, Value> {
    match v.get("apiVersion").and_then(Value::as_str) {
        Some(API_VERSION) => std::borrow::Cow::Owned(to_core(v)),
        _ => std::borrow::Cow::Borrowed(v),
    }
}

fn text(v: &Value, ptr: &str) -> String {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("").to_string()
}

/// The selectable fields of a stored Event, named as core v1 names them
/// (`EventToSelectableFields`), as a JSON object a field selector reads.
pub fn core_selectable(v: &Value) -> Value {
    let reference: Map<String, Value> = REFERENCE_FIELDS
        .iter()
        .map(|f| (f.to_string(), json!(text(v, &format!("/involvedObject/{f}")))))
        .collect();
    let controller = text(v, "/reportingComponent");
    let source = match text(v, "/source/component") {
        c if c.is_empty() => controller.clone(),
        c => c,
    };
    json!({
        "metadata": {"name": text(v, "/metadata/name"), "namespace": text(v, "/metadata/namespace")},
        "involvedObject": reference,
        "reason": text(v, "/reason"),
        "reportingComponent": controller,
        "source": source,
        "type": text(v, "/type"),
    })
}

/// The same fields under events.k8s.io's label names (its field label
/// conversion maps these onto the core ones).
pub fn events_selectable(v: &Value) -> Value {
    let mut s = core_selectable(v);
    let o = s.as_object_mut().expect("object");
    for (core, events) in [
        ("involvedObject", "regarding"),
        ("reportingComponent", "reportingController"),
    ] {
        if let Some(x) = o.remove(core) {
            o.insert(events.into(), x);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;

    fn recorded() -> Value {
        json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "web.1", "namespace": "team"},
            "eventTime": "2026-01-01T00:00:00.000001Z",
            "reportingController": "wink.dev/require-labels", "reportingInstance": "wink-require-labels",
            "action": "Check", "reason": "MissingLabels", "note": "needs team", "type": "Warning",
            "regarding": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "team",
                "name": "web", "uid": "u-1", "resourceVersion": "7", "fieldPath": null},
            "series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:01.000000Z"},
            "unknown": true,
        })
    }

    #[test]
    fn events_k8s_io_is_stored_as_core_with_the_real_mapping() {
        let core = to_core(&recorded());
        assert_eq!(
            core,
            json!({
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": "web.1", "namespace": "team"},
                "involvedObject": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "team",
                    "name": "web", "uid": "u-1", "resourceVersion": "7"},
                "message": "needs team", "reason": "MissingLabels", "type": "Warning", "action": "Check",
                "reportingComponent": "wink.dev/require-labels", "reportingInstance": "wink-require-labels",
                "eventTime": "2026-01-01T00:00:00.000001Z",
                "series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:01.000000Z"},
                "source": {}, "firstTimestamp": null, "lastTimestamp": null,
            })
        );
        let mut back = recorded();
        back.as_object_mut().unwrap().remove("unknown");
        back["regarding"].as_object_mut().unwrap().remove("fieldPath");
        back["deprecatedSource"] = json!({});
        back["deprecatedFirstTimestamp"] = Value::Null;
        back["deprecatedLastTimestamp"] = Value::Null;
        assert_eq!(from_core(&core), back, "a round trip keeps every field");
    }

    #[test]
    fn core_events_read_through_events_k8s_io() {
        let core = normalize_core(json!({
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": "x", "namespace": "d"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "d"},
            "reason": "Pulled", "message": "pulled", "count": 3, "type": "",
            "source": {"component": "kubelet", "host": "node-1"},
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:01:00Z",
        }));
        assert_eq!(core["eventTime"], Value::Null);
        assert_eq!(
            (&core["reportingComponent"], &core["reportingInstance"]),
            (&json!(""), &json!(""))
        );
        assert!(core.get("type").is_none(), "an empty omitempty field is left out");
        let ev = as_version(&core, API_VERSION);
        assert_eq!(ev["apiVersion"], API_VERSION);
        assert_eq!(ev["note"], "pulled");
        assert_eq!(ev["regarding"]["name"], "p");
        assert_eq!(
            ev["deprecatedSource"],
            json!({"component": "kubelet", "host": "node-1"})
        );
        assert_eq!(ev["deprecatedCount"], 3);
        assert_eq!(ev["deprecatedFirstTimestamp"], "2026-01-01T00:00:00Z");
        assert_eq!(ev["eventTime"], Value::Null);
        for absent in [
            "reportingController",
            "reportingInstance",
            "message",
            "involvedObject",
            "count",
        ] {
            assert!(ev.get(absent).is_none(), "{absent}");
        }
        assert_eq!(as_version(&core, "v1"), core);
        assert_eq!(core_view(&ev).as_ref(), &core, "printers read either form");
    }

    #[test]
    fn selectable_fields_follow_the_event_strategy() {
        let core = to_core(&recorded());
        let s = core_selectable(&core);
        assert_eq!(s["involvedObject"]["uid"], "u-1");
        assert_eq!(s["involvedObject"]["fieldPath"], "");
        assert_eq!(s["reportingComponent"], "wink.dev/require-labels");
        assert_eq!(
            s["source"], "wink.dev/require-labels",
            "no source: the controller"
        );
        let e = events_selectable(&core);
        assert_eq!(e["regarding"]["kind"], "Deployment");
        assert_eq!(e["reportingController"], "wink.dev/require-labels");
        assert!(e.get("involvedObject").is_none());
        let mut kubelet = core.clone();
        kubelet["source"] = json!({"component": "kubelet"});
        assert_eq!(core_selectable(&kubelet)["source"], "kubelet");
    }

    #[test]
    fn only_the_event_types_convert() {
        let r = Registry::with_builtins();
        let core = r.get("events").unwrap();
        let events = r.by_path(GROUP, "v1", "events").unwrap();
        assert!(is_core(core) && !is_events_group(core));
        assert!(is_events_group(&events) && !is_core(&events));
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"message": ""}});
        assert_eq!(to_storage(r.get("configmaps").unwrap(), cm.clone()), cm);
        assert_eq!(to_storage(&events, recorded())["message"], "needs team");
    }
}
