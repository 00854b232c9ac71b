//! The built-in resource types the simulated API server serves, as
//! kube-apiserver v1.36 declares them: group, version, plural, kind,
//! scope, short names, categories (`all` is what `kubectl get all` lists,
//! `api-extensions` the API's own extension points), whether a `/status`
//! subresource exists, and which have a `/scale` subresource.
//!
//! Owns: the table of built-in kinds. Must not touch: lookups
//! (`resources::Registry`), objects, tables or HTTP.

use super::resources::{ResourceDef, ScalePaths};

/// One built-in kind: group, version, plural, kind, namespaced, short
/// names, has a `/status` subresource, categories.
type Kind = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    bool,
    &'static [&'static str],
    bool,
    &'static [&'static str],
);

const ALL: &[&str] = &["all"];
const EXT: &[&str] = &["api-extensions"];
const RBAC: &str = "rbac.authorization.k8s.io";
const ADMISSION: &str = "admissionregistration.k8s.io";
const NET: &str = "networking.k8s.io";

#[rustfmt::skip]
const KINDS: &[Kind] = &[
    ("", "v1", "namespaces", "Namespace", false, &["ns"], true, &[]),
    ("", "v1", "nodes", "Node", false, &["no"], true, &[]),
    ("", "v1", "pods", "Pod", true, &["po"], true, ALL),
    ("", "v1", "configmaps", "ConfigMap", true, &["cm"], false, &[]),
    ("", "v1", "secrets", "Secret", true, &[], false, &[]),
    ("", "v1", "services", "Service", true, &["svc"], true, ALL),
    ("", "v1", "serviceaccounts", "ServiceAccount", true, &["sa"], false, &[]),
    ("", "v1", "events", "Event", true, &["ev"], false, &[]),
    ("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true, &["pvc"], true, &[]),
    ("", "v1", "resourcequotas", "ResourceQuota", true, &["quota"], true, &[]),
    ("", "v1", "limitranges", "LimitRange", true, &["limits"], false, &[]),
    // The events API of client-go's current recorder: the same objects
    // as core/v1 Events (one storage, `events`), converted.
    ("events.k8s.io", "v1", "events", "Event", true, &["ev"], false, &[]),
    ("apps", "v1", "deployments", "Deployment", true, &["deploy"], true, ALL),
    ("apps", "v1", "replicasets", "ReplicaSet", true, &["rs"], true, ALL),
    ("apps", "v1", "statefulsets", "StatefulSet", true, &["sts"], true, ALL),
    ("apps", "v1", "daemonsets", "DaemonSet", true, &["ds"], true, ALL),
    ("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", true, &["hpa"], true, ALL),
    ("batch", "v1", "jobs", "Job", true, &[], true, ALL),
    ("batch", "v1", "cronjobs", "CronJob", true, &["cj"], true, ALL),
    ("coordination.k8s.io", "v1", "leases", "Lease", true, &[], false, &[]),
    ("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", true, &[], false, &[]),
    (NET, "v1", "ingresses", "Ingress", true, &["ing"], true, &[]),
    (NET, "v1", "ingressclasses", "IngressClass", false, &[], false, &[]),
    (NET, "v1", "networkpolicies", "NetworkPolicy", true, &["netpol"], false, &[]),
    (RBAC, "v1", "roles", "Role", true, &[], false, &[]),
    (RBAC, "v1", "rolebindings", "RoleBinding", true, &[], false, &[]),
    (RBAC, "v1", "clusterroles", "ClusterRole", false, &[], false, &[]),
    (RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding", false, &[], false, &[]),
    ("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true, &["pdb"], true, &[]),
    ("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", false, &["pc"], false, &[]),
    ("storage.k8s.io", "v1", "storageclasses", "StorageClass", false, &["sc"], false, &[]),
    (ADMISSION, "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", false, &[], false, EXT),
    (ADMISSION, "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", false, &[], false, EXT),
    (ADMISSION, "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", false, &[], true, EXT),
    (ADMISSION, "v1", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", false, &[], false, EXT),
    ("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", false, &["crd", "crds"], true, EXT),
];

fn def(&(group, version, plural, kind, namespaced, short, has_status, categories): &Kind) -> ResourceDef {
    let strings = |v: &[&str]| -> Vec<String> { v.iter().map(|s| s.to_string()).collect() };
    ResourceDef {
        group: group.into(),
        versions: vec![version.into()],
        plural: plural.into(),
        singular: kind.to_ascii_lowercase(),
        kind: kind.into(),
        namespaced,
        short_names: strings(short),
        categories: strings(categories),
        has_status,
        crd: None,
        scale: matches!(plural, "deployments" | "replicasets" | "statefulsets").then(|| ScalePaths {
            spec_replicas: "/spec/replicas".into(),
            status_replicas: "/status/replicas".into(),
            selector: None,
        }),
    }
}

/// The built-in resource types.
pub fn builtins() -> Vec<ResourceDef> {
    KINDS.iter().map(def).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(group: &str, plural: &str) -> ResourceDef {
        builtins()
            .into_iter()
            .find(|d| d.group == group && d.plural == plural)
            .unwrap_or_else(|| panic!("{plural}.{group} is served"))
    }

    /// What kube-apiserver v1.36's discovery says of the kinds policies
    /// target (`kubectl api-resources -o wide` against it).
    #[test]
    fn kinds_policies_target_are_declared_as_the_real_server_declares_them() {
        #[rustfmt::skip]
        let want: &[Kind] = &[
            (NET, "v1", "ingresses", "Ingress", true, &["ing"], true, &[]),
            (NET, "v1", "ingressclasses", "IngressClass", false, &[], false, &[]),
            (NET, "v1", "networkpolicies", "NetworkPolicy", true, &["netpol"], false, &[]),
            ("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", true, &["hpa"], true, &["all"]),
            ("batch", "v1", "jobs", "Job", true, &[], true, &["all"]),
            ("batch", "v1", "cronjobs", "CronJob", true, &["cj"], true, &["all"]),
            ("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", true, &[], false, &[]),
            ("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true, &["pvc"], true, &[]),
            ("", "v1", "resourcequotas", "ResourceQuota", true, &["quota"], true, &[]),
            ("", "v1", "limitranges", "LimitRange", true, &["limits"], false, &[]),
            ("storage.k8s.io", "v1", "storageclasses", "StorageClass", false, &["sc"], false, &[]),
            ("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", false, &["pc"], false, &[]),
            ("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true, &["pdb"], true, &[]),
            (ADMISSION, "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", false, &[], true, &["api-extensions"]),
            (ADMISSION, "v1", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", false, &[], false, &["api-extensions"]),
        ];
        for &(group, version, plural, kind, namespaced, short, status, categories) in want {
            let d = find(group, plural);
            assert_eq!(
                (
                    d.versions,
                    d.kind.as_str(),
                    d.namespaced,
                    d.short_names,
                    d.has_status,
                    d.categories
                ),
                (
                    vec![version.to_string()],
                    kind,
                    namespaced,
                    short.iter().map(|s| s.to_string()).collect(),
                    status,
                    categories.iter().map(|s| s.to_string()).collect()
                ),
                "{plural}.{group}"
            );
            assert_eq!(d.singular, kind.to_ascii_lowercase());
            assert!(d.scale.is_none(), "{plural}: no /scale here");
        }
        let mut seen = std::collections::HashSet::new();
        assert!(
            builtins().iter().all(|d| seen.insert(d.qualified())),
            "no kind twice"
        );
        assert!(find("apps", "deployments").scale.is_some());
    }
}
