//! The defaults the API server gives objects before validating them
//! (`SetDefaults_*`), for the types whose defaults the simulator keeps:
//! webhook configurations (`admission::config`), a Pod on the host's
//! network, whose container ports' `hostPort` defaults to the
//! `containerPort` (`defaultHostNetworkPorts`), and a Namespace's label
//! `kubernetes.io/metadata.name` (its name).
//!
//! Owns: these defaults. Must not touch: validation (`validate`), the
//! per-type strategies' status and server-set fields (`write`).

use super::resources::ResourceDef;
use serde_json::{Value, json};

/// Default `body` (of `def`, in its stored form) in place.
pub fn apply(def: &ResourceDef, body: &mut Value) {
    super::admission::config::default(def, body);
    match (def.group.as_str(), def.plural.as_str()) {
        ("", "pods") => host_network_ports(body),
        ("", "namespaces") => name_label(body),
        _ => {}
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
