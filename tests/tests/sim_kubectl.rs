//! Real `kubectl` (v1.32, /usr/bin/kubectl) against the simulated API
//! server through a written kubeconfig. Skipped (with a message) only when
//! kubectl is not installed.

use crate::kubectl_support;

use kubectl_support::{Env, have_kubectl};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use wink_sim::SimConfig;

async fn env(name: &str) -> Env {
    kubectl_support::env(name, SimConfig::default()).await
}

/// What these tests add to the shared kubectl helpers.
trait Manifests {
    async fn apply_cm(&self, name: &str);
}

impl Manifests for Env {
    /// `kubectl create -f` of a ConfigMap manifest.
    async fn apply_cm(&self, name: &str) {
        let f = self.dir.join(format!("{name}.yaml"));
        std::fs::write(
            &f,
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata: {{a: \"1\"}}\n"),
        )
        .unwrap();
        self.ok(&["create", "-f", f.to_str().unwrap()]).await;
    }
}

const MANIFEST: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: demo
  labels: {app: web}
data:
  k: v1
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
"#;

#[tokio::test]
async fn kubectl_create_get_label_annotate_patch_delete() {
    if !have_kubectl() {
        return;
    }
    let e = env("crud").await;
    let file = e.dir.join("demo.yaml");
    std::fs::write(&file, MANIFEST).unwrap();
    let out = e.ok(&["create", "-f", file.to_str().unwrap()]).await;
    assert!(out.contains("configmap/demo created"), "{out}");
    assert!(out.contains("deployment.apps/web created"), "{out}");

    let cm = e.json(&["get", "configmap", "demo", "-o", "json"]).await;
    assert_eq!(cm["data"]["k"], "v1");
    assert_eq!(cm["kind"], "ConfigMap");
    let list = e.json(&["get", "deployments", "-o", "json"]).await;
    assert_eq!(list["items"][0]["metadata"]["name"], "web");
    assert_eq!(list["items"][0]["metadata"]["generation"], 1);

    e.ok(&["label", "configmap", "demo", "tier=front"]).await;
    e.ok(&["annotate", "configmap", "demo", "note=hello"]).await;
    e.ok(&[
        "patch",
        "configmap",
        "demo",
        "--type=merge",
        "-p",
        r#"{"data":{"k":"v2"}}"#,
    ])
    .await;
    e.ok(&["patch", "deployment", "web", "-p", r#"{"spec":{"replicas":3}}"#])
        .await;
    let cm = e.json(&["get", "configmap", "demo", "-o", "json"]).await;
    assert_eq!(cm["metadata"]["labels"]["tier"], "front");
    assert_eq!(cm["metadata"]["annotations"]["note"], "hello");
    assert_eq!(cm["data"]["k"], "v2");
    let d = e.json(&["get", "deployment", "web", "-o", "json"]).await;
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(d["metadata"]["generation"], 2);
    let out = e.ok(&["scale", "deployment", "web", "--replicas=5"]).await;
    assert!(out.contains("deployment.apps/web scaled"), "{out}");
    let d = e.json(&["get", "deployment", "web", "-o", "json"]).await;
    assert_eq!(d["spec"]["replicas"], 5);
    let sel = e
        .json(&["get", "configmaps", "-l", "tier=front", "-o", "json"])
        .await;
    assert_eq!(sel["items"].as_array().unwrap().len(), 1);
    let names = e.ok(&["get", "configmaps"]).await;
    assert!(names.contains("demo"), "{names}");

    let out = e.ok(&["delete", "configmap", "demo"]).await;
    assert!(out.contains("configmap \"demo\" deleted"), "{out}");
    let gone = e.cmd(&["get", "configmap", "demo"]).output().await.unwrap();
    assert!(!gone.status.success());
    let err = String::from_utf8_lossy(&gone.stderr);
    assert!(
        err.contains("NotFound") && err.contains("\"demo\" not found"),
        "{err}"
    );
    assert!(e.sim.request_count("patch", "configmaps") >= 3);
}

#[tokio::test]
async fn kubectl_get_watch_prints_events() {
    if !have_kubectl() {
        return;
    }
    let e = env("watch").await;
    e.apply_cm("first").await;
    let mut child = e
        .cmd(&["get", "configmaps", "-w", "-o", "name", "--request-timeout=30s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut created = false;
    while let Ok(Ok(Some(line))) = tokio::time::timeout_at(deadline, lines.next_line()).await {
        seen.push(line.clone());
        if line.contains("configmap/first") && !created {
            // The initial list was printed: the watch is (about to be) open.
            while e.sim.open_watches("configmaps") == 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            e.apply_cm("second").await;
            created = true;
        }
        if line.contains("configmap/second") {
            break;
        }
    }
    child.kill().await.ok();
    assert!(
        seen.iter().any(|l| l.contains("configmap/second")),
        "kubectl get -w printed {seen:?}"
    );
    assert!(e.sim.request_count("watch", "configmaps") >= 1);
}

#[tokio::test]
async fn kubectl_api_resources_and_crds() {
    if !have_kubectl() {
        return;
    }
    let e = env("discovery").await;
    let out = e.ok(&["api-resources"]).await;
    for r in [
        "pods",
        "configmaps",
        "deployments",
        "leases",
        "customresourcedefinitions",
        "namespaces",
    ] {
        assert!(out.contains(r), "api-resources lacks {r}:\n{out}");
    }
    let crd = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: v1
kind: Namespace
metadata: {name: team}
"#;
    let file = e.dir.join("crd.yaml");
    std::fs::write(&file, crd).unwrap();
    e.ok(&["create", "-f", file.to_str().unwrap()]).await;
    let w = e.dir.join("w.yaml");
    std::fs::write(
        &w,
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: team}\nspec: {size: 3}\n",
    )
    .unwrap();
    e.ok(&["create", "-f", w.to_str().unwrap()]).await;
    let out = e.ok(&["api-resources", "--api-group=example.com"]).await;
    assert!(out.contains("widgets") && out.contains("wd"), "{out}");
    let got = e.json(&["get", "wd", "-n", "team", "w1", "-o", "json"]).await;
    assert_eq!(got["spec"]["size"], 3);
    assert_eq!(got["apiVersion"], "example.com/v1");
}

/// `kubectl get` asks for server-side tables: the columns come from the
/// server (a CRD's additionalPrinterColumns, the default Name/Created At).
#[tokio::test]
async fn kubectl_get_prints_server_side_tables() {
    if !have_kubectl() {
        return;
    }
    let e = env("tables").await;
    let crd = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Color, type: string, jsonPath: ".spec.colors[0]"}
    - {name: Owner, type: string, jsonPath: .spec.owner, priority: 1}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
"#;
    let file = e.dir.join("crd.yaml");
    std::fs::write(&file, crd).unwrap();
    e.ok(&["create", "-f", file.to_str().unwrap()]).await;
    let g = e.dir.join("g.yaml");
    std::fs::write(
        &g,
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g1}\nspec: {size: 3, colors: [teal, red], owner: ann}\n",
    )
    .unwrap();
    e.ok(&["create", "-f", g.to_str().unwrap()]).await;
    let out = e.ok(&["get", "gadgets"]).await;
    let lines: Vec<Vec<&str>> = out.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(lines[0], ["NAME", "SIZE", "COLOR", "AGE"], "{out}");
    assert_eq!(lines[1][..3], ["g1", "3", "teal"], "{out}");
    let wide = e.ok(&["get", "gadgets", "-o", "wide"]).await;
    assert!(wide.contains("OWNER") && wide.contains("ann"), "{wide}");
    let crds = e.ok(&["get", "crds"]).await;
    assert!(crds.starts_with("NAME") && crds.contains("CREATED AT"), "{crds}");
    let nss = e.ok(&["get", "namespaces"]).await;
    assert!(nss.lines().next().unwrap().contains("STATUS"), "{nss}");
}

#[tokio::test]
async fn kubectl_auth_can_i() {
    if !have_kubectl() {
        return;
    }
    let e = env("can-i").await;
    assert_eq!(e.ok(&["auth", "can-i", "create", "pods"]).await.trim(), "yes");
    assert_eq!(
        e.ok(&["auth", "can-i", "list", "deployments", "-n", "x"])
            .await
            .trim(),
        "yes"
    );
    assert!(e.sim.request_count("create", "selfsubjectaccessreviews") >= 2);
    let rules = e.ok(&["auth", "can-i", "--list"]).await;
    assert!(rules.lines().any(|l| l.starts_with("*.*")), "{rules}");
    // A review is created, never read back: the real server's 405.
    let get = e
        .cmd(&["get", "selfsubjectaccessreviews"])
        .output()
        .await
        .unwrap();
    assert!(!get.status.success());
    let err = String::from_utf8_lossy(&get.stderr);
    assert!(
        err.contains("MethodNotAllowed")
            && err.contains("the server does not allow this method on the requested resource"),
        "{err}"
    );
}

const LIST: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: listed}
  data: {k: v}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: listed}
  spec:
    selector: {matchLabels: {app: listed}}
    template:
      metadata: {labels: {app: listed}}
      spec:
        containers: [{name: web, image: nginx}]
"#;

#[tokio::test]
async fn kubectl_create_a_list() {
    if !have_kubectl() {
        return;
    }
    let e = env("list").await;
    let file = e.dir.join("list.yaml");
    std::fs::write(&file, LIST).unwrap();
    let out = e.ok(&["create", "-f", file.to_str().unwrap()]).await;
    assert!(out.contains("configmap/listed created"), "{out}");
    assert!(out.contains("deployment.apps/listed created"), "{out}");
    let cm = e.json(&["get", "configmap", "listed", "-o", "json"]).await;
    assert_eq!(cm["data"]["k"], "v");
    let d = e.json(&["get", "deployment", "listed", "-o", "json"]).await;
    assert_eq!(d["spec"]["replicas"], 1);
}
