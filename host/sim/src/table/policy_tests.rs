//! Unit tests of the printers of the kinds policies target
//! (`policy_printers`, `policy_cells`): the columns kube-apiserver v1.36
//! prints and cells read as its printers read them.

use super::policy_cells::storage_class_name;
use super::printers::find;
use chrono::Utc;
use serde_json::{Value, json};

fn cells(group: &str, plural: &str, o: &Value) -> Vec<Value> {
    let p = find(group, plural).unwrap_or_else(|| panic!("{plural} has a printer"));
    let c = (p.cells)(o, Utc::now());
    assert_eq!(c.len(), p.columns.len(), "{plural}: one cell per column");
    c
}

fn names(group: &str, plural: &str) -> Vec<&'static str> {
    find(group, plural).unwrap().columns.iter().map(|c| c.0).collect()
}

/// The columns `kubectl get -o wide` printed against kube-apiserver
/// v1.36 for each kind (after NAME).
#[test]
fn columns_are_the_real_servers() {
    let want: &[(&str, &str, &[&str])] = &[
        (
            "networking.k8s.io",
            "ingresses",
            &["Class", "Hosts", "Address", "Ports", "Age"],
        ),
        (
            "networking.k8s.io",
            "ingressclasses",
            &["Controller", "Parameters", "Age"],
        ),
        ("networking.k8s.io", "networkpolicies", &["Pod-Selector", "Age"]),
        (
            "autoscaling",
            "horizontalpodautoscalers",
            &["Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"],
        ),
        (
            "batch",
            "jobs",
            &[
                "Status",
                "Completions",
                "Duration",
                "Age",
                "Containers",
                "Images",
                "Selector",
            ],
        ),
        (
            "batch",
            "cronjobs",
            &[
                "Schedule",
                "Timezone",
                "Suspend",
                "Active",
                "Last Schedule",
                "Age",
                "Containers",
                "Images",
                "Selector",
            ],
        ),
        (
            "discovery.k8s.io",
            "endpointslices",
            &["AddressType", "Ports", "Endpoints", "Age"],
        ),
        (
            "",
            "persistentvolumeclaims",
            &[
                "Status",
                "Volume",
                "Capacity",
                "Access Modes",
                "StorageClass",
                "VolumeAttributesClass",
                "Age",
                "VolumeMode",
            ],
        ),
        ("", "resourcequotas", &["Request", "Limit", "Age"]),
        (
            "storage.k8s.io",
            "storageclasses",
            &[
                "Provisioner",
                "ReclaimPolicy",
                "VolumeBindingMode",
                "AllowVolumeExpansion",
                "Age",
            ],
        ),
        (
            "scheduling.k8s.io",
            "priorityclasses",
            &["Value", "Global-Default", "Age", "PreemptionPolicy"],
        ),
        (
            "admissionregistration.k8s.io",
            "validatingadmissionpolicies",
            &["Validations", "ParamKind", "Age"],
        ),
        (
            "admissionregistration.k8s.io",
            "validatingadmissionpolicybindings",
            &["PolicyName", "ParamRef", "Age"],
        ),
    ];
    for (g, p, cols) in want {
        assert_eq!(names(g, p), *cols, "{p}");
    }
    assert!(
        find("", "limitranges").is_none(),
        "LimitRanges print Name / Created At"
    );
}

#[test]
fn ingress_hosts_ports_class() {
    let ing = json!({"spec": {"ingressClassName": "nginx", "tls": [{"hosts": ["a"]}],
        "rules": [{"host": "a.example.com"}, {"host": "b.example.com"}, {}]},
        "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.9"}, {"hostname": "lb.example"}, {"ip": "10.0.0.9"}]}}});
    let c = cells("networking.k8s.io", "ingresses", &ing);
    assert_eq!(
        c[..4],
        [
            json!("nginx"),
            json!("a.example.com,b.example.com"),
            json!("10.0.0.9,lb.example"),
            json!("80, 443")
        ]
    );
    let many = json!({"spec": {"rules": [{"host": "a"}, {"host": "b"}, {"host": "c"}, {"host": "d"}, {"host": "e"}]}});
    assert_eq!(
        cells("networking.k8s.io", "ingresses", &many)[..4],
        [
            json!("<none>"),
            json!("a,b,c + 2 more..."),
            json!(""),
            json!("80")
        ]
    );
    assert_eq!(cells("networking.k8s.io", "ingresses", &json!({}))[1], json!("*"));
}

#[test]
fn selectors_autoscalers_jobs() {
    let np = json!({"spec": {"podSelector": {"matchLabels": {"tier": "db", "app": "web"},
        "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]},
                             {"key": "zz", "operator": "DoesNotExist"}]}}});
    assert_eq!(
        cells("networking.k8s.io", "networkpolicies", &np)[0],
        json!("app=web,env in (dev,prod),tier=db,!zz")
    );
    let all = json!({"spec": {"podSelector": {}}});
    assert_eq!(
        cells("networking.k8s.io", "networkpolicies", &all)[0],
        json!("<none>")
    );
    let hpa = json!({"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 2,
        "maxReplicas": 5, "metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}},
            {"type": "Pods", "pods": {"target": {"averageValue": "1k"}}},
            {"type": "External", "external": {"target": {"value": "3"}}}]},
        "status": {"currentReplicas": 3, "currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 41}}}]}});
    assert_eq!(
        cells("autoscaling", "horizontalpodautoscalers", &hpa)[..5],
        [
            json!("Deployment/web"),
            json!("cpu: 41%/80%, <unknown>/1k + 1 more..."),
            json!("2"),
            json!(5),
            json!(3)
        ]
    );
    let job = json!({"spec": {"parallelism": 3, "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
        "status": {"succeeded": 1, "startTime": "2024-01-01T00:00:00Z", "completionTime": "2024-01-01T00:01:30Z",
            "conditions": [{"type": "Complete", "status": "True"}]}});
    let c = cells("batch", "jobs", &job);
    assert_eq!(
        (&c[0], &c[1], &c[2], &c[4], &c[5], &c[6]),
        (
            &json!("Complete"),
            &json!("1/1 of 3"),
            &json!("90s"),
            &json!("c"),
            &json!("busybox"),
            &json!("<none>")
        )
    );
    let cj = json!({"spec": {"schedule": "0 3 * * *", "suspend": false}});
    assert_eq!(
        cells("batch", "cronjobs", &cj)[..5],
        [
            json!("0 3 * * *"),
            json!("<none>"),
            json!("False"),
            json!(0),
            json!("<none>")
        ]
    );
}

#[test]
fn slices_claims_quotas_classes_policies() {
    let slice = json!({"addressType": "IPv4", "ports": [{"port": 80}, {"name": "http"}, {}, {"port": 9}],
        "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"]}]});
    assert_eq!(
        cells("discovery.k8s.io", "endpointslices", &slice)[..3],
        [
            json!("IPv4"),
            json!("80,http,* + 1 more..."),
            json!("10.0.0.1,10.0.0.2")
        ]
    );
    assert_eq!(
        cells("discovery.k8s.io", "endpointslices", &json!({}))[1..3],
        [json!("<unset>"), json!("<unset>")]
    );
    let pvc = json!({"spec": {"volumeName": "pv-1", "storageClassName": "standard", "volumeMode": "Filesystem"},
        "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce"]}});
    let c = cells("", "persistentvolumeclaims", &pvc);
    assert_eq!(
        (&c[..6], &c[7]),
        (
            &[
                json!("Bound"),
                json!("pv-1"),
                json!("1Gi"),
                json!("RWO,RWX"),
                json!("standard"),
                json!("<unset>")
            ][..],
            &json!("Filesystem")
        )
    );
    let quota = json!({"status": {"hard": {"pods": "10", "limits.cpu": "2", "requests.cpu": "1"},
        "used": {"pods": "3"}}});
    assert_eq!(
        cells("", "resourcequotas", &quota)[..2],
        [json!("pods: 3/10, requests.cpu: 0/1"), json!("limits.cpu: 0/2")]
    );
    let sc = json!({"metadata": {"name": "fast", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": "csi.example"});
    assert_eq!(
        cells("storage.k8s.io", "storageclasses", &sc)[..4],
        [
            json!("csi.example"),
            json!("Delete"),
            json!("Immediate"),
            json!(false)
        ]
    );
    assert_eq!(storage_class_name(&sc), "fast (default)");
    let pc = json!({"value": 1000, "preemptionPolicy": "Never"});
    let c = cells("scheduling.k8s.io", "priorityclasses", &pc);
    assert_eq!(
        (&c[0], &c[1], &c[3]),
        (&json!(1000), &json!(false), &json!("Never"))
    );
    let vap =
        json!({"spec": {"validations": [{}, {}], "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}});
    assert_eq!(
        cells(
            "admissionregistration.k8s.io",
            "validatingadmissionpolicies",
            &vap
        )[..2],
        [json!(2), json!("v1/ConfigMap")]
    );
    let b = json!({"spec": {"policyName": "p", "paramRef": {"name": "limits"}}});
    assert_eq!(
        cells(
            "admissionregistration.k8s.io",
            "validatingadmissionpolicybindings",
            &b
        )[..2],
        [json!("p"), json!("*/limits")]
    );
}
