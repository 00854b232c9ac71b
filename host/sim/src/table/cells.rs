//! The cells of the built-in types' table rows, read from the objects as
//! the real printers read them (pod readiness and status reason, workload
//! replica counts, service ports, node roles, event sources).
//!
//! Owns: reading cells. Must not touch: the column lists (`printers`) or
//! the Table shape.

use super::age;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

pub(super) fn s<'a>(o: &'a Value, ptr: &str) -> &'a str {
    o.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

pub(super) fn n(o: &Value, ptr: &str) -> i64 {
    o.pointer(ptr).and_then(Value::as_i64).unwrap_or(0)
}

pub(super) fn list<'a>(o: &'a Value, ptr: &str) -> &'a [Value] {
    o.pointer(ptr)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

pub(super) fn or_none(v: &str) -> Value {
    json!(if v.is_empty() { "<none>" } else { v })
}

pub(super) fn created(o: &Value, now: DateTime<Utc>) -> Value {
    json!(age(o.pointer("/metadata/creationTimestamp"), now))
}

/// `k=v,k2=v2` of a map (a label selector's matchLabels, a node selector).
fn pairs(o: Option<&Value>) -> String {
    o.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

pub(super) fn containers_and_images(o: &Value, ptr: &str) -> [Value; 2] {
    let cs = list(o, ptr);
    let names: Vec<&str> = cs.iter().map(|c| s(c, "/name")).collect();
    let images: Vec<&str> = cs.iter().map(|c| s(c, "/image")).collect();
    [or_none(&names.join(",")), or_none(&images.join(","))]
}

pub fn pod_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let total = list(o, "/spec/containers").len();
    let statuses = list(o, "/status/containerStatuses");
    let ready = statuses.iter().filter(|c| c["ready"] == true).count();
    let restarts: i64 = statuses.iter().map(|c| n(c, "/restartCount")).sum();
    let mut reason = match s(o, "/status/reason") {
        "" => s(o, "/status/phase").to_string(),
        r => r.to_string(),
    };
    for c in statuses {
        let waiting = s(c, "/state/waiting/reason");
        let terminated = s(c, "/state/terminated/reason");
        if !waiting.is_empty() {
            reason = waiting.to_string();
        } else if !terminated.is_empty() {
            reason = terminated.to_string();
        }
    }
    if o.pointer("/metadata/deletionTimestamp").is_some() {
        reason = "Terminating".into();
    }
    let gates = list(o, "/spec/readinessGates");
    let gates = match gates.len() {
        0 => String::new(),
        g => format!("0/{g}"),
    };
    vec![
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts.to_string()),
        created(o, now),
        or_none(s(o, "/status/podIP")),
        or_none(s(o, "/spec/nodeName")),
        or_none(s(o, "/status/nominatedNodeName")),
        or_none(&gates),
    ]
}

pub fn deployment_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let [c, i] = containers_and_images(o, "/spec/template/spec/containers");
    vec![
        json!(format!(
            "{}/{}",
            n(o, "/status/readyReplicas"),
            n(o, "/spec/replicas")
        )),
        json!(n(o, "/status/updatedReplicas")),
        json!(n(o, "/status/availableReplicas")),
        created(o, now),
        c,
        i,
        or_none(&pairs(o.pointer("/spec/selector/matchLabels"))),
    ]
}

pub fn replicaset_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let [c, i] = containers_and_images(o, "/spec/template/spec/containers");
    vec![
        json!(n(o, "/spec/replicas")),
        json!(n(o, "/status/replicas")),
        json!(n(o, "/status/readyReplicas")),
        created(o, now),
        c,
        i,
        or_none(&pairs(o.pointer("/spec/selector/matchLabels"))),
    ]
}

pub fn statefulset_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let [c, i] = containers_and_images(o, "/spec/template/spec/containers");
    vec![
        json!(format!(
            "{}/{}",
            n(o, "/status/readyReplicas"),
            n(o, "/spec/replicas")
        )),
        created(o, now),
        c,
        i,
    ]
}

pub fn daemonset_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let [c, i] = containers_and_images(o, "/spec/template/spec/containers");
    vec![
        json!(n(o, "/status/desiredNumberScheduled")),
        json!(n(o, "/status/currentNumberScheduled")),
        json!(n(o, "/status/numberReady")),
        json!(n(o, "/status/updatedNumberScheduled")),
        json!(n(o, "/status/numberAvailable")),
        or_none(&pairs(o.pointer("/spec/template/spec/nodeSelector"))),
        created(o, now),
        c,
        i,
        or_none(&pairs(o.pointer("/spec/selector/matchLabels"))),
    ]
}

pub fn namespace_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![json!(s(o, "/status/phase")), created(o, now)]
}

fn data_count(o: &Value) -> usize {
    let len = |k: &str| o.get(k).and_then(Value::as_object).map_or(0, |m| m.len());
    len("data") + len("binaryData")
}

pub fn configmap_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![json!(data_count(o)), created(o, now)]
}

pub fn secret_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let data = o.get("data").and_then(Value::as_object).map_or(0, |m| m.len());
    vec![json!(s(o, "/type")), json!(data), created(o, now)]
}

pub fn service_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let ty = s(o, "/spec/type");
    let external: Vec<String> = list(o, "/status/loadBalancer/ingress")
        .iter()
        .map(|i| match s(i, "/ip") {
            "" => s(i, "/hostname").to_string(),
            ip => ip.to_string(),
        })
        .chain(
            list(o, "/spec/externalIPs")
                .iter()
                .map(|v| v.as_str().unwrap_or("").to_string()),
        )
        .collect();
    let external = match (ty, external.is_empty()) {
        ("ExternalName", _) => s(o, "/spec/externalName").to_string(),
        ("LoadBalancer", true) => "<pending>".to_string(),
        (_, false) => external.join(","),
        _ => String::new(),
    };
    let ports: Vec<String> = list(o, "/spec/ports")
        .iter()
        .map(|p| {
            let proto = match s(p, "/protocol") {
                "" => "TCP",
                x => x,
            };
            match n(p, "/nodePort") {
                0 => format!("{}/{proto}", n(p, "/port")),
                np => format!("{}:{np}/{proto}", n(p, "/port")),
            }
        })
        .collect();
    vec![
        json!(ty),
        or_none(s(o, "/spec/clusterIP")),
        or_none(&external),
        or_none(&ports.join(",")),
        created(o, now),
        or_none(&pairs(o.pointer("/spec/selector"))),
    ]
}

pub fn node_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let ready = list(o, "/status/conditions")
        .iter()
        .find(|c| c["type"] == "Ready")
        .map(|c| {
            if c["status"] == "True" {
                "Ready"
            } else {
                "NotReady"
            }
        })
        .unwrap_or("Unknown");
    let mut status = ready.to_string();
    if o.pointer("/spec/unschedulable") == Some(&json!(true)) {
        status.push_str(",SchedulingDisabled");
    }
    let labels = o.pointer("/metadata/labels").and_then(Value::as_object);
    let mut roles: Vec<&str> = labels
        .into_iter()
        .flatten()
        .filter_map(|(k, _)| k.strip_prefix("node-role.kubernetes.io/"))
        .collect();
    roles.sort();
    let address = |ty: &str| {
        list(o, "/status/addresses")
            .iter()
            .find(|a| a["type"] == ty)
            .map(|a| s(a, "/address"))
            .unwrap_or("")
    };
    vec![
        json!(status),
        or_none(&roles.join(",")),
        created(o, now),
        json!(s(o, "/status/nodeInfo/kubeletVersion")),
        or_none(address("InternalIP")),
        or_none(address("ExternalIP")),
        json!(s(o, "/status/nodeInfo/osImage")),
        json!(s(o, "/status/nodeInfo/kernelVersion")),
        json!(s(o, "/status/nodeInfo/containerRuntimeVersion")),
    ]
}

/// An Event of either group, read as the core printer reads it: first seen
/// is firstTimestamp or else eventTime, last seen lastTimestamp or else
/// first seen, a series' last observation and count win; the source is the
/// source's, or the reporting controller and instance.
pub fn event_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let o = crate::events::core_view(o);
    let o = o.as_ref();
    let time = |p: &str| o.pointer(p).filter(|v| v.as_str().is_some_and(|t| !t.is_empty()));
    let first = match time("/firstTimestamp") {
        Some(t) => age(Some(t), now),
        None => age(time("/eventTime"), now),
    };
    let mut last = match time("/lastTimestamp") {
        Some(t) => age(Some(t), now),
        None => first.clone(),
    };
    let mut count = n(o, "/count");
    if o.get("series").is_some_and(|v| !v.is_null()) {
        last = age(time("/series/lastObservedTime"), now);
        count = n(o, "/series/count");
    } else if count == 0 {
        count = 1; // singleton events of the newer API have no count
    }
    let (kind, name) = (s(o, "/involvedObject/kind"), s(o, "/involvedObject/name"));
    let object = match name {
        "" => kind.to_lowercase(),
        _ => format!("{}/{name}", kind.to_lowercase()),
    };
    let first_non_empty = |a: &'static str, b: &'static str| match s(o, a) {
        "" => s(o, b).to_string(),
        x => x.to_string(),
    };
    let source = match (
        first_non_empty("/source/component", "/reportingComponent"),
        first_non_empty("/source/host", "/reportingInstance"),
    ) {
        (c, h) if h.is_empty() => c,
        (c, h) => format!("{c}, {h}"),
    };
    vec![
        json!(last),
        json!(s(o, "/type")),
        json!(s(o, "/reason")),
        json!(object),
        json!(s(o, "/involvedObject/fieldPath")),
        json!(source),
        json!(s(o, "/message").trim()),
        json!(first),
        json!(count),
        json!(s(o, "/metadata/name")),
    ]
}

pub fn serviceaccount_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![json!(list(o, "/secrets").len()), created(o, now)]
}

pub fn webhook_configuration_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![json!(list(o, "/webhooks").len()), created(o, now)]
}

pub fn lease_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![or_none(s(o, "/spec/holderIdentity")), created(o, now)]
}

pub fn role_cells(o: &Value, _: DateTime<Utc>) -> Vec<Value> {
    vec![
        o.pointer("/metadata/creationTimestamp")
            .cloned()
            .unwrap_or(Value::Null),
    ]
}

pub fn binding_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let subjects = |kind: &str| {
        let names: Vec<String> = list(o, "/subjects")
            .iter()
            .filter(|x| x["kind"] == kind)
            .map(|x| match s(x, "/namespace") {
                "" => s(x, "/name").to_string(),
                ns => format!("{ns}/{}", s(x, "/name")),
            })
            .collect();
        json!(names.join(", "))
    };
    vec![
        json!(format!("{}/{}", s(o, "/roleRef/kind"), s(o, "/roleRef/name"))),
        created(o, now),
        subjects("User"),
        subjects("Group"),
        subjects("ServiceAccount"),
    ]
}

pub fn pdb_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let field = |k: &str| match o.pointer(&format!("/spec/{k}")) {
        Some(Value::String(v)) => json!(v),
        Some(Value::Number(v)) => json!(v.to_string()),
        _ => json!("N/A"),
    };
    vec![
        field("minAvailable"),
        field("maxUnavailable"),
        json!(n(o, "/status/disruptionsAllowed")),
        created(o, now),
    ]
}
