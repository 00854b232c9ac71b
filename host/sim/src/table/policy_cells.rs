//! The cells of the table rows of the kinds policies target beyond
//! workloads (Ingresses, NetworkPolicies, HorizontalPodAutoscalers, Jobs,
//! CronJobs, EndpointSlices, PersistentVolumeClaims, ResourceQuotas,
//! StorageClasses, PriorityClasses, ValidatingAdmissionPolicies and their
//! bindings), read from the objects as kube-apiserver's printers read
//! them (`pkg/printers/internalversion/printers.go`), with its server-side
//! (wide) options: nothing is clipped.
//!
//! Owns: reading these cells. Must not touch: the column lists
//! (`policy_printers`) or the Table shape.

use super::cells::{containers_and_images, created, list, n, or_none, s};
use super::{age, human_duration};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

/// `a,b,c + N more...` of at most `max` items of `count`; `<unset>` when
/// there are none (the printers' `listWithMoreString`).
fn with_more(items: &[String], count: usize, max: usize) -> String {
    let shown = items.iter().take(max).cloned().collect::<Vec<_>>().join(",");
    match (count > max, shown.is_empty()) {
        (true, _) => format!("{shown} + {} more...", count - max),
        (false, true) => "<unset>".into(),
        (false, false) => shown,
    }
}

/// A label selector as `labels.Selector.String()` writes it: requirements
/// sorted by key (`k=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`); None
/// for an absent selector (which selects nothing).
pub fn selector(sel: Option<&Value>) -> Option<String> {
    let sel = sel.filter(|v| v.is_object())?;
    let mut reqs: Vec<(String, String)> = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), format!("{k}={}", v.as_str().unwrap_or(""))))
        .collect();
    for e in list(sel, "/matchExpressions") {
        let key = s(e, "/key");
        let mut values: Vec<&str> = list(e, "/values").iter().filter_map(Value::as_str).collect();
        values.sort();
        let values = values.join(",");
        let text = match s(e, "/operator") {
            "In" => format!("{key} in ({values})"),
            "NotIn" => format!("{key} notin ({values})"),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => continue,
        };
        reqs.push((key.to_string(), text));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    Some(reqs.into_iter().map(|r| r.1).collect::<Vec<_>>().join(","))
}

/// `metav1.FormatLabelSelector`: `<none>` for a selector that says nothing.
fn format_selector(sel: Option<&Value>) -> Value {
    or_none(&selector(sel).unwrap_or_default())
}

/// The wide columns of a pod template: container names, images, selector.
fn template_cells(o: &Value, template: &str, sel: &str) -> [Value; 3] {
    let [c, i] = containers_and_images(o, &format!("{template}/spec/containers"));
    let sel = selector(o.pointer(sel)).unwrap_or_else(|| "<none>".to_string());
    [c, i, json!(sel)]
}

pub fn ingress_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let class = o
        .pointer("/spec/ingressClassName")
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    // The first three hosts, and how many rules follow the rule that
    // would have given a fourth (`formatHosts`).
    let rules = list(o, "/spec/rules");
    let (mut hosts, mut more) = (Vec::new(), false);
    for r in rules {
        more |= hosts.len() == 3;
        if !more && !s(r, "/host").is_empty() {
            hosts.push(s(r, "/host"));
        }
    }
    let hosts = match (hosts.is_empty(), more) {
        (true, _) => "*".to_string(),
        (false, false) => hosts.join(","),
        (false, true) => format!("{} + {} more...", hosts.join(","), rules.len() - 3),
    };
    let mut addresses: Vec<&str> = list(o, "/status/loadBalancer/ingress")
        .iter()
        .map(|i| match s(i, "/ip") {
            "" => s(i, "/hostname"),
            ip => ip,
        })
        .filter(|a| !a.is_empty())
        .collect();
    addresses.sort();
    addresses.dedup();
    let ports = match list(o, "/spec/tls").is_empty() {
        true => "80",
        false => "80, 443",
    };
    vec![
        json!(class),
        json!(hosts),
        json!(addresses.join(",")),
        json!(ports),
        created(o, now),
    ]
}

pub fn ingress_class_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let parameters = match o.pointer("/spec/parameters").filter(|p| p.is_object()) {
        None => "<none>".to_string(),
        Some(p) => match s(p, "/apiGroup") {
            "" if p.get("apiGroup").is_none() => format!("{}/{}", s(p, "/kind"), s(p, "/name")),
            g => format!("{}.{g}/{}", s(p, "/kind"), s(p, "/name")),
        },
    };
    vec![
        json!(s(o, "/spec/controller")),
        json!(parameters),
        created(o, now),
    ]
}

pub fn network_policy_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![format_selector(o.pointer("/spec/podSelector")), created(o, now)]
}

/// A quantity as its JSON value reads (a string, or a number sent bare).
fn quantity(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(q)) => q.clone(),
        Some(Value::Number(q)) => q.to_string(),
        _ => "0".into(),
    }
}

/// One metric of an HPA as `current/target` (`formatHPAMetrics`).
fn hpa_metric(spec: &Value, status: Option<&Value>) -> String {
    let ty = s(spec, "/type");
    let key = |t: &str| {
        let mut c = t.chars();
        c.next()
            .map(|f| f.to_ascii_lowercase().to_string() + c.as_str())
            .unwrap_or_default()
    };
    let source = spec.get(key(ty)).unwrap_or(&Value::Null);
    let current = status.and_then(|st| st.get(key(ty))).filter(|c| !c.is_null());
    let unknown = || "<unknown>".to_string();
    let average = source.pointer("/target/averageValue").filter(|v| !v.is_null());
    match ty {
        "External" | "Object" => match average {
            Some(avg) => {
                let cur = current
                    .and_then(|c| c.pointer("/current/averageValue"))
                    .map_or_else(unknown, |v| quantity(Some(v)));
                format!("{cur}/{} (avg)", quantity(Some(avg)))
            }
            None => {
                let cur = current.map_or_else(unknown, |c| quantity(c.pointer("/current/value")));
                format!("{cur}/{}", quantity(source.pointer("/target/value")))
            }
        },
        "Pods" => {
            let cur = current.map_or_else(unknown, |c| quantity(c.pointer("/current/averageValue")));
            format!("{cur}/{}", quantity(source.pointer("/target/averageValue")))
        }
        "Resource" | "ContainerResource" => {
            let name = s(source, "/name");
            match average {
                Some(avg) => {
                    let cur = current.map_or_else(unknown, |c| quantity(c.pointer("/current/averageValue")));
                    format!("{name}: {cur}/{}", quantity(Some(avg)))
                }
                None => {
                    let cur = current
                        .and_then(|c| c.pointer("/current/averageUtilization"))
                        .and_then(Value::as_i64)
                        .map_or_else(unknown, |u| format!("{u}%"));
                    let target = source
                        .pointer("/target/averageUtilization")
                        .and_then(Value::as_i64)
                        .map_or_else(|| "<auto>".to_string(), |u| format!("{u}%"));
                    format!("{name}: {cur}/{target}")
                }
            }
        }
        _ => "<unknown type>".into(),
    }
}

pub fn hpa_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let specs = list(o, "/spec/metrics");
    let statuses = list(o, "/status/currentMetrics");
    let metrics = match specs.len() {
        0 => "<none>".to_string(),
        count => {
            let shown: Vec<String> = specs
                .iter()
                .take(2)
                .enumerate()
                .map(|(i, m)| hpa_metric(m, statuses.get(i)))
                .collect();
            match count > 2 {
                true => format!("{} + {} more...", shown.join(", "), count - 2),
                false => shown.join(", "),
            }
        }
    };
    let min = match o.pointer("/spec/minReplicas").and_then(Value::as_i64) {
        Some(m) => m.to_string(),
        None => "<unset>".into(),
    };
    vec![
        json!(format!(
            "{}/{}",
            s(o, "/spec/scaleTargetRef/kind"),
            s(o, "/spec/scaleTargetRef/name")
        )),
        json!(metrics),
        json!(min),
        json!(n(o, "/spec/maxReplicas")),
        json!(n(o, "/status/currentReplicas")),
        created(o, now),
    ]
}

fn has_condition(o: &Value, ty: &str) -> bool {
    list(o, "/status/conditions")
        .iter()
        .any(|c| c["type"] == ty && c["status"] == "True")
}

fn time(o: &Value, ptr: &str) -> Option<DateTime<Utc>> {
    let t = o.pointer(ptr)?.as_str()?;
    Some(DateTime::parse_from_rfc3339(t).ok()?.with_timezone(&Utc))
}

pub fn job_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let succeeded = n(o, "/status/succeeded");
    let completions = match o.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(c) => format!("{succeeded}/{c}"),
        None => match n(o, "/spec/parallelism") {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let duration = match (time(o, "/status/startTime"), time(o, "/status/completionTime")) {
        (None, _) => String::new(),
        (Some(start), None) => human_duration((now - start).num_seconds()),
        (Some(start), Some(end)) => human_duration((end - start).num_seconds()),
    };
    let status = if has_condition(o, "Complete") {
        "Complete"
    } else if has_condition(o, "Failed") {
        "Failed"
    } else if o.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else if has_condition(o, "Suspended") {
        "Suspended"
    } else if has_condition(o, "FailureTarget") {
        "FailureTarget"
    } else if has_condition(o, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    };
    let mut cells = vec![
        json!(status),
        json!(completions),
        json!(duration),
        created(o, now),
    ];
    cells.extend(template_cells(o, "/spec/template", "/spec/selector"));
    cells
}

pub fn cronjob_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let suspend = match o.pointer("/spec/suspend").and_then(Value::as_bool) {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    };
    let last = match o.pointer("/status/lastScheduleTime").filter(|t| !t.is_null()) {
        Some(t) => age(Some(t), now),
        None => "<none>".into(),
    };
    let zone = o
        .pointer("/spec/timeZone")
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    let mut cells = vec![
        json!(s(o, "/spec/schedule")),
        json!(zone),
        json!(suspend),
        json!(list(o, "/status/active").len()),
        json!(last),
        created(o, now),
    ];
    cells.extend(template_cells(
        o,
        "/spec/jobTemplate/spec/template",
        "/spec/jobTemplate/spec/selector",
    ));
    cells
}

pub fn endpoint_slice_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let ports: Vec<String> = list(o, "/ports")
        .iter()
        .map(|p| {
            match (
                p.get("port").and_then(Value::as_i64),
                p.get("name").and_then(Value::as_str),
            ) {
                (Some(port), _) => port.to_string(),
                (None, Some(name)) => name.to_string(),
                (None, None) => "*".to_string(),
            }
        })
        .collect();
    let addresses: Vec<String> = list(o, "/endpoints")
        .iter()
        .flat_map(|e| list(e, "/addresses"))
        .map(|a| a.as_str().unwrap_or("").to_string())
        .collect();
    vec![
        json!(s(o, "/addressType")),
        json!(with_more(&ports, ports.len(), 3)),
        json!(with_more(&addresses, addresses.len(), 3)),
        created(o, now),
    ]
}

pub fn pvc_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let phase = match o.pointer("/metadata/deletionTimestamp") {
        Some(_) => "Terminating",
        None => s(o, "/status/phase"),
    };
    let volume = s(o, "/spec/volumeName");
    let (capacity, modes) = match volume {
        "" => (String::new(), String::new()),
        _ => {
            let have: Vec<&str> = list(o, "/status/accessModes")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            let modes: Vec<&str> = [
                ("ReadWriteOnce", "RWO"),
                ("ReadOnlyMany", "ROX"),
                ("ReadWriteMany", "RWX"),
                ("ReadWriteOncePod", "RWOP"),
            ]
            .iter()
            .filter(|(m, _)| have.contains(m))
            .map(|(_, short)| *short)
            .collect();
            (quantity(o.pointer("/status/capacity/storage")), modes.join(","))
        }
    };
    let class = match s(
        o,
        "/metadata/annotations/volume.beta.kubernetes.io~1storage-class",
    ) {
        "" => s(o, "/spec/storageClassName"),
        c => c,
    };
    let attributes = match s(o, "/spec/volumeAttributesClassName") {
        "" => "<unset>",
        c => c,
    };
    let mode = o
        .pointer("/spec/volumeMode")
        .and_then(Value::as_str)
        .unwrap_or("<unset>");
    vec![
        json!(phase),
        json!(volume),
        json!(capacity),
        json!(modes),
        json!(class),
        json!(attributes),
        created(o, now),
        json!(mode),
    ]
}

pub fn resource_quota_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let hard = o.pointer("/status/hard").and_then(Value::as_object);
    let mut names: Vec<&String> = hard.into_iter().flat_map(|h| h.keys()).collect();
    names.sort();
    let (mut requests, mut limits) = (Vec::new(), Vec::new());
    for name in names {
        let used = quantity(o.pointer("/status/used").and_then(|u| u.get(name.as_str())));
        let text = format!(
            "{name}: {used}/{}",
            quantity(hard.and_then(|h| h.get(name.as_str())))
        );
        match name.split('.').collect::<Vec<_>>()[..] {
            ["limits", _, ..] => limits.push(text),
            _ => requests.push(text),
        }
    }
    vec![
        json!(requests.join(", ")),
        json!(limits.join(", ")),
        created(o, now),
    ]
}

/// A StorageClass's name, marked when it is the cluster's default.
pub fn storage_class_name(o: &Value) -> String {
    let name = s(o, "/metadata/name");
    let default = [
        "/metadata/annotations/storageclass.kubernetes.io~1is-default-class",
        "/metadata/annotations/storageclass.beta.kubernetes.io~1is-default-class",
    ]
    .iter()
    .any(|p| s(o, p) == "true");
    match default {
        true => format!("{name} (default)"),
        false => name.to_string(),
    }
}

pub fn storage_class_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let or = |p: &str, d: &'static str| o.pointer(p).and_then(Value::as_str).unwrap_or(d).to_string();
    vec![
        json!(s(o, "/provisioner")),
        json!(or("/reclaimPolicy", "Delete")),
        json!(or("/volumeBindingMode", "Immediate")),
        json!(
            o.get("allowVolumeExpansion")
                .and_then(Value::as_bool)
                .unwrap_or(false)
        ),
        created(o, now),
    ]
}

pub fn priority_class_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        json!(n(o, "/value")),
        json!(o.get("globalDefault").and_then(Value::as_bool).unwrap_or(false)),
        created(o, now),
        json!(
            o.get("preemptionPolicy")
                .and_then(Value::as_str)
                .unwrap_or("<unset>")
        ),
    ]
}

pub fn admission_policy_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let param_kind = match o.pointer("/spec/paramKind").filter(|p| p.is_object()) {
        Some(p) => format!("{}/{}", s(p, "/apiVersion"), s(p, "/kind")),
        None => "<unset>".into(),
    };
    vec![
        json!(list(o, "/spec/validations").len()),
        json!(param_kind),
        created(o, now),
    ]
}

pub fn admission_policy_binding_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let param = match o.pointer("/spec/paramRef").filter(|p| p.is_object()) {
        None => "<unset>".to_string(),
        Some(p) => match (s(p, "/name"), s(p, "/namespace")) {
            ("", _) => selector(p.get("selector")).unwrap_or_else(|| "<unset>".into()),
            (name, "") => format!("*/{name}"),
            (name, ns) => format!("{ns}/{name}"),
        },
    };
    vec![json!(s(o, "/spec/policyName")), json!(param), created(o, now)]
}
