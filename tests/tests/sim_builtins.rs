//! The built-in kinds policies target beyond workloads (Ingress,
//! IngressClass, NetworkPolicy, HorizontalPodAutoscaler, Job, CronJob,
//! EndpointSlice, PersistentVolumeClaim, ResourceQuota, LimitRange,
//! StorageClass, PriorityClass, PodDisruptionBudget,
//! ValidatingAdmissionPolicy and its binding) served by the simulated API
//! server as kube-apiserver v1.36 serves them: discovered, created, read,
//! listed and watched through the `kube` client; their server-side
//! tables' cells what the real server printed for the same manifests;
//! listed by `kubectl api-resources` and read by `kubectl get` with their
//! short names.

use crate::kubectl_support;

use futures::StreamExt;
use kube::api::{Api, DynamicObject, ListParams, PostParams, WatchEvent, WatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::{Discovery, Scope};
use kubectl_support::have_kubectl;
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::Duration;
use wink_sim::{Sim, SimConfig};

/// One object of each kind; the manifests given to kube-apiserver v1.36
/// for the expected cells below.
const MANIFESTS: &str = r#"
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx}
spec: {controller: k8s.io/ingress-nginx}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: default}
spec:
  ingressClassName: nginx
  tls: [{hosts: [a.example.com], secretName: tls}]
  rules:
  - host: a.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
      - {path: /api, pathType: Prefix, backend: {service: {name: api, port: {number: 8080}}}}
  - host: b.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: b, port: {name: http}}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny, namespace: default}
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Ingress]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: default}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 5
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: once, namespace: default}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: default}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: c, image: busybox}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-abc, namespace: default, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
ports: [{name: http, port: 80, protocol: TCP}]
endpoints: [{addresses: [10.0.0.1]}, {addresses: [10.0.0.2]}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: default}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: standard
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: q, namespace: default}
spec: {hard: {pods: "10", requests.cpu: "4"}}
---
apiVersion: v1
kind: LimitRange
metadata: {name: lr, namespace: default}
spec:
  limits: [{type: Container, default: {cpu: 500m}}]
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: standard}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
description: high
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: default}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: replicas}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}
  validations:
  - {expression: "object.spec.replicas <= 5"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: replicas}
spec:
  policyName: replicas
  validationActions: [Deny]
"#;

/// Per kind: plural, short name (or the plural), and the cells of its
/// object's row in the table kube-apiserver v1.36 answered for
/// `MANIFESTS` (Name first; null where the real one is time- or
/// uid-dependent).
fn expected() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "ingressclasses",
            "ingressclasses",
            json!(["nginx", "k8s.io/ingress-nginx", "<none>", null]),
        ),
        (
            "ingresses",
            "ing",
            json!(["web", "nginx", "a.example.com,b.example.com", "", "80, 443", null]),
        ),
        ("networkpolicies", "netpol", json!(["deny", "app=web", null])),
        (
            "horizontalpodautoscalers",
            "hpa",
            json!(["web", "Deployment/web", "cpu: <unknown>/80%", "2", 5, 0, null]),
        ),
        (
            "jobs",
            "jobs",
            json!(["once", "Running", "0/1", "", null, "c", "busybox", null]),
        ),
        (
            "cronjobs",
            "cj",
            json!([
                "nightly",
                "0 3 * * *",
                "<none>",
                "False",
                0,
                "<none>",
                null,
                "c",
                "busybox",
                "<none>"
            ]),
        ),
        (
            "endpointslices",
            "endpointslices",
            json!(["web-abc", "IPv4", "80", "10.0.0.1,10.0.0.2", null]),
        ),
        (
            "persistentvolumeclaims",
            "pvc",
            json!([
                "data",
                "Pending",
                "",
                "",
                "",
                "standard",
                "<unset>",
                null,
                "Filesystem"
            ]),
        ),
        ("resourcequotas", "quota", json!(["q", "", "", null])),
        ("limitranges", "limits", json!(["lr", null])),
        (
            "storageclasses",
            "sc",
            json!([
                "standard",
                "kubernetes.io/no-provisioner",
                "Delete",
                "WaitForFirstConsumer",
                false,
                null
            ]),
        ),
        (
            "priorityclasses",
            "pc",
            json!(["high", 1000, false, null, "PreemptLowerPriority"]),
        ),
        ("poddisruptionbudgets", "pdb", json!(["web", "1", "N/A", 0, null])),
        (
            "validatingadmissionpolicies",
            "validatingadmissionpolicies",
            json!(["replicas", 1, "<unset>", null]),
        ),
        (
            "validatingadmissionpolicybindings",
            "validatingadmissionpolicybindings",
            json!(["replicas", "replicas", "<unset>", null]),
        ),
    ]
}

fn manifests() -> Vec<Value> {
    serde_norway::Deserializer::from_str(MANIFESTS)
        .map(|d| Value::deserialize(d).unwrap())
        .collect()
}

/// The path of an object's collection: `/api/v1/namespaces/default/pvc...`.
fn collection(o: &Value, plural: &str) -> String {
    let av = o["apiVersion"].as_str().unwrap();
    let root = match av.contains('/') {
        true => format!("/apis/{av}"),
        false => format!("/api/{av}"),
    };
    match o["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{root}/namespaces/{ns}/{plural}"),
        None => format!("{root}/{plural}"),
    }
}

#[tokio::test]
async fn policy_kinds_are_discovered_written_read_listed_watched_and_printed() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let client = sim.client();
    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    let expected = expected();
    let objects = manifests();
    assert_eq!(objects.len(), expected.len());
    for (o, (plural, _, cells)) in objects.iter().zip(&expected) {
        let (group, version) = match o["apiVersion"].as_str().unwrap().split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", o["apiVersion"].as_str().unwrap()),
        };
        let kind = o["kind"].as_str().unwrap();
        let name = o["metadata"]["name"].as_str().unwrap();
        let (ar, caps) = discovery
            .resolve_gvk(&GroupVersionKind::gvk(group, version, kind))
            .unwrap_or_else(|| panic!("discovery lists {kind}"));
        assert_eq!(ar.plural, *plural);
        let namespaced = o["metadata"]["namespace"].is_string();
        assert_eq!(caps.scope == Scope::Namespaced, namespaced, "{kind}'s scope");
        let api: Api<DynamicObject> = match namespaced {
            true => Api::namespaced_with(client.clone(), "default", &ar),
            false => Api::all_with(client.clone(), &ar),
        };
        let rv = sim.current_resource_version().to_string();
        let mut watch = api.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
        let obj: DynamicObject = serde_json::from_value(o.clone()).unwrap();
        api.create(&PostParams::default(), &obj)
            .await
            .unwrap_or_else(|e| panic!("create {kind}: {e}"));
        let got = api.get(name).await.unwrap();
        assert_eq!(got.types.as_ref().unwrap().kind, kind);
        let listed = api.list(&ListParams::default()).await.unwrap();
        assert_eq!(listed.items.len(), 1, "{kind}");
        let event = tokio::time::timeout(Duration::from_secs(10), watch.next())
            .await
            .unwrap_or_else(|_| panic!("a watch event for {kind}"))
            .unwrap()
            .unwrap();
        match event {
            WatchEvent::Added(a) => assert_eq!(a.metadata.name.as_deref(), Some(name)),
            e => panic!("{kind}: {e:?}"),
        }
        // The row kube-apiserver printed for the same object.
        let req = http::Request::get(format!("{}?includeObject=None", collection(o, plural)))
            .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
            .body(Vec::new())
            .unwrap();
        let table: Value = client.request(req).await.unwrap();
        let row = table["rows"][0]["cells"].as_array().unwrap();
        let want = cells.as_array().unwrap();
        assert_eq!(row.len(), want.len(), "{kind}: {table}");
        for (i, (have, want)) in row.iter().zip(want).enumerate() {
            if !want.is_null() {
                assert_eq!(
                    have, want,
                    "{kind}: cell {i} ({})",
                    table["columnDefinitions"][i]["name"]
                );
            }
        }
    }
}

#[tokio::test]
async fn kubectl_lists_and_gets_policy_kinds_by_short_name() {
    if !have_kubectl() {
        return;
    }
    let e = kubectl_support::env("policy-kinds", SimConfig::default()).await;
    let file = e.dir.join("kinds.yaml");
    std::fs::write(&file, MANIFESTS).unwrap();
    let out = e.ok(&["create", "-f", file.to_str().unwrap()]).await;
    assert_eq!(out.lines().count(), expected().len(), "{out}");
    let resources = e.ok(&["api-resources", "-o", "wide"]).await;
    let line = |plural: &str| {
        resources
            .lines()
            .find(|l| l.split_whitespace().next() == Some(plural))
            .unwrap_or_else(|| panic!("api-resources lists {plural}:\n{resources}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    for (plural, short, _) in expected() {
        let words = line(plural);
        if short != plural {
            assert_eq!(words[1], short, "{plural}'s short name");
        }
        let name = e.ok(&["get", short, "-A", "-o", "name"]).await;
        assert_eq!(name.lines().count(), 1, "kubectl get {short}: {name}");
    }
    for (plural, category) in [
        ("horizontalpodautoscalers", "all"),
        ("jobs", "all"),
        ("cronjobs", "all"),
        ("validatingadmissionpolicies", "api-extensions"),
    ] {
        assert_eq!(line(plural).last(), Some(&category), "{plural}");
    }
    let all = e.ok(&["get", "all", "-n", "default", "-o", "name"]).await;
    for kind in [
        "horizontalpodautoscaler.autoscaling/web",
        "job.batch/once",
        "cronjob.batch/nightly",
    ] {
        assert!(all.contains(kind), "kubectl get all lacks {kind}:\n{all}");
    }
    let wide = e.ok(&["get", "pvc", "-n", "default", "-o", "wide"]).await;
    let header: Vec<&str> = wide
        .lines()
        .next()
        .unwrap()
        .split("  ")
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .collect();
    assert_eq!(
        header,
        [
            "NAME",
            "STATUS",
            "VOLUME",
            "CAPACITY",
            "ACCESS MODES",
            "STORAGECLASS",
            "VOLUMEATTRIBUTESCLASS",
            "AGE",
            "VOLUMEMODE"
        ],
        "{wide}"
    );
}
