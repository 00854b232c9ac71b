//! The defaults kube-apiserver gives objects of some built-in kinds when
//! it decodes them (its `SetDefaults_*` functions), on create and on
//! update: the webhook configurations' (`admission::config`), and the
//! scalar fields of the kinds policies target (a Job's parallelism,
//! completions, backoffLimit; a CronJob's concurrencyPolicy and history
//! limits; a PersistentVolumeClaim's volumeMode; a StorageClass's reclaim
//! and binding policies; a PriorityClass's preemptionPolicy; an
//! HorizontalPodAutoscaler's minReplicas and CPU metric; a
//! NetworkPolicy's policyTypes; a ValidatingAdmissionPolicy's failure and
//! match policies); a Pod on the host's network, whose container ports'
//! `hostPort` defaults to the `containerPort` (`defaultHostNetworkPorts`),
//! and a Namespace's label `kubernetes.io/metadata.name` (its name); a
//! Deployment's strategy, revision history and progress deadline, a
//! DaemonSet's and a StatefulSet's update strategy; the Pod spec's
//! defaults in Pods and in every Pod template (`defaults_pod`).
//!
//! Owns: these defaults. Must not touch: validation, the store, HTTP.

use super::resources::ResourceDef;
use serde_json::{Map, Value, json};

/// Set `key` to `value` where it is absent or null.
fn set(o: &mut Map<String, Value>, key: &str, value: Value) {
    if o.get(key).is_none_or(Value::is_null) {
        o.insert(key.into(), value);
    }
}

/// The object at `key` of `o`, made an (empty) object if absent.
fn object<'a>(o: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    set(o, key, json!({}));
    o.get_mut(key)?.as_object_mut()
}

fn empty_list(o: &Map<String, Value>, key: &str) -> bool {
    o.get(key).and_then(Value::as_array).is_none_or(Vec::is_empty)
}

/// Apply the defaults of `def`'s kind to `body` (in its stored form).
pub fn apply(def: &ResourceDef, body: &mut Value) {
    super::admission::config::default(def, body);
    match (def.group.as_str(), def.plural.as_str()) {
        ("", "pods") => host_network_ports(body),
        ("", "namespaces") => name_label(body),
        _ => {}
    }
    if let Some(t) =
        super::defaults_pod::template_path(&def.group, &def.plural).and_then(|p| body.pointer_mut(p))
    {
        super::defaults_pod::template(t);
    }
    if (def.group.as_str(), def.plural.as_str()) == ("", "pods")
        && let Some(spec) = body.get_mut("spec")
    {
        super::defaults_pod::pod_spec(spec);
        if let Some(s) = spec.as_object_mut() {
            set(s, "enableServiceLinks", json!(true));
        }
    }
    let Some(o) = body.as_object_mut() else { return };
    match (def.group.as_str(), def.plural.as_str()) {
        ("apps", "deployments") => {
            let Some(spec) = object(o, "spec") else { return };
            set(spec, "revisionHistoryLimit", json!(10));
            set(spec, "progressDeadlineSeconds", json!(600));
            let Some(strategy) = object(spec, "strategy") else {
                return;
            };
            set(strategy, "type", json!("RollingUpdate"));
            if strategy["type"] == "RollingUpdate" {
                let Some(r) = object(strategy, "rollingUpdate") else {
                    return;
                };
                set(r, "maxUnavailable", json!("25%"));
                set(r, "maxSurge", json!("25%"));
            }
        }
        ("apps", "daemonsets") => {
            let Some(spec) = object(o, "spec") else { return };
            set(spec, "revisionHistoryLimit", json!(10));
            let Some(strategy) = object(spec, "updateStrategy") else {
                return;
            };
            set(strategy, "type", json!("RollingUpdate"));
            if strategy["type"] == "RollingUpdate" {
                let Some(r) = object(strategy, "rollingUpdate") else {
                    return;
                };
                set(r, "maxUnavailable", json!(1));
                set(r, "maxSurge", json!(0));
            }
        }
        ("apps", "statefulsets") => {
            let Some(spec) = object(o, "spec") else { return };
            set(spec, "revisionHistoryLimit", json!(10));
            set(spec, "podManagementPolicy", json!("OrderedReady"));
            let Some(strategy) = object(spec, "updateStrategy") else {
                return;
            };
            set(strategy, "type", json!("RollingUpdate"));
            if strategy["type"] == "RollingUpdate" {
                let Some(r) = object(strategy, "rollingUpdate") else {
                    return;
                };
                set(r, "partition", json!(0));
            }
        }
        ("batch", "jobs") => {
            let Some(spec) = object(o, "spec") else { return };
            if spec.get("completions").is_none_or(Value::is_null)
                && spec.get("parallelism").is_none_or(Value::is_null)
            {
                spec.insert("completions".into(), json!(1));
            }
            set(spec, "parallelism", json!(1));
            set(spec, "backoffLimit", json!(6));
            set(spec, "completionMode", json!("NonIndexed"));
            set(spec, "suspend", json!(false));
            set(spec, "manualSelector", json!(false));
            if spec.get("podFailurePolicy").is_none_or(Value::is_null) {
                set(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
            }
        }
        ("batch", "cronjobs") => {
            let Some(spec) = object(o, "spec") else { return };
            set(spec, "concurrencyPolicy", json!("Allow"));
            set(spec, "suspend", json!(false));
            set(spec, "successfulJobsHistoryLimit", json!(3));
            set(spec, "failedJobsHistoryLimit", json!(1));
        }
        ("", "persistentvolumeclaims") => {
            if let Some(spec) = object(o, "spec") {
                set(spec, "volumeMode", json!("Filesystem"));
            }
        }
        ("storage.k8s.io", "storageclasses") => {
            set(o, "reclaimPolicy", json!("Delete"));
            set(o, "volumeBindingMode", json!("Immediate"));
        }
        ("scheduling.k8s.io", "priorityclasses") => {
            set(o, "preemptionPolicy", json!("PreemptLowerPriority"));
        }
        ("autoscaling", "horizontalpodautoscalers") => {
            let Some(spec) = object(o, "spec") else { return };
            set(spec, "minReplicas", json!(1));
            if empty_list(spec, "metrics") {
                spec.insert(
                    "metrics".into(),
                    json!([{"type": "Resource", "resource": {"name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 80}}}]),
                );
            }
        }
        ("networking.k8s.io", "networkpolicies") => {
            let Some(spec) = object(o, "spec") else { return };
            if empty_list(spec, "policyTypes") {
                let mut types = vec![json!("Ingress")];
                if !empty_list(spec, "egress") {
                    types.push(json!("Egress"));
                }
                spec.insert("policyTypes".into(), Value::Array(types));
            }
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicies") => {
            let Some(spec) = object(o, "spec") else { return };
            set(spec, "failurePolicy", json!("Fail"));
            let Some(m) = spec.get_mut("matchConstraints").and_then(Value::as_object_mut) else {
                return;
            };
            set(m, "matchPolicy", json!("Equivalent"));
            set(m, "namespaceSelector", json!({}));
            set(m, "objectSelector", json!({}));
            for r in m
                .get_mut("resourceRules")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
                .filter_map(Value::as_object_mut)
            {
                set(r, "scope", json!("*"));
            }
        }
        _ => {}
    }
}

/// The status a new object of `def` starts with, where its strategy
/// gives one (a PersistentVolumeClaim is Pending).
pub fn status_on_create(def: &ResourceDef) -> Option<Value> {
    match (def.group.as_str(), def.plural.as_str()) {
        ("", "persistentvolumeclaims") => Some(json!({"phase": "Pending"})),
        _ => None,
    }
}

/// Every namespace is labelled `kubernetes.io/metadata.name` with its name.
fn name_label(ns: &mut Value) {
    let Some(name) = ns.pointer("/metadata/name").cloned() else {
        return;
    };
    let m = super::meta::meta(ns);
    let labels = m.entry("labels").or_insert_with(|| json!({}));
    if !labels.is_object() {
        *labels = json!({});
    }
    labels["kubernetes.io/metadata.name"] = name;
}

/// With `spec.hostNetwork`, every container's (and init container's) port
/// without a `hostPort` gets its `containerPort`.
fn host_network_ports(pod: &mut Value) {
    if pod.pointer("/spec/hostNetwork") != Some(&json!(true)) {
        return;
    }
    for list in ["containers", "initContainers"] {
        let Some(containers) = pod["spec"].get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for port in containers
            .iter_mut()
            .filter_map(|c| c.get_mut("ports").and_then(Value::as_array_mut))
            .flatten()
            .filter_map(Value::as_object_mut)
        {
            let unset = port.get("hostPort").is_none_or(|p| p.is_null() || p == 0);
            if let (true, Some(c)) = (unset, port.get("containerPort").cloned()) {
                port.insert("hostPort".into(), c);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;

    fn defaulted(qualified: &str, mut body: Value) -> Value {
        apply(Registry::with_builtins().get(qualified).unwrap(), &mut body);
        body
    }

    #[test]
    fn kinds_get_the_real_servers_defaults_and_keep_what_was_sent() {
        let job = defaulted("jobs.batch", json!({"spec": {}}));
        assert_eq!(
            job["spec"],
            json!({"completions": 1, "parallelism": 1, "backoffLimit": 6,
                "completionMode": "NonIndexed", "suspend": false, "manualSelector": false,
                "podReplacementPolicy": "TerminatingOrFailed"})
        );
        let wide = defaulted("jobs.batch", json!({"spec": {"parallelism": 4, "suspend": true}}));
        assert_eq!(
            (
                &wide["spec"]["parallelism"],
                wide["spec"].get("completions"),
                &wide["spec"]["suspend"]
            ),
            (&json!(4), None, &json!(true))
        );
        let cj = defaulted("cronjobs.batch", json!({"spec": {"schedule": "@daily"}}));
        assert_eq!(
            (
                &cj["spec"]["concurrencyPolicy"],
                &cj["spec"]["successfulJobsHistoryLimit"]
            ),
            (&json!("Allow"), &json!(3))
        );
        let pvc = defaulted("persistentvolumeclaims", json!({"spec": {"volumeMode": "Block"}}));
        assert_eq!(pvc["spec"]["volumeMode"], "Block");
        let sc = defaulted("storageclasses.storage.k8s.io", json!({"provisioner": "x"}));
        assert_eq!(
            (&sc["reclaimPolicy"], &sc["volumeBindingMode"]),
            (&json!("Delete"), &json!("Immediate"))
        );
        let pc = defaulted("priorityclasses.scheduling.k8s.io", json!({"value": 1}));
        assert_eq!(pc["preemptionPolicy"], "PreemptLowerPriority");
        let hpa = defaulted(
            "horizontalpodautoscalers.autoscaling",
            json!({"spec": {"maxReplicas": 3}}),
        );
        assert_eq!(hpa["spec"]["minReplicas"], 1);
        assert_eq!(
            hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            80
        );
        let np = defaulted(
            "networkpolicies.networking.k8s.io",
            json!({"spec": {"podSelector": {}, "egress": [{}]}}),
        );
        assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        let vap = defaulted(
            "validatingadmissionpolicies.admissionregistration.k8s.io",
            json!({"spec": {"matchConstraints": {"resourceRules": [{"resources": ["pods"]}]}}}),
        );
        assert_eq!(
            (
                &vap["spec"]["failurePolicy"],
                &vap["spec"]["matchConstraints"]["resourceRules"][0]["scope"]
            ),
            (&json!("Fail"), &json!("*"))
        );
        let d = defaulted(
            "deployments.apps",
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}}),
        );
        assert_eq!(
            (
                &d["spec"]["revisionHistoryLimit"],
                &d["spec"]["progressDeadlineSeconds"]
            ),
            (&json!(10), &json!(600))
        );
        assert_eq!(
            d["spec"]["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"], "IfNotPresent",
            "templates get the Pod spec's defaults"
        );
        let recreate = defaulted(
            "deployments.apps",
            json!({"spec": {"strategy": {"type": "Recreate"}}}),
        );
        assert_eq!(recreate["spec"]["strategy"], json!({"type": "Recreate"}));
        let cj = defaulted(
            "cronjobs.batch",
            json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}}}),
        );
        assert_eq!(
            cj.pointer("/spec/jobTemplate/spec/template/spec/dnsPolicy"),
            Some(&json!("ClusterFirst"))
        );
        let cm = defaulted("configmaps", json!({"data": {}}));
        assert_eq!(cm, json!({"data": {}}));
    }

    #[test]
    fn host_network_ports_default_to_the_container_port() {
        let pods = Registry::with_builtins().get("pods").unwrap().clone();
        let mut pod = json!({"spec": {"hostNetwork": true, "containers": [{"name": "c",
            "ports": [{"containerPort": 80}, {"containerPort": 81, "hostPort": 81}]}],
            "initContainers": [{"name": "i", "ports": [{"containerPort": 9}]}]}});
        apply(&pods, &mut pod);
        assert_eq!(pod["spec"]["containers"][0]["ports"][0]["hostPort"], 80);
        assert_eq!(pod["spec"]["containers"][0]["ports"][1]["hostPort"], 81);
        assert_eq!(pod["spec"]["initContainers"][0]["ports"][0]["hostPort"], 9);
        let mut off = json!({"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]}});
        apply(&pods, &mut off);
        assert!(off["spec"]["containers"][0]["ports"][0].get("hostPort").is_none());
        let namespaces = Registry::with_builtins().get("namespaces").unwrap().clone();
        let mut ns =
            json!({"metadata": {"name": "team", "labels": {"a": "b", "kubernetes.io/metadata.name": "x"}}});
        apply(&namespaces, &mut ns);
        assert_eq!(
            ns["metadata"]["labels"],
            json!({"a": "b", "kubernetes.io/metadata.name": "team"})
        );
    }
}
