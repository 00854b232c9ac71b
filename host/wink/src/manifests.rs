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
pub mod library;
pub mod needs;

use crate::reports::ReportApi;
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
    /// Whether it gives policy results (wink then writes reports).
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
    /// The API wink writes policy reports in, when a plugin reports.
    pub report_api: ReportApi,
}

/// (group, plural) of a kind, as RBAC names it.
fn group_resource(api_version: &str, kind: &str) -> (String, String) {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    (group.to_string(), ar.plural)
}

/// Verbs per (namespace or cluster-wide, group, resource).
type Rules = BTreeMap<Option<String>, BTreeMap<(String, String), BTreeSet<&'static str>>>;

fn rules(plugins: &[PluginNeeds], namespace: &str, report_api: ReportApi) -> Rules {
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
            // The report writer's own objects, in the API it writes; the
            // CRDs ship with the manifests, so it needs no right on CRDs.
            for namespaced in [true, false] {
                add(
                    None,
                    (report_api.group().into(), report_api.plural(namespaced).into()),
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

/// Every object of the deployment ([`in_install_order`] sorts them with
/// whatever else is applied beside them).
pub fn render(plugins: &[PluginNeeds], d: &Deployment) -> Vec<Value> {
    let ns = &d.namespace;
    let labels = json!({"app.kubernetes.io/name": "wink"});
    let meta = |name: &str| json!({"name": name, "namespace": ns, "labels": labels});
    let mut docs = Vec::new();
    let reports = plugins.iter().any(|p| p.reports);
    if reports {
        docs.extend(crate::reports::crd::definitions(d.report_api));
    }
    docs.extend([
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta("wink")}),
    ]);
    let subject = json!([{"kind": "ServiceAccount", "name": "wink", "namespace": ns}]);
    for (scope, rules) in rules(plugins, ns, d.report_api) {
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
    if reports {
        // Named even when it is the default: the CRDs above are its.
        args.push(format!("--report-api={}", d.report_api));
    }
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

/// The kinds in the order one `kubectl apply` of a stream needs them
/// (Helm's install order): what others live in or refer to comes first, so
/// a Namespace precedes everything in it and a CustomResourceDefinition its
/// objects. Kinds not named keep their place after these.
const INSTALL_ORDER: &[&str] = &[
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// `docs` sorted into [`INSTALL_ORDER`] (stable: documents of one kind keep
/// their order), so that a single `kubectl apply -f` of them succeeds on a
/// fresh cluster.
pub fn in_install_order(mut docs: Vec<Value>) -> Vec<Value> {
    let rank = |d: &Value| {
        let kind = d["kind"].as_str().unwrap_or_default();
        INSTALL_ORDER
            .iter()
            .position(|k| *k == kind)
            .unwrap_or(INSTALL_ORDER.len())
    };
    docs.sort_by_key(rank);
    docs
}

/// `docs` without the repeats of an object already among them (the same
/// apiVersion, kind, namespace and name: the report CRDs that both the
/// deployment and the library bring), the first kept.
pub fn distinct(docs: Vec<Value>) -> Vec<Value> {
    let mut seen = BTreeSet::new();
    docs.into_iter()
        .filter(|d| {
            let m = &d["metadata"];
            seen.insert([&d["apiVersion"], &d["kind"], &m["namespace"], &m["name"]].map(Value::to_string))
        })
        .collect()
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
    fn the_install_order_puts_namespaces_and_definitions_before_what_uses_them() {
        let docs = [
            "Role",
            "Deployment",
            "PrometheusRule",
            "CustomResourceDefinition",
            "Namespace",
            "ServiceAccount",
            "RoleBinding",
        ]
        .map(|kind| json!({"kind": kind}));
        let kinds: Vec<Value> = in_install_order(docs.to_vec())
            .iter()
            .map(|d| d["kind"].clone())
            .collect();
        assert_eq!(
            kinds,
            [
                "Namespace",
                "ServiceAccount",
                "CustomResourceDefinition",
                "Role",
                "RoleBinding",
                "Deployment",
                "PrometheusRule"
            ]
        );
    }

    #[test]
    fn distinct_keeps_the_first_of_each_object() {
        let crd = |n: u32| json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "a"}, "n": n});
        let role = |ns: &str| json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "a", "namespace": ns}});
        let kept = distinct(vec![crd(1), role("x"), crd(2), role("y"), role("x")]);
        assert_eq!(kept, vec![crd(1), role("x"), role("y")]);
    }

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
        let r = rules(&[plugin], "wink-system", ReportApi::default());
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
        let d = |report_api| Deployment {
            namespace: "wink-system".into(),
            image: "wink".into(),
            grants: None,
            admission: None,
            report_api,
        };
        let args = |docs: &[Value]| -> Vec<String> {
            let deployment = docs.iter().find(|x| x["kind"] == "Deployment").unwrap();
            let c = &deployment["spec"]["template"]["spec"]["containers"][0];
            serde_json::from_value(c["args"].clone()).unwrap()
        };
        let verbs = BTreeSet::from(["create", "delete", "get", "list", "patch"]);
        for (api, group, plurals, other) in [
            (
                ReportApi::Wgpolicyk8s,
                "wgpolicyk8s.io",
                ["policyreports", "clusterpolicyreports"],
                "openreports.io",
            ),
            (
                ReportApi::OpenReports,
                "openreports.io",
                ["reports", "clusterreports"],
                "wgpolicyk8s.io",
            ),
        ] {
            let docs = render(&[plugin(true)], &d(api));
            let crds: Vec<&str> = docs
                .iter()
                .filter(|d| d["kind"] == "CustomResourceDefinition")
                .map(|d| d["metadata"]["name"].as_str().unwrap())
                .collect();
            let names = plurals.map(|p| format!("{p}.{group}"));
            assert_eq!(crds, names, "{api}: its own CRDs, no others");
            assert_eq!(docs[0]["kind"], "CustomResourceDefinition", "CRDs come first");
            assert!(
                args(&docs).contains(&format!("--report-api={api}")),
                "{api}: the Deployment writes the API whose CRDs it ships"
            );
            let r = rules(&[plugin(true)], "wink-system", api);
            for plural in plurals {
                assert_eq!(r[&None][&(group.into(), plural.into())], verbs, "{api}");
            }
            assert!(
                !r[&None].keys().any(|(g, _)| g == other),
                "{api}: no right on {other}"
            );
            assert!(!r[&None].keys().any(|(g, _)| g == "apiextensions.k8s.io"));
            let quiet = render(&[plugin(false)], &d(api));
            assert!(!quiet.iter().any(|d| d["kind"] == "CustomResourceDefinition"));
            assert!(!args(&quiet).iter().any(|a| a.starts_with("--report-api")));
            assert!(
                !rules(&[plugin(false)], "wink-system", api)[&None]
                    .keys()
                    .any(|(g, _)| g == group)
            );
        }
    }
}
