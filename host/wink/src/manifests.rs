//! `wink manifests`: a least-privilege deployment derived from the plugins
//! themselves. Each plugin's registration (its watches, reads, declared
//! writes and Events) under the operator's grants, as `wink run` would
//! allow it ([`needs::allowed`]), gives exactly the RBAC rules the daemon
//! needs; the rest is the Deployment (non-root,
//! read-only root filesystem, probes on the admin server), its
//! ServiceAccount, a PodDisruptionBudget, a Service for metrics and the
//! grants as a ConfigMap; and when plugins serve admission webhooks, what
//! the webhook server needs ([`admission`]).
//!
//! Owns the rendering from [`PluginNeeds`]; reading plugins is [`needs`]'s.

pub mod admission;
pub mod needs;

use crate::runtime::grants::{Permissions, Verb};
use kube::api::ApiResource;
use kube::core::GroupVersionKind;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// What one plugin needs from the API server.
#[derive(Debug, Clone)]
pub struct PluginNeeds {
    pub name: String,
    /// (apiVersion, kind, namespace) of every watch and read.
    pub reads: Vec<(String, String, Option<String>)>,
    /// Its writes and Events, as granted.
    pub permissions: Permissions,
    /// Whether it gives policy results (wink then writes PolicyReports).
    pub reports: bool,
}

/// Where and how the daemon runs.
#[derive(Debug, Clone)]
pub struct Deployment {
    pub namespace: String,
    pub image: String,
    /// The grants file's text, shipped as a ConfigMap.
    pub grants: Option<String>,
    /// The admission webhook server's container port, when it runs.
    pub admission: Option<u16>,
}

/// (group, plural) of a kind, as RBAC names it.
fn group_resource(api_version: &str, kind: &str) -> (String, String) {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    (group.to_string(), ar.plural)
}

/// Verbs per (namespace or cluster-wide, group, resource).
type Rules = BTreeMap<Option<String>, BTreeMap<(String, String), BTreeSet<&'static str>>>;

fn rules(plugins: &[PluginNeeds], namespace: &str) -> Rules {
    let mut rules = Rules::new();
    // Leader election: the Lease in wink's own namespace.
    rules
        .entry(Some(namespace.to_string()))
        .or_default()
        .entry(("coordination.k8s.io".into(), "leases".into()))
        .or_default()
        .extend(["create", "get", "update"]);
    let mut add = |ns: Option<String>, gr: (String, String), verbs: &[&'static str]| {
        rules.entry(ns).or_default().entry(gr).or_default().extend(verbs);
    };
    for p in plugins {
        for (api_version, kind, ns) in &p.reads {
            add(ns.clone(), group_resource(api_version, kind), &["list", "watch"]);
        }
        for w in &p.permissions.writes {
            let verbs: Vec<&'static str> = w.verbs.iter().map(|v| v.as_str()).collect();
            // `update` writes of a status go to the subresource too.
            let gr = group_resource(&w.api_version, &w.kind);
            // Every namespace (`*`, or none named) is cluster-wide.
            let namespaces = w.namespaces.as_ref().filter(|nss| !nss.iter().any(|n| n == "*"));
            match namespaces {
                Some(nss) => nss
                    .iter()
                    .for_each(|ns| add(Some(ns.clone()), gr.clone(), &verbs)),
                None => add(None, gr, &verbs),
            }
            if w.verbs.iter().any(|v| matches!(v, Verb::Update | Verb::Patch)) {
                let (group, plural) = group_resource(&w.api_version, &w.kind);
                let status = (group, format!("{plural}/status"));
                let status_verbs: Vec<&'static str> = verbs
                    .iter()
                    .copied()
                    .filter(|v| matches!(*v, "update" | "patch"))
                    .collect();
                match namespaces {
                    Some(nss) => nss
                        .iter()
                        .for_each(|ns| add(Some(ns.clone()), status.clone(), &status_verbs)),
                    None => add(None, status, &status_verbs),
                }
            }
        }
        if p.reports {
            // The report writer's own objects; the CRDs ship with the
            // manifests, so it needs no right on CRDs.
            for plural in ["policyreports", "clusterpolicyreports"] {
                add(
                    None,
                    ("wgpolicyk8s.io".into(), plural.into()),
                    &["get", "list", "create", "patch", "delete"],
                );
            }
        }
        if p.permissions.events {
            add(
                None,
                ("events.k8s.io".into(), "events".into()),
                &["create", "patch"],
            );
        }
    }
    rules
}

fn rule_list(rules: &BTreeMap<(String, String), BTreeSet<&'static str>>) -> Vec<Value> {
    rules
        .iter()
        .map(|((group, resource), verbs)| {
            json!({"apiGroups": [group], "resources": [resource], "verbs": verbs.iter().collect::<Vec<_>>()})
        })
        .collect()
}

const ADMIN_PORT: u16 = 9090;

/// Every object, in the order `kubectl apply` wants them.
pub fn render(plugins: &[PluginNeeds], d: &Deployment) -> Vec<Value> {
    let ns = &d.namespace;
    let labels = json!({"app.kubernetes.io/name": "wink"});
    let meta = |name: &str| json!({"name": name, "namespace": ns, "labels": labels});
    let mut docs = Vec::new();
    if plugins.iter().any(|p| p.reports) {
        docs.extend(crate::reports::crd::definitions());
    }
    docs.extend([
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta("wink")}),
    ]);
    let subject = json!([{"kind": "ServiceAccount", "name": "wink", "namespace": ns}]);
    for (scope, rules) in rules(plugins, ns) {
        match scope {
            None => {
                docs.push(
                    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                    "metadata": {"name": "wink", "labels": labels}, "rules": rule_list(&rules)}),
                );
                docs.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                    "metadata": {"name": "wink", "labels": labels},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "wink"},
                    "subjects": subject}));
            }
            Some(target) => {
                let m = json!({"name": "wink", "namespace": target, "labels": labels});
                docs.push(
                    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                    "metadata": m, "rules": rule_list(&rules)}),
                );
                docs.push(
                    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": m,
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "wink"},
                    "subjects": subject}),
                );
            }
        }
    }
    let mut args = vec![
        "run".to_string(),
        "--plugins=/plugins".into(),
        format!("--admin-addr=0.0.0.0:{ADMIN_PORT}"),
        "--allow-non-loopback".into(),
        "--log-format=json".into(),
        "--no-precompiled".into(),
        "--leader-elect".into(),
    ];
    let mut ports = vec![json!({"name": "admin", "containerPort": ADMIN_PORT})];
    if let Some(port) = d.admission {
        docs.extend(admission::documents(ns, &labels));
        args.extend(admission::args(port));
        ports.push(admission::port(port));
    }
    let mut volumes = vec![json!({"name": "tmp", "emptyDir": {}})];
    let mut mounts = vec![json!({"name": "tmp", "mountPath": "/tmp"})];
    if let Some(grants) = &d.grants {
        docs.push(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("wink-grants"),
            "data": {"grants.yaml": grants}}),
        );
        args.push("--grants=/etc/wink/grants.yaml".into());
        volumes.push(json!({"name": "grants", "configMap": {"name": "wink-grants"}}));
        mounts.push(json!({"name": "grants", "mountPath": "/etc/wink", "readOnly": true}));
    }
    let probe = |path: &str| json!({"httpGet": {"path": path, "port": "admin"}, "periodSeconds": 10});
    docs.push(json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("wink"),
        "spec": {
            // A leader and a warm standby (its caches current, it delivers
            // and writes nothing until it holds the Lease).
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": "wink",
                    "securityContext": {"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [{
                        "name": "wink",
                        "image": d.image,
                        "args": args,
                        "ports": ports,
                        "livenessProbe": probe("/healthz"),
                        "readinessProbe": probe("/readyz"),
                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                                      "limits": {"memory": "1Gi"}},
                        "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                                            "capabilities": {"drop": ["ALL"]}},
                        "volumeMounts": mounts,
                        "env": [
                            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                            {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                        ],
                    }],
                    "volumes": volumes,
                },
            },
        },
    }));
    docs.push(
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta("wink"),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": labels}}}),
    );
    docs.push(json!({"apiVersion": "v1", "kind": "Service", "metadata": meta("wink-metrics"),
        "spec": {"selector": labels, "ports": [{"name": "admin", "port": ADMIN_PORT, "targetPort": "admin"}]}}));
    docs
}

/// The documents as one multi-document YAML stream.
pub fn to_yaml(docs: &[Value]) -> String {
    docs.iter()
        .map(|d| serde_norway::to_string(d).expect("JSON values are YAML"))
        .collect::<Vec<_>>()
        .join("---\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::grants::{Mode, WriteGrant};

    #[test]
    fn plurals_and_groups_as_rbac_names_them() {
        assert_eq!(group_resource("v1", "Pod"), ("".into(), "pods".into()));
        assert_eq!(
            group_resource("apps/v1", "Deployment"),
            ("apps".into(), "deployments".into())
        );
        assert_eq!(
            group_resource("networking.k8s.io/v1", "Ingress"),
            ("networking.k8s.io".into(), "ingresses".into())
        );
    }

    #[test]
    fn namespaced_writes_get_a_role_cluster_wide_ones_the_cluster_role() {
        let plugin = PluginNeeds {
            name: "p".into(),
            reads: vec![
                ("v1".into(), "ConfigMap".into(), None),
                ("v1".into(), "Secret".into(), Some("team".into())),
            ],
            permissions: Permissions {
                mode: Mode::Enforce,
                events: false,
                writes: vec![WriteGrant {
                    api_version: "v1".into(),
                    kind: "ConfigMap".into(),
                    verbs: vec![Verb::Delete],
                    namespaces: Some(vec!["team".into()]),
                }],
                rate: None,
            },
            reports: false,
        };
        let r = rules(&[plugin], "wink-system");
        let cluster = &r[&None];
        assert_eq!(
            cluster[&("".into(), "configmaps".into())],
            BTreeSet::from(["list", "watch"])
        );
        let team = &r[&Some("team".into())];
        assert_eq!(
            team[&("".into(), "configmaps".into())],
            BTreeSet::from(["delete"])
        );
        assert_eq!(
            team[&("".into(), "secrets".into())],
            BTreeSet::from(["list", "watch"])
        );
        let own = &r[&Some("wink-system".into())];
        assert_eq!(
            own[&("coordination.k8s.io".into(), "leases".into())],
            BTreeSet::from(["create", "get", "update"])
        );
    }

    #[test]
    fn a_reporting_plugin_brings_the_report_crds_and_rights_on_reports_only() {
        let plugin = |reports| PluginNeeds {
            name: "p".into(),
            reads: vec![("v1".into(), "Pod".into(), None)],
            permissions: Permissions::default(),
            reports,
        };
        let d = Deployment {
            namespace: "wink-system".into(),
            image: "wink".into(),
            grants: None,
            admission: None,
        };
        let docs = render(&[plugin(true)], &d);
        let crds: Vec<&Value> = docs
            .iter()
            .filter(|d| d["kind"] == "CustomResourceDefinition")
            .collect();
        assert_eq!(crds.len(), 2);
        assert_eq!(docs[0]["kind"], "CustomResourceDefinition", "CRDs come first");
        let r = rules(&[plugin(true)], "wink-system");
        let verbs = BTreeSet::from(["create", "delete", "get", "list", "patch"]);
        assert_eq!(
            r[&None][&("wgpolicyk8s.io".into(), "policyreports".into())],
            verbs
        );
        assert_eq!(
            r[&None][&("wgpolicyk8s.io".into(), "clusterpolicyreports".into())],
            verbs
        );
        assert!(!r[&None].keys().any(|(g, _)| g == "apiextensions.k8s.io"));
        let quiet = render(&[plugin(false)], &d);
        assert!(!quiet.iter().any(|d| d["kind"] == "CustomResourceDefinition"));
        assert!(
            !rules(&[plugin(false)], "wink-system")[&None]
                .keys()
                .any(|(g, _)| g == "wgpolicyk8s.io")
        );
    }
}
