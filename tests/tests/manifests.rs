//! End-to-end: `wink manifests` derives a least-privilege deployment from
//! the plugins themselves. For the example plugins and a grants file, the
//! ClusterRole grants exactly what they watch and may write (asserted rule
//! by rule; a plugin that reports brings the PolicyReport CRDs and rights on
//! the reports only, or with `--report-api openreports` the OpenReports
//! ones), and real `kubectl apply` of the output succeeds on the
//! simulated server (skipped where kubectl is not installed). A plugin that
//! `wink run` would not load (Secrets without a grant, in any spelling) gets
//! no rule, and stderr says so.

use crate::common;

use common::{plugin, scratch, wink_bin};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::Api;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use wink_sim::{Sim, SimConfig};

const KUBECTL: &str = "/usr/bin/kubectl";

const GRANTS: &str = "plugins:
  require-labels:
    events: true
    writes: [{apiVersion: apps/v1, kind: Deployment, verbs: [patch]}]
  namespace-defaults:
    writes: [{apiVersion: v1, kind: ConfigMap, verbs: [create]}]
  ttl-reaper:
    writes: [{apiVersion: v1, kind: ConfigMap, verbs: [delete], namespaces: [scratch]}]
";

const REPORT_VERBS: &[&str] = &["create", "delete", "get", "list", "patch"];

fn manifests(dir: &Path) -> (String, Vec<Value>) {
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    for (krate, name) in [
        ("require_labels", "require-labels"),
        ("namespace_defaults", "namespace-defaults"),
        ("ttl_reaper", "ttl-reaper"),
        ("pod_logger", "pod-logger"),
    ] {
        std::fs::copy(plugin(krate), plugins.join(format!("{name}.wasm"))).unwrap();
    }
    let grants = dir.join("grants.yaml");
    std::fs::write(&grants, GRANTS).unwrap();
    let out = Command::new(wink_bin())
        .args(["manifests", "--plugins"])
        .arg(&plugins)
        .arg("--grants")
        .arg(&grants)
        .args(["--namespace", "wink-system", "--image", "wink:test"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let docs = serde_norway::Deserializer::from_str(&text)
        .map(|d| serde_norway::with::singleton_map_recursive::deserialize::<Value, _>(d).unwrap())
        .collect();
    (text, docs)
}

/// (apiGroup, resource) -> verbs, of one Role or ClusterRole.
fn rules(role: &Value) -> Vec<(String, String, Vec<String>)> {
    role["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let s = |v: &Value| v.as_str().unwrap().to_string();
            let verbs = r["verbs"].as_array().unwrap().iter().map(s).collect();
            (s(&r["apiGroups"][0]), s(&r["resources"][0]), verbs)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rbac_is_exactly_what_the_plugins_need_and_applies_with_kubectl() {
    let dir = scratch("manifests");
    let (text, docs) = manifests(&dir);
    let find = |kind: &'static str| docs.iter().filter(move |d| d["kind"] == kind);
    let cluster_role = find("ClusterRole").next().expect("a ClusterRole");
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let rule = |g: &str, r: &str, v: &[&str]| (g.to_string(), r.to_string(), owned(v));
    assert_eq!(
        rules(cluster_role),
        [
            rule("", "configmaps", &["create", "list", "watch"]),
            rule("", "namespaces", &["list", "watch"]),
            rule("", "pods", &["list", "watch"]),
            rule("apps", "deployments", &["list", "patch", "watch"]),
            rule("apps", "deployments/status", &["patch"]),
            rule("events.k8s.io", "events", &["create", "patch"]),
            // require-labels reports: the writer's own reports, no CRD rights.
            rule("wgpolicyk8s.io", "clusterpolicyreports", REPORT_VERBS),
            rule("wgpolicyk8s.io", "policyreports", REPORT_VERBS),
        ]
    );
    let crds: Vec<&str> = find("CustomResourceDefinition")
        .map(|c| c["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        crds,
        [
            "policyreports.wgpolicyk8s.io",
            "clusterpolicyreports.wgpolicyk8s.io"
        ]
    );
    let role_in = |ns: &str| find("Role").find(|r| r["metadata"]["namespace"] == ns).unwrap();
    assert_eq!(
        rules(role_in("scratch")),
        [rule("", "configmaps", &["delete"])],
        "the namespaced grant"
    );
    assert_eq!(
        rules(role_in("wink-system")),
        [rule(
            "coordination.k8s.io",
            "leases",
            &["create", "get", "update"]
        )],
        "leader election's Lease"
    );
    // require-labels serves a mutating webhook: the webhook server's
    // Service, the CA Secret's Role and the configurations' ClusterRole.
    assert_eq!(find("Role").count(), 3);
    let admission = find("Role")
        .find(|r| r["metadata"]["name"] == "wink-admission")
        .unwrap();
    assert_eq!(admission["metadata"]["namespace"], "wink-system");
    assert_eq!(admission["rules"][0]["resourceNames"][0], "wink-admission-ca");
    let configurations = find("ClusterRole")
        .find(|r| r["metadata"]["name"] == "wink-admission")
        .unwrap();
    assert_eq!(
        configurations["rules"][0]["apiGroups"][0],
        "admissionregistration.k8s.io"
    );
    let service = find("Service")
        .find(|s| s["metadata"]["name"] == "wink")
        .expect("the webhook Service");
    assert_eq!(service["spec"]["ports"][0]["port"], 443);
    let deployment = find("Deployment").next().unwrap();
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(
        deployment["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"],
        true
    );
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(deployment["spec"]["replicas"], 2);
    assert!(
        container["args"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "--leader-elect")
    );
    assert!(
        container["args"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "--admission-addr=0.0.0.0:8443")
    );
    assert!(find("PodDisruptionBudget").next().is_some() && find("Service").next().is_some());
    let grants = find("ConfigMap").next().unwrap();
    assert_eq!(grants["data"]["grants.yaml"], GRANTS);

    if !Path::new(KUBECTL).exists() {
        println!("kubectl is not installed at {KUBECTL}: skipping kubectl apply");
        return;
    }
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let kubeconfig = dir.join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).unwrap();
    // The Role's namespace must exist, as on any cluster.
    let ns = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "scratch"}});
    sim.insert(ns).unwrap();
    let file = dir.join("wink.yaml");
    std::fs::write(&file, &text).unwrap();
    let out = tokio::process::Command::new(KUBECTL)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("apply")
        .arg("-f")
        .arg(&file)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl apply: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let applied = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        applied.lines().filter(|l| l.ends_with(" created")).count(),
        docs.len(),
        "{applied}"
    );
    let role = Api::<ClusterRole>::all(sim.client()).get("wink").await.unwrap();
    assert_eq!(role.rules.unwrap().len(), 8);
    let d = Api::<Deployment>::namespaced(sim.client(), "wink-system")
        .get("wink")
        .await
        .unwrap();
    assert_eq!(
        d.spec.template.spec.unwrap().service_account_name.as_deref(),
        Some("wink")
    );
}

/// `wink manifests` for the plugins of `plugins`, no grants file: its
/// documents and its stderr.
fn manifests_of(plugins: &Path) -> (Vec<Value>, String) {
    let (docs, stderr, _) = manifests_with(plugins, &[]);
    (docs, stderr)
}

/// `wink manifests` for the plugins of `plugins` with `extra` arguments:
/// its documents, its stderr and its output.
fn manifests_with(plugins: &Path, extra: &[&str]) -> (Vec<Value>, String, String) {
    let out = Command::new(wink_bin())
        .args(["manifests", "--plugins"])
        .arg(plugins)
        .args(["--namespace", "wink-system", "--image", "wink:test"])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let text = String::from_utf8(out.stdout).unwrap();
    let docs = serde_norway::Deserializer::from_str(&text)
        .map(|d| serde_norway::with::singleton_map_recursive::deserialize::<Value, _>(d).unwrap())
        .collect();
    (docs, stderr, text)
}

#[test]
fn a_plugin_watching_secrets_without_a_grant_gets_no_rule_and_a_warning() {
    let dir = scratch("manifests_secrets");
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(plugin("pod_logger"), plugins.join("pod-logger.wasm")).unwrap();
    let watching = |api_version: &str, namespace: Option<&str>| {
        let mut w = serde_json::json!({"api_version": api_version, "kind": "Secret"});
        if let Some(ns) = namespace {
            w["namespace"] = ns.into();
        }
        serde_json::json!({"watches": [w]}).to_string()
    };
    for (name, config) in [
        ("in-kube-system", watching("v1", Some("kube-system"))),
        ("everywhere", watching("v1", None)),
        ("slash", watching("/v1", Some("kube-system"))),
    ] {
        std::fs::copy(plugin("cache_probe"), plugins.join(format!("{name}.wasm"))).unwrap();
        std::fs::write(plugins.join(format!("{name}.json")), config).unwrap();
    }
    let (docs, stderr) = manifests_of(&plugins);
    let roles: Vec<&Value> = docs
        .iter()
        .filter(|d| d["kind"] == "ClusterRole" || d["kind"] == "Role")
        .collect();
    assert!(
        !roles.iter().any(|r| r["rules"].to_string().contains("secrets")),
        "{roles:#?}"
    );
    assert!(
        !docs.iter().any(|d| d["metadata"]["namespace"] == "kube-system"),
        "no Role in kube-system: {docs:#?}"
    );
    let cluster_role = roles.iter().find(|r| r["kind"] == "ClusterRole").unwrap();
    assert_eq!(
        rules(cluster_role),
        [(
            "".to_string(),
            "pods".to_string(),
            vec!["list".to_string(), "watch".to_string()]
        )],
        "pod-logger keeps its rule"
    );
    for name in ["in-kube-system", "everywhere", "slash"] {
        let said = format!("`wink run` would not load plugin {name}, so it is left out of the RBAC");
        assert_eq!(
            stderr
                .lines()
                .filter(|l| l.starts_with("wink manifests: ") && l.contains(&said))
                .count(),
            1,
            "{name}: {stderr}"
        );
    }
    assert!(
        stderr.contains("plugin everywhere asks for Secrets, which the operator has not granted"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_api_chooses_the_crds_the_rights_and_the_flag_and_applies() {
    let dir = scratch("manifests_report_api");
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(plugin("pod_security"), plugins.join("pod-security.wasm")).unwrap();
    let verbs: Vec<String> = REPORT_VERBS.iter().map(|v| v.to_string()).collect();
    // pod-security watches Pods and the Namespaces whose labels set levels.
    let watched = |resource: &str| {
        (
            "".to_string(),
            resource.to_string(),
            vec!["list".to_string(), "watch".to_string()],
        )
    };
    let mut openreports = String::new();
    for (extra, group, plurals) in [
        (
            &[][..],
            "wgpolicyk8s.io",
            ["policyreports", "clusterpolicyreports"],
        ),
        (
            &["--report-api=wgpolicyk8s"][..],
            "wgpolicyk8s.io",
            ["policyreports", "clusterpolicyreports"],
        ),
        (
            &["--report-api", "openreports"][..],
            "openreports.io",
            ["reports", "clusterreports"],
        ),
    ] {
        let (docs, _, text) = manifests_with(&plugins, extra);
        let crds: Vec<&str> = docs
            .iter()
            .filter(|d| d["kind"] == "CustomResourceDefinition")
            .map(|c| c["metadata"]["name"].as_str().unwrap())
            .collect();
        let names = plurals.map(|p| format!("{p}.{group}"));
        assert_eq!(crds, names, "{extra:?}");
        let cluster_role = docs.iter().find(|d| d["kind"] == "ClusterRole").unwrap();
        let rule = |p: &str| (group.to_string(), p.to_string(), verbs.clone());
        // Sorted by group: "" < openreports.io < wgpolicyk8s.io; plurals by name.
        let mut want = vec![
            watched("namespaces"),
            watched("pods"),
            rule(plurals[1]),
            rule(plurals[0]),
        ];
        want[2..].sort();
        assert_eq!(rules(cluster_role), want, "{extra:?}: rights on its reports only");
        let deployment = docs.iter().find(|d| d["kind"] == "Deployment").unwrap();
        let args = &deployment["spec"]["template"]["spec"]["containers"][0]["args"];
        let api = if group == "openreports.io" {
            "openreports"
        } else {
            "wgpolicyk8s"
        };
        assert!(
            args.as_array()
                .unwrap()
                .iter()
                .any(|a| *a == format!("--report-api={api}")),
            "{extra:?}: {args}"
        );
        if group == "openreports.io" {
            openreports = text;
        }
    }

    if !Path::new(KUBECTL).exists() {
        println!("kubectl is not installed at {KUBECTL}: skipping kubectl apply");
        return;
    }
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let kubeconfig = dir.join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).unwrap();
    let file = dir.join("wink.yaml");
    std::fs::write(&file, &openreports).unwrap();
    let kubectl = |args: &[&str]| {
        let out = Command::new(KUBECTL)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(args)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "kubectl {args:?}: {said}");
        said
    };
    kubectl(&["apply", "-f", file.to_str().unwrap()]);
    // The OpenReports kinds are served once their CRDs are applied.
    for kind in ["reports.openreports.io", "clusterreports.openreports.io"] {
        let said = kubectl(&["get", kind, "-A"]);
        assert!(said.contains("No resources found"), "{kind}: {said}");
    }
    let resources = kubectl(&["api-resources", "--api-group=openreports.io", "-o", "name"]);
    assert_eq!(
        resources.lines().collect::<Vec<_>>(),
        ["clusterreports.openreports.io", "reports.openreports.io"]
    );
}
