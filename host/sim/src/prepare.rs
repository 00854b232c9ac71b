//! What the real API server's per-type strategies (`PrepareForCreate`)
//! do to a new object before it is stored: the status it starts with (a
//! Pod Pending, a Namespace Active, a CRD's names accepted, the empty
//! status of the kinds whose Go type has a non-pointer status struct) and
//! the spec fields they set (a Secret's type, a Service's type and cluster
//! IP, a workload's replicas).
//!
//! Owns: these values. Must not touch: validation, the store, HTTP.

use super::meta::{fold_string_data, now};
use super::resources::ResourceDef;
use serde_json::{Value, json};

/// What the real per-type strategies do to a new object's status and spec.
pub fn for_create(def: &ResourceDef, body: &mut Value, crd: Option<&ResourceDef>, control_plane: bool) {
    let o = body.as_object_mut().expect("object");
    if def.has_status {
        o.remove("status");
    }
    if let Some(status) = super::defaults::status_on_create(def) {
        o.insert("status".into(), status);
    }
    if let Some(status) = empty_status(&def.group, &def.plural) {
        o.insert("status".into(), status);
    }
    match (def.group.as_str(), def.plural.as_str()) {
        ("", "pods") => {
            o.insert(
                "status".into(),
                json!({"phase": "Pending", "qosClass": "BestEffort"}),
            );
        }
        ("", "namespaces") => {
            o.insert("status".into(), json!({"phase": "Active"}));
            if control_plane {
                let spec = o.entry("spec").or_insert_with(|| json!({}));
                if spec.get("finalizers").is_none() {
                    spec["finalizers"] = json!(["kubernetes"]);
                }
            }
        }
        ("", "secrets") => {
            fold_string_data(body);
            if body.get("type").is_none() {
                body["type"] = json!("Opaque");
            }
        }
        ("", "services") => {
            let spec = body
                .as_object_mut()
                .expect("object")
                .entry("spec")
                .or_insert_with(|| json!({}));
            if spec.get("type").is_none() {
                spec["type"] = json!("ClusterIP");
            }
            if spec.get("clusterIP").is_none() && spec["type"] != "ExternalName" {
                let ip = format!(
                    "10.96.{}.{}",
                    rand::random_range(0..255u8),
                    rand::random_range(1..255u8)
                );
                spec["clusterIP"] = json!(ip);
                spec["clusterIPs"] = json!([ip]);
            }
        }
        ("apps", "deployments" | "replicasets" | "statefulsets") => {
            let spec = body
                .as_object_mut()
                .expect("object")
                .entry("spec")
                .or_insert_with(|| json!({}));
            if spec.get("replicas").is_none() {
                spec["replicas"] = json!(1);
            }
        }
        ("batch", "jobs") => job_selector(body),
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            if let Some(d) = crd {
                body["status"] = crd_status(body, d);
            }
        }
        _ => {}
    }
}

pub fn crd_status(body: &Value, d: &ResourceDef) -> Value {
    let t = now();
    json!({
        "acceptedNames": body.pointer("/spec/names").cloned().unwrap_or(json!({})),
        "storedVersions": [d.versions[0]],
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": t},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": t},
        ]
    })
}

/// The status Go's JSON writes for the reset (zero) status struct of a new
/// object, for the kinds whose status is not a pointer and is reset on
/// create.
fn empty_status(group: &str, plural: &str) -> Option<Value> {
    match (group, plural) {
        ("apps", "deployments") | ("batch", "jobs" | "cronjobs") | ("", "resourcequotas") => Some(json!({})),
        ("networking.k8s.io" | "extensions", "ingresses") => Some(json!({"loadBalancer": {}})),
        ("policy", "poddisruptionbudgets") => Some(json!({
            "currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0
        })),
        _ => None,
    }
}

/// The Job strategy's `generateSelector`: without `manualSelector`, the
/// Pod template is labelled with the Job's name and uid (the current and
/// the legacy keys) and the selector matches the uid.
fn job_selector(job: &mut Value) {
    if job.pointer("/spec/manualSelector") == Some(&json!(true)) {
        return;
    }
    let name = job.pointer("/metadata/name").cloned().unwrap_or(json!(""));
    let uid = job.pointer("/metadata/uid").cloned().unwrap_or(json!(""));
    let Some(spec) = job.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let template = spec.entry("template").or_insert_with(|| json!({}));
    if let Some(t) = template.as_object_mut() {
        let meta = t.entry("metadata").or_insert_with(|| json!({}));
        if !meta["labels"].is_object() {
            meta["labels"] = json!({});
        }
        let labels = meta["labels"].as_object_mut().expect("an object");
        for (k, v) in [
            ("job-name", &name),
            ("batch.kubernetes.io/job-name", &name),
            ("controller-uid", &uid),
            ("batch.kubernetes.io/controller-uid", &uid),
        ] {
            labels.entry(k).or_insert_with(|| v.clone());
        }
    }
    let selector = spec.entry("selector").or_insert_with(|| json!({}));
    if !selector["matchLabels"].is_object() {
        selector["matchLabels"] = json!({});
    }
    selector["matchLabels"]
        .as_object_mut()
        .expect("an object")
        .entry("batch.kubernetes.io/controller-uid")
        .or_insert(uid);
    // A Job without labels of its own takes its template's (the Job
    // strategy's `PrepareForCreate`).
    let template_labels = job.pointer("/spec/template/metadata/labels").cloned();
    let meta = &mut job["metadata"];
    if meta
        .get("labels")
        .is_none_or(|l| l.as_object().is_none_or(|m| m.is_empty()))
        && let Some(labels) = template_labels
    {
        meta["labels"] = labels;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;

    #[test]
    fn new_jobs_select_their_pods_and_statuses_start_empty() {
        let jobs = Registry::with_builtins().get("jobs.batch").unwrap().clone();
        let mut job = json!({"metadata": {"name": "j", "uid": "u1"},
            "spec": {"template": {"metadata": {"labels": {"app": "x"}}}}, "status": {"active": 1}});
        for_create(&jobs, &mut job, None, false);
        assert_eq!(
            job["spec"]["template"]["metadata"]["labels"],
            json!({"app": "x", "job-name": "j", "batch.kubernetes.io/job-name": "j",
                "controller-uid": "u1", "batch.kubernetes.io/controller-uid": "u1"})
        );
        assert_eq!(
            job["spec"]["selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}})
        );
        assert_eq!(job["status"], json!({}));
        let mut manual = json!({"metadata": {"name": "m", "uid": "u2"},
            "spec": {"manualSelector": true, "selector": {"matchLabels": {"a": "b"}}}});
        for_create(&jobs, &mut manual, None, false);
        assert_eq!(manual["spec"]["selector"], json!({"matchLabels": {"a": "b"}}));
        let pdbs = Registry::with_builtins()
            .get("poddisruptionbudgets.policy")
            .unwrap()
            .clone();
        let mut pdb = json!({"spec": {}});
        for_create(&pdbs, &mut pdb, None, false);
        assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
    }
}
