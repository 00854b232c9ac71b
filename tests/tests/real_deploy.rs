//! On a real kube-apiserver with RBAC (see `envtest`): what a new user does
//! first. `wink manifests --winkplugins` of the example plugins, as cargo
//! builds them (`pod_security.wasm`, `require_labels.wasm`), applies in one
//! `kubectl apply`; wink then runs with the rendered Deployment's arguments
//! as the rendered ServiceAccount (a TokenRequest token), writes its webhook
//! configurations, and the examples act at the door: a privileged Pod is
//! refused, a Deployment stored with its missing label. The API server's
//! audit log of wink's user shows no forbidden answer, and says which
//! rendered rules wink used: the ones it did not are printed (least
//! privilege measured, not assumed).

use crate::cache_support::{REQUIRE_LABELS_GRANT, free_port};
use crate::common::{Wink, plugin, scratch, wink_bin};
use crate::envtest::{ControlPlane, Options};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

const NS: &str = "wink-system";
const USER: &str = "system:serviceaccount:wink-system:wink";

/// The documents of a YAML stream.
fn documents(text: &str) -> Vec<Value> {
    serde_norway::Deserializer::from_str(text)
        .map(|d| serde_norway::with::singleton_map_recursive::deserialize::<Value, _>(d).unwrap())
        .filter(|d: &Value| !d.is_null())
        .collect()
}

/// The audit events of wink's ServiceAccount, one per finished request.
fn audit_events(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["user"]["username"] == USER && e["stage"] != "RequestReceived")
        .collect()
}

/// Whether an RBAC rule (of a Role in `scope`, or a ClusterRole: None)
/// allows the audited request `e`.
fn rule_covers(rule: &Value, scope: Option<&str>, e: &Value) -> bool {
    let r = &e["objectRef"];
    let listed = |field: &str, value: &str| {
        rule[field]
            .as_array()
            .is_some_and(|v| v.iter().any(|x| x == value || x == "*"))
    };
    let resource = match r["subresource"].as_str() {
        Some(sub) => format!("{}/{sub}", r["resource"].as_str().unwrap_or("")),
        None => r["resource"].as_str().unwrap_or("").to_string(),
    };
    let names_ok = match rule["resourceNames"].as_array() {
        Some(names) => names.iter().any(|n| *n == r["name"]),
        None => true,
    };
    scope.is_none_or(|ns| r["namespace"] == ns)
        && listed("apiGroups", r["apiGroup"].as_str().unwrap_or(""))
        && listed("resources", &resource)
        && listed("verbs", e["verb"].as_str().unwrap_or(""))
        && names_ok
}

async fn webhooks(kubectl: &crate::envtest::Kubectl, kind: &str) -> Vec<String> {
    let (ok, out, _) = kubectl.run(&["get", kind, "wink", "-o", "json"]).await;
    let v: Value = if ok {
        serde_json::from_str(&out).unwrap()
    } else {
        Value::Null
    };
    v["webhooks"]
        .as_array()
        .map(|w| {
            w.iter()
                .map(|h| h["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_apply_deploys_wink_and_it_enforces_as_its_service_account_without_a_forbidden_answer() {
    let dir = scratch("real_deploy");
    let policy = dir.join("audit-policy.yaml");
    let audit_log = dir.join("audit.log");
    std::fs::write(
        &policy,
        format!(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n\
             - level: Metadata\n  users: [\"{USER}\"]\n- level: None\n"
        ),
    )
    .unwrap();
    let options = Options {
        apiserver_args: vec![
            format!("--audit-policy-file={}", policy.display()),
            format!("--audit-log-path={}", audit_log.display()),
        ],
        ..Options::default()
    };
    let Some(cp) = ControlPlane::start(&options) else {
        return;
    };
    let kubectl = cp.kubectl(&dir);

    // The examples as cargo builds them: file stems with `_`.
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    for name in ["pod_security", "require_labels"] {
        std::fs::copy(plugin(name), plugins.join(format!("{name}.wasm"))).unwrap();
    }
    let grants = dir.join("grants.yaml");
    std::fs::write(&grants, REQUIRE_LABELS_GRANT).unwrap();
    let out = std::process::Command::new(wink_bin())
        .args([
            "manifests",
            "--winkplugins",
            "--namespace",
            NS,
            "--image",
            "wink:test",
        ])
        .arg("--plugins")
        .arg(&plugins)
        .arg("--grants")
        .arg(&grants)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let yaml = String::from_utf8(out.stdout).unwrap();

    // One apply on a fresh cluster.
    let (ok, stdout, stderr) = kubectl.apply(&yaml).await;
    assert!(ok, "kubectl apply failed:\n{stderr}\n{stdout}");

    // wink as the rendered ServiceAccount, with the rendered arguments
    // (paths and addresses made local: there is no kubelet to run the Pod,
    // and the API server reaches the webhook server on loopback).
    let docs = documents(&yaml);
    let deployment = docs
        .iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("a Deployment");
    let rendered: Vec<String> = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let (admin, webhook) = (free_port(), free_port());
    let kubeconfig = dir.join("wink.kubeconfig");
    cp.service_account_kubeconfig(NS, "wink", &kubeconfig).await;
    let mut args: Vec<String> = rendered
        .iter()
        .filter(|a| *a != "--log-format=json")
        .map(|a| match a.split_once('=') {
            Some(("--plugins", _)) => format!("--plugins={}", plugins.display()),
            Some(("--grants", _)) => format!("--grants={}", grants.display()),
            Some(("--admin-addr", _)) => format!("--admin-addr=127.0.0.1:{admin}"),
            Some(("--admission-addr", _)) => format!("--admission-addr=127.0.0.1:{webhook}"),
            _ => a.clone(),
        })
        .collect();
    args.extend([
        format!("--kubeconfig={}", kubeconfig.display()),
        format!("--admission-webhook-url=https://127.0.0.1:{webhook}"),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let env = [
        ("POD_NAMESPACE", std::ffi::OsStr::new(NS)),
        ("POD_NAME", std::ffi::OsStr::new("wink-0")),
    ];
    let wink = Wink::spawn_with_env(&dir, &args, &env);

    // Its webhook configurations, named after the plugins as Kubernetes
    // requires (the real server refuses `pod_security.validate.wink.dev`).
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let validating = webhooks(&kubectl, "validatingwebhookconfigurations").await;
        let mutating = webhooks(&kubectl, "mutatingwebhookconfigurations").await;
        if validating.contains(&"pod-security.validate.wink.dev".to_string())
            && mutating.contains(&"require-labels.mutate.wink.dev".to_string())
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no webhook configurations: {validating:?} {mutating:?}\n{}",
            wink.lines().join("\n")
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    let team = cp.namespace("team").await;
    let write = |name: &str, v: &Value| {
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, v.to_string()).unwrap();
        path.to_str().unwrap().to_string()
    };
    // pod-security: a privileged Pod is refused at the door.
    let privileged = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "root", "namespace": team},
        "spec": {"containers": [{"name": "c", "image": "i", "securityContext": {"privileged": true}}]}});
    let (ok, _, stderr) = kubectl
        .run(&["create", "--validate=false", "-f", &write("root", &privileged)])
        .await;
    assert!(!ok, "a privileged Pod was admitted");
    assert!(
        stderr.contains(r#"admission webhook "pod-security.validate.wink.dev" denied the request"#)
            && stderr.contains("privileged"),
        "{stderr}"
    );
    // require-labels: the Deployment is stored with its missing label.
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api", "namespace": team},
        "spec": {"selector": {"matchLabels": {"app": "api"}}, "template": {"metadata": {"labels": {"app": "api"}},
        "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    let (ok, _, stderr) = kubectl
        .run(&["apply", "--validate=false", "-f", &write("api", &deployment)])
        .await;
    assert!(ok, "{stderr}");
    assert!(stderr.contains("require-labels: missing label team"), "{stderr}");
    let stored: Value = serde_json::from_str(
        &kubectl
            .ok(&["get", "deployment", "api", "-n", &team, "-o", "json"])
            .await,
    )
    .unwrap();
    assert_eq!(stored["metadata"]["labels"]["team"], "unassigned", "{stored}");

    // No request of wink's was forbidden, in its log or the API server's.
    drop(wink);
    tokio::time::sleep(Duration::from_secs(2)).await; // the audit log's batch
    let events = audit_events(&audit_log);
    assert!(!events.is_empty(), "no audit events for {USER}");
    let forbidden: Vec<String> = events
        .iter()
        .filter(|e| e["responseStatus"]["code"] == 403)
        .map(|e| format!("{} {}", e["verb"], e["requestURI"]))
        .collect();
    assert!(forbidden.is_empty(), "forbidden: {forbidden:#?}");

    // Every request was allowed by a rendered rule; the rules no request
    // used are said (the note names them).
    let mut unused = Vec::new();
    for d in docs
        .iter()
        .filter(|d| d["kind"] == "Role" || d["kind"] == "ClusterRole")
    {
        let scope = d["metadata"]["namespace"].as_str();
        for rule in d["rules"].as_array().into_iter().flatten() {
            for verb in rule["verbs"].as_array().unwrap() {
                let mut one = rule.clone();
                one["verbs"] = json!([verb]);
                if !events.iter().any(|e| rule_covers(&one, scope, e)) {
                    unused.push(format!(
                        "{} {}/{}: {verb} {} {}",
                        d["kind"].as_str().unwrap(),
                        scope.unwrap_or("-"),
                        d["metadata"]["name"].as_str().unwrap(),
                        rule["apiGroups"],
                        rule["resources"]
                    ));
                }
            }
        }
    }
    println!(
        "rendered RBAC verbs no request used in this run ({}):",
        unused.len()
    );
    for u in &unused {
        println!("  {u}");
    }
}
