//! `wink manifests --library NAMES`: the policy library (`plugins/*`, the
//! manual's `library/` pages) as WinkPlugins. One object per policy, its
//! source the policy's component in the operator's registry (a tag, or the
//! digest `wink push` gives the built component, computed here offline),
//! its config the default its page documents, its grant enforcing with
//! the writes it declares, `kube-system` left out; and a ClusterRole
//! reading the kinds the chosen policies watch. Owns that table and the
//! rendering; the WinkPlugin CRD and the controller's rights are
//! [`crate::winkplugins::manifests`]'.

use serde_json::{Value, json};

/// One library policy: its name (the WinkPlugin's, the crate's), the
/// config it is rendered with, what it watches and what it writes.
#[derive(Debug)]
pub struct Policy {
    pub name: &'static str,
    /// The page's default, written out (none: it takes no config).
    config: fn() -> Option<Value>,
    /// (apiVersion, kind) of every watch.
    watches: &'static [(&'static str, &'static str)],
    /// Deployments patched and Events recorded (`require-labels`).
    labels_deployments: bool,
}

impl Policy {
    /// The component's file name in a build's output (`<crate>.wasm`).
    pub fn file(&self) -> String {
        format!("{}.wasm", self.name.replace('-', "_"))
    }
}

/// The Pod and the workload kinds that carry Pods (the SDK's `workload::KINDS`).
const PODS: &[(&str, &str)] = &[
    ("v1", "Pod"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "StatefulSet"),
    ("apps/v1", "DaemonSet"),
    ("apps/v1", "ReplicaSet"),
    ("batch/v1", "Job"),
    ("batch/v1", "CronJob"),
];
const SERVICES: &[(&str, &str)] = &[("v1", "Service")];
const INGRESSES: &[(&str, &str)] = &[("networking.k8s.io/v1", "Ingress")];

fn none() -> Option<Value> {
    None
}

/// The library, in the order of its index page.
pub const POLICIES: [Policy; 13] = [
    Policy {
        name: "pod-security",
        config: || {
            Some(json!({"defaults": {
                "enforce": "baseline", "enforce-version": "latest",
                "warn": "baseline", "warn-version": "latest",
                "audit": "baseline", "audit-version": "latest"}}))
        },
        watches: &[("v1", "Pod"), ("v1", "Namespace")],
        labels_deployments: false,
    },
    Policy {
        name: "disallow-latest-tag",
        config: || Some(json!({"tags": ["latest"], "exemptImages": []})),
        watches: PODS,
        labels_deployments: false,
    },
    Policy {
        // No default: which registries to trust is the operator's
        // (`--library-config`).
        name: "allowed-registries",
        config: none,
        watches: PODS,
        labels_deployments: false,
    },
    Policy {
        name: "require-requests-limits",
        config: || Some(json!({"requests": ["cpu", "memory"], "limits": ["memory"], "initContainers": true})),
        watches: PODS,
        labels_deployments: false,
    },
    Policy {
        name: "require-probes",
        config: || Some(json!({"probes": ["livenessProbe", "readinessProbe"], "require": "all"})),
        watches: PODS,
        labels_deployments: false,
    },
    Policy {
        name: "require-labels",
        config: || Some(json!({"labels": ["team"], "default": "unassigned"})),
        watches: &[("apps/v1", "Deployment")],
        labels_deployments: true,
    },
    Policy {
        name: "block-service-types",
        config: || Some(json!({"types": ["NodePort", "LoadBalancer"]})),
        watches: SERVICES,
        labels_deployments: false,
    },
    Policy {
        name: "unique-ingress-host",
        config: none,
        watches: INGRESSES,
        labels_deployments: false,
    },
    Policy {
        name: "unique-service-selector",
        config: none,
        watches: SERVICES,
        labels_deployments: false,
    },
    Policy {
        name: "block-wildcard-ingress-host",
        config: none,
        watches: INGRESSES,
        labels_deployments: false,
    },
    Policy {
        name: "replica-limits",
        config: || Some(json!({"min": 0, "max": 50})),
        watches: &[
            ("apps/v1", "Deployment"),
            ("apps/v1", "StatefulSet"),
            ("apps/v1", "ReplicaSet"),
        ],
        labels_deployments: false,
    },
    Policy {
        // Its default, the Pod and workload kinds, is left to the plugin.
        name: "disallow-default-namespace",
        config: || Some(json!({})),
        watches: PODS,
        labels_deployments: false,
    },
    Policy {
        name: "require-pdb",
        config: || Some(json!({"replicasAbove": 1})),
        watches: &[("apps/v1", "Deployment"), ("policy/v1", "PodDisruptionBudget")],
        labels_deployments: false,
    },
];

/// Namespaces no library WinkPlugin applies in: the control plane's and
/// node agents' (static Pods on the host's network, images by tag).
pub const EXCLUDED_NAMESPACES: &[&str] = &["kube-system"];

/// The label every library WinkPlugin carries (`kubectl get wp -l
/// wink.dev/library`).
pub const LABEL: &str = "wink.dev/library";

/// What `--library` and its flags ask for.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Names, comma-separated (each flag may hold several), or `all`.
    pub names: Vec<String>,
    /// Where the components were pushed: `registry[:port]/path`; the
    /// policy's name is the repository's last segment.
    pub registry: Option<String>,
    /// The tag pushed (without `components`).
    pub tag: String,
    /// A build's output with `<crate>.wasm` per policy: each source is
    /// pinned to the digest `wink push` gives that component.
    pub components: Option<std::path::PathBuf>,
    /// `NAME=JSON`: a policy's config instead of its default.
    pub configs: Vec<String>,
}

/// The policies `names` choose (`all`: every one), in the library's
/// order; an unknown name is an error listing the library's names.
pub fn select(names: &[String]) -> anyhow::Result<Vec<&'static Policy>> {
    let asked: Vec<&str> = names
        .iter()
        .flat_map(|n| n.split(','))
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect();
    anyhow::ensure!(
        !asked.is_empty(),
        "--library: name policies or `all` ({})",
        known()
    );
    if let Some(bad) = asked
        .iter()
        .find(|n| **n != "all" && !POLICIES.iter().any(|p| p.name == **n))
    {
        anyhow::bail!(
            "--library: no policy {bad:?} in the library; its policies: {} (or `all`)",
            known()
        );
    }
    let all = asked.contains(&"all");
    Ok(POLICIES
        .iter()
        .filter(|p| all || asked.contains(&p.name))
        .collect())
}

fn known() -> String {
    POLICIES.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
}

/// The configs given by `--library-config NAME=JSON`, checked: a known
/// policy among those chosen, a JSON object of at most the spec's cap.
fn configs(given: &[String], chosen: &[&Policy]) -> anyhow::Result<Vec<(String, Value)>> {
    given
        .iter()
        .map(|c| {
            let (name, text) = c
                .split_once('=')
                .ok_or_else(|| anyhow::anyhow!("--library-config {c:?}: NAME=JSON"))?;
            anyhow::ensure!(
                chosen.iter().any(|p| p.name == name),
                "--library-config {name}: not a policy --library chose"
            );
            anyhow::ensure!(
                text.len() <= crate::winkplugins::spec::MAX_CONFIG_BYTES,
                "--library-config {name}: over {} bytes",
                crate::winkplugins::spec::MAX_CONFIG_BYTES
            );
            let value: Value = serde_json::from_str(text)
                .map_err(|e| anyhow::anyhow!("--library-config {name}: not JSON: {e}"))?;
            anyhow::ensure!(value.is_object(), "--library-config {name}: a JSON object");
            Ok((name.to_string(), value))
        })
        .collect()
}

/// The OCI reference of `policy` under `registry`: by tag, or by the
/// manifest digest `wink push` gives its component in `components`.
fn source(policy: &Policy, registry: &str, o: &Options) -> anyhow::Result<String> {
    let repository = format!("{}/{}", registry.trim_end_matches('/'), policy.name);
    let reference = match &o.components {
        None => format!("{repository}:{}", o.tag),
        Some(dir) => {
            let path = dir.join(policy.file());
            let bytes = wink_input::read_file(
                &path,
                crate::runtime::plugin_file::MAX_COMPONENT_BYTES,
                "component",
            )
            .map_err(|e| anyhow::anyhow!("{}: {e:#}", policy.name))?;
            let built = wink_oci::artifact::build(&bytes, wink_oci::artifact::created()?)
                .map_err(|e| anyhow::anyhow!("{}: {}: {e:#}", policy.name, path.display()))?;
            format!("{repository}@{}", built.manifest_digest)
        }
    };
    wink_oci::fetch::parse_reference(&reference)
        .map_err(|e| anyhow::anyhow!("--library-registry {registry:?}: {e:#}"))?;
    Ok(reference)
}

/// The WinkPlugin of each chosen policy, the ClusterRole (bound to wink's
/// ServiceAccount in `namespace`) reading what they watch and writing
/// their results in `report_api`, and that API's CRDs.
pub fn documents(
    o: &Options,
    namespace: &str,
    report_api: crate::reports::ReportApi,
) -> anyhow::Result<Vec<Value>> {
    let chosen = select(&o.names)?;
    let registry = o.registry.as_deref().ok_or_else(|| {
        anyhow::anyhow!(
            "--library needs --library-registry REGISTRY/PATH: where `wink push` put the policies' components"
        )
    })?;
    let configs = configs(&o.configs, &chosen)?;
    let mut docs = Vec::new();
    let mut reads = std::collections::BTreeSet::new();
    for p in &chosen {
        let config = configs
            .iter()
            .find(|(n, _)| n == p.name)
            .map(|(_, v)| v.clone())
            .or_else(p.config);
        if p.name == "allowed-registries" && config.is_none() {
            anyhow::bail!(
                "allowed-registries trusts no registry by default: give --library-config 'allowed-registries={{\"registries\": [\"registry.example.com/\"]}}'"
            );
        }
        let mut grant = json!({"mode": "enforce"});
        if p.labels_deployments {
            grant["events"] = json!(true);
            grant["writes"] = json!([{"apiVersion": "apps/v1", "kind": "Deployment", "verbs": ["patch"]}]);
        }
        let mut spec = json!({
            "source": {"oci": source(p, registry, o)?},
            "grant": grant,
            "exclude": {"namespaces": EXCLUDED_NAMESPACES},
        });
        if let Some(c) = config {
            spec["config"] = c;
        }
        docs.push(json!({"apiVersion": "wink.dev/v1alpha1", "kind": "WinkPlugin",
            "metadata": {"name": p.name, "labels": {LABEL: "true"}}, "spec": spec}));
        reads.extend(p.watches.iter().copied());
    }
    let labels = chosen.iter().any(|p| p.labels_deployments);
    docs.extend(role(&reads, labels, namespace, report_api));
    // Every policy gives results: the reports' CRDs ship with them.
    docs.extend(crate::reports::crd::definitions(report_api));
    Ok(docs)
}

/// `wink-library` (ClusterRole and binding): list and watch of what the
/// policies watch, their reports (as `wink manifests` gives a reporting
/// plugin), patch of Deployments and Events for `require-labels`.
fn role(
    reads: &std::collections::BTreeSet<(&str, &str)>,
    labels: bool,
    namespace: &str,
    report_api: crate::reports::ReportApi,
) -> [Value; 2] {
    let mut rules: Vec<Value> = reads
        .iter()
        .map(|(api_version, kind)| {
            let (group, plural) = super::group_resource(api_version, kind);
            json!({"apiGroups": [group], "resources": [plural], "verbs": ["list", "watch"]})
        })
        .collect();
    for namespaced in [true, false] {
        rules.push(
            json!({"apiGroups": [report_api.group()], "resources": [report_api.plural(namespaced)],
            "verbs": ["get", "list", "create", "patch", "delete"]}),
        );
    }
    if labels {
        rules.push(json!({"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["patch"]}));
        rules.push(json!({"apiGroups": ["apps"], "resources": ["deployments/status"], "verbs": ["patch"]}));
        rules.push(
            json!({"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]}),
        );
    }
    let labels = json!({"app.kubernetes.io/name": "wink"});
    [
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "wink-library", "labels": labels}, "rules": rules}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "wink-library", "labels": labels},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "wink-library"},
         "subjects": [{"kind": "ServiceAccount", "name": "wink", "namespace": namespace}]}),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(names: &[&str]) -> Options {
        Options {
            names: names.iter().map(|n| n.to_string()).collect(),
            registry: Some("registry.example.com/wink".into()),
            tag: "v1".into(),
            components: None,
            configs: vec![r#"allowed-registries={"registries": ["registry.example.com/"]}"#.into()],
        }
    }

    fn plugins(docs: &[Value]) -> Vec<&Value> {
        docs.iter().filter(|d| d["kind"] == "WinkPlugin").collect()
    }

    #[test]
    fn all_is_every_policy_each_enforcing_by_tag_outside_kube_system() {
        let docs = documents(&options(&["all"]), "wink-system", Default::default()).unwrap();
        let wps = plugins(&docs);
        assert_eq!(wps.len(), POLICIES.len());
        for (wp, p) in wps.iter().zip(&POLICIES) {
            assert_eq!(wp["metadata"]["name"], p.name);
            assert_eq!(wp["metadata"]["labels"][LABEL], "true");
            assert_eq!(
                wp["spec"]["source"]["oci"],
                format!("registry.example.com/wink/{}:v1", p.name)
            );
            assert_eq!(wp["spec"]["grant"]["mode"], "enforce");
            assert_eq!(wp["spec"]["exclude"]["namespaces"], json!(["kube-system"]));
            // Every spec is one the controller reads.
            crate::winkplugins::spec::parse(wp).unwrap();
        }
        let labels = wps
            .iter()
            .find(|w| w["metadata"]["name"] == "require-labels")
            .unwrap();
        assert_eq!(labels["spec"]["grant"]["events"], true);
        let registries = wps
            .iter()
            .find(|w| w["metadata"]["name"] == "allowed-registries")
            .unwrap();
        assert_eq!(
            registries["spec"]["config"],
            json!({"registries": ["registry.example.com/"]})
        );
        let role = docs.iter().find(|d| d["kind"] == "ClusterRole").unwrap();
        let rules = role["rules"].to_string();
        for resource in [
            "pods",
            "namespaces",
            "cronjobs",
            "services",
            "ingresses",
            "poddisruptionbudgets",
        ] {
            assert!(rules.contains(&format!("\"{resource}\"")), "{resource}: {rules}");
        }
        let binding = docs.iter().find(|d| d["kind"] == "ClusterRoleBinding").unwrap();
        assert_eq!(binding["subjects"][0]["namespace"], "wink-system");
    }

    #[test]
    fn names_choose_in_the_librarys_order_and_an_unknown_one_lists_them() {
        let chosen = select(&["require-pdb,pod-security".into()]).unwrap();
        assert_eq!(
            chosen.iter().map(|p| p.name).collect::<Vec<_>>(),
            ["pod-security", "require-pdb"]
        );
        let e = select(&["pod-security,nope".into()]).unwrap_err().to_string();
        assert!(e.contains("no policy \"nope\""), "{e}");
        assert!(e.contains("disallow-latest-tag, allowed-registries"), "{e}");
        let docs = documents(&options(&["block-service-types"]), "ns", Default::default()).unwrap_err();
        assert!(
            docs.to_string().contains("not a policy --library chose"),
            "{docs}"
        );
        let role = documents(
            &options(&["block-service-types", "allowed-registries"]),
            "ns",
            Default::default(),
        )
        .unwrap();
        let rules = role.iter().find(|d| d["kind"] == "ClusterRole").unwrap()["rules"].to_string();
        assert!(rules.contains("services") && rules.contains("pods"), "{rules}");
        assert!(
            !rules.contains("events.k8s.io"),
            "no Event for policies that record none: {rules}"
        );
    }

    #[test]
    fn allowed_registries_needs_a_config_and_a_registry_is_needed() {
        let mut o = options(&["allowed-registries"]);
        o.configs.clear();
        let e = documents(&o, "ns", Default::default()).unwrap_err().to_string();
        assert!(e.contains("--library-config 'allowed-registries="), "{e}");
        let mut o = options(&["pod-security"]);
        o.configs.clear();
        o.registry = None;
        let e = documents(&o, "ns", Default::default()).unwrap_err().to_string();
        assert!(e.contains("--library-registry"), "{e}");
        o.registry = Some("Not A Registry!".into());
        assert!(documents(&o, "ns", Default::default()).is_err());
        let mut o = options(&["allowed-registries"]);
        o.configs = vec!["allowed-registries=[1]".into()];
        assert!(
            documents(&o, "ns", Default::default())
                .unwrap_err()
                .to_string()
                .contains("a JSON object")
        );
    }

    #[test]
    fn components_pin_each_source_to_the_digest_a_push_gives() {
        let dir = std::env::temp_dir().join(format!("wink-library-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // The smallest component: the preamble alone.
        let component = b"\0asm\x0d\0\x01\0".to_vec();
        std::fs::write(dir.join("require_pdb.wasm"), &component).unwrap();
        let mut o = options(&["require-pdb"]);
        o.configs.clear();
        o.components = Some(dir.clone());
        let docs = documents(&o, "ns", Default::default()).unwrap();
        let digest = wink_oci::artifact::build(&component, None)
            .unwrap()
            .manifest_digest;
        assert_eq!(
            plugins(&docs)[0]["spec"]["source"]["oci"],
            format!("registry.example.com/wink/require-pdb@{digest}")
        );
        let mut o = options(&["pod-security"]);
        o.configs.clear();
        o.components = Some(dir.clone());
        let e = documents(&o, "ns", Default::default()).unwrap_err();
        assert!(format!("{e:#}").contains("pod-security"), "{e:#}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
