//! The built-in types' table printers: the columns after Name that the real
//! API server's printers give each type (names, types, priorities: priority
//! 1 columns are the ones `kubectl get -o wide` adds), and how each row's
//! cells are read from the object. Every cell of every column is filled;
//! kubectl chooses which to show.
//!
//! Owns: per-type columns and cells. Must not touch: the Table shape
//! (`table`) or the store.

use super::age;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

type Cells = fn(&Value, DateTime<Utc>) -> Vec<Value>;

/// One built-in type's printer: the columns after Name (name, type,
/// priority, description) and its cells.
pub struct Printer {
    group: &'static str,
    plural: &'static str,
    pub columns: &'static [(&'static str, &'static str, i64, &'static str)],
    pub cells: Cells,
}

const AGE: (&str, &str, i64, &str) = (
    "Age",
    "string",
    0,
    "CreationTimestamp is a timestamp representing the server time when this object was created.",
);

fn s<'a>(o: &'a Value, ptr: &str) -> &'a str {
    o.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

fn n(o: &Value, ptr: &str) -> i64 {
    o.pointer(ptr).and_then(Value::as_i64).unwrap_or(0)
}

fn list<'a>(o: &'a Value, ptr: &str) -> &'a [Value] {
    o.pointer(ptr)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn or_none(v: &str) -> Value {
    json!(if v.is_empty() { "<none>" } else { v })
}

fn created(o: &Value, now: DateTime<Utc>) -> Value {
    json!(age(o.pointer("/metadata/creationTimestamp"), now))
}

/// `k=v,k2=v2` of a map (a label selector's matchLabels, a node selector).
fn pairs(o: Option<&Value>) -> String {
    o.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

fn containers_and_images(o: &Value, ptr: &str) -> [Value; 2] {
    let cs = list(o, ptr);
    let names: Vec<&str> = cs.iter().map(|c| s(c, "/name")).collect();
    let images: Vec<&str> = cs.iter().map(|c| s(c, "/image")).collect();
    [or_none(&names.join(",")), or_none(&images.join(","))]
}

fn pod_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let total = list(o, "/spec/containers").len();
    let statuses = list(o, "/status/containerStatuses");
    let ready = statuses.iter().filter(|c| c["ready"] == true).count();
    let restarts: i64 = statuses.iter().map(|c| n(c, "/restartCount")).sum();
    let mut reason = match s(o, "/status/reason") {
        "" => s(o, "/status/phase").to_string(),
        r => r.to_string(),
    };
    for c in statuses {
        let waiting = s(c, "/state/waiting/reason");
        let terminated = s(c, "/state/terminated/reason");
        if !waiting.is_empty() {
            reason = waiting.to_string();
        } else if !terminated.is_empty() {
            reason = terminated.to_string();
        }
    }
    if o.pointer("/metadata/deletionTimestamp").is_some() {
        reason = "Terminating".into();
    }
    let gates = list(o, "/spec/readinessGates");
    let gates = match gates.len() {
        0 => String::new(),
        g => format!("0/{g}"),
    };
    vec![
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts.to_string()),
        created(o, now),
        or_none(s(o, "/status/podIP")),
        or_none(s(o, "/spec/nodeName")),
        or_none(s(o, "/status/nominatedNodeName")),
        or_none(&gates),
    ]
}

fn deployment_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let [c, i] = containers_and_images(o, "/spec/template/spec/containers");
    vec![
        json!(format!(
            "{}/{}",
            n(o, "/status/readyReplicas"),
            n(o, "/spec/replicas")
        )),
        json!(n(o, "/status/updatedReplicas")),
        json!(n(o, "/status/availableReplicas")),
        created(o, now),
        c,
        i,
        or_none(&pairs(o.pointer("/spec/selector/matchLabels"))),
    ]
}

fn replicaset_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let [c, i] = containers_and_images(o, "/spec/template/spec/containers");
    vec![
        json!(n(o, "/spec/replicas")),
        json!(n(o, "/status/replicas")),
        json!(n(o, "/status/readyReplicas")),
        created(o, now),
        c,
        i,
        or_none(&pairs(o.pointer("/spec/selector/matchLabels"))),
    ]
}

fn statefulset_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let [c, i] = containers_and_images(o, "/spec/template/spec/containers");
    vec![
        json!(format!(
            "{}/{}",
            n(o, "/status/readyReplicas"),
            n(o, "/spec/replicas")
        )),
        created(o, now),
        c,
        i,
    ]
}

fn daemonset_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let [c, i] = containers_and_images(o, "/spec/template/spec/containers");
    vec![
        json!(n(o, "/status/desiredNumberScheduled")),
        json!(n(o, "/status/currentNumberScheduled")),
        json!(n(o, "/status/numberReady")),
        json!(n(o, "/status/updatedNumberScheduled")),
        json!(n(o, "/status/numberAvailable")),
        or_none(&pairs(o.pointer("/spec/template/spec/nodeSelector"))),
        created(o, now),
        c,
        i,
        or_none(&pairs(o.pointer("/spec/selector/matchLabels"))),
    ]
}

fn namespace_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![json!(s(o, "/status/phase")), created(o, now)]
}

fn data_count(o: &Value) -> usize {
    let len = |k: &str| o.get(k).and_then(Value::as_object).map_or(0, |m| m.len());
    len("data") + len("binaryData")
}

fn configmap_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![json!(data_count(o)), created(o, now)]
}

fn secret_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let data = o.get("data").and_then(Value::as_object).map_or(0, |m| m.len());
    vec![json!(s(o, "/type")), json!(data), created(o, now)]
}

fn service_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let ty = s(o, "/spec/type");
    let external: Vec<String> = list(o, "/status/loadBalancer/ingress")
        .iter()
        .map(|i| match s(i, "/ip") {
            "" => s(i, "/hostname").to_string(),
            ip => ip.to_string(),
        })
        .chain(
            list(o, "/spec/externalIPs")
                .iter()
                .map(|v| v.as_str().unwrap_or("").to_string()),
        )
        .collect();
    let external = match (ty, external.is_empty()) {
        ("ExternalName", _) => s(o, "/spec/externalName").to_string(),
        ("LoadBalancer", true) => "<pending>".to_string(),
        (_, false) => external.join(","),
        _ => String::new(),
    };
    let ports: Vec<String> = list(o, "/spec/ports")
        .iter()
        .map(|p| {
            let proto = match s(p, "/protocol") {
                "" => "TCP",
                x => x,
            };
            match n(p, "/nodePort") {
                0 => format!("{}/{proto}", n(p, "/port")),
                np => format!("{}:{np}/{proto}", n(p, "/port")),
            }
        })
        .collect();
    vec![
        json!(ty),
        or_none(s(o, "/spec/clusterIP")),
        or_none(&external),
        or_none(&ports.join(",")),
        created(o, now),
        or_none(&pairs(o.pointer("/spec/selector"))),
    ]
}

fn node_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let ready = list(o, "/status/conditions")
        .iter()
        .find(|c| c["type"] == "Ready")
        .map(|c| {
            if c["status"] == "True" {
                "Ready"
            } else {
                "NotReady"
            }
        })
        .unwrap_or("Unknown");
    let mut status = ready.to_string();
    if o.pointer("/spec/unschedulable") == Some(&json!(true)) {
        status.push_str(",SchedulingDisabled");
    }
    let labels = o.pointer("/metadata/labels").and_then(Value::as_object);
    let mut roles: Vec<&str> = labels
        .into_iter()
        .flatten()
        .filter_map(|(k, _)| k.strip_prefix("node-role.kubernetes.io/"))
        .collect();
    roles.sort();
    let address = |ty: &str| {
        list(o, "/status/addresses")
            .iter()
            .find(|a| a["type"] == ty)
            .map(|a| s(a, "/address"))
            .unwrap_or("")
    };
    vec![
        json!(status),
        or_none(&roles.join(",")),
        created(o, now),
        json!(s(o, "/status/nodeInfo/kubeletVersion")),
        or_none(address("InternalIP")),
        or_none(address("ExternalIP")),
        json!(s(o, "/status/nodeInfo/osImage")),
        json!(s(o, "/status/nodeInfo/kernelVersion")),
        json!(s(o, "/status/nodeInfo/containerRuntimeVersion")),
    ]
}

fn event_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let last = ["/lastTimestamp", "/eventTime", "/metadata/creationTimestamp"]
        .iter()
        .find_map(|p| o.pointer(p).filter(|v| v.is_string()));
    let first = ["/firstTimestamp", "/eventTime", "/metadata/creationTimestamp"]
        .iter()
        .find_map(|p| o.pointer(p).filter(|v| v.is_string()));
    let object = format!(
        "{}/{}",
        s(o, "/involvedObject/kind").to_lowercase(),
        s(o, "/involvedObject/name")
    );
    let source = match (s(o, "/source/component"), s(o, "/source/host")) {
        (c, "") => c.to_string(),
        (c, h) => format!("{c}, {h}"),
    };
    vec![
        json!(age(last, now)),
        json!(s(o, "/type")),
        json!(s(o, "/reason")),
        json!(object),
        json!(s(o, "/involvedObject/fieldPath")),
        json!(source),
        json!(s(o, "/message").trim()),
        json!(age(first, now)),
        json!(n(o, "/count").max(1)),
        json!(s(o, "/metadata/name")),
    ]
}

fn serviceaccount_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![json!(list(o, "/secrets").len()), created(o, now)]
}

fn lease_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![or_none(s(o, "/spec/holderIdentity")), created(o, now)]
}

fn role_cells(o: &Value, _: DateTime<Utc>) -> Vec<Value> {
    vec![
        o.pointer("/metadata/creationTimestamp")
            .cloned()
            .unwrap_or(Value::Null),
    ]
}

fn binding_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let subjects = |kind: &str| {
        let names: Vec<String> = list(o, "/subjects")
            .iter()
            .filter(|x| x["kind"] == kind)
            .map(|x| match s(x, "/namespace") {
                "" => s(x, "/name").to_string(),
                ns => format!("{ns}/{}", s(x, "/name")),
            })
            .collect();
        json!(names.join(", "))
    };
    vec![
        json!(format!("{}/{}", s(o, "/roleRef/kind"), s(o, "/roleRef/name"))),
        created(o, now),
        subjects("User"),
        subjects("Group"),
        subjects("ServiceAccount"),
    ]
}

fn pdb_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let field = |k: &str| match o.pointer(&format!("/spec/{k}")) {
        Some(Value::String(v)) => json!(v),
        Some(Value::Number(v)) => json!(v.to_string()),
        _ => json!("N/A"),
    };
    vec![
        field("minAvailable"),
        field("maxUnavailable"),
        json!(n(o, "/status/disruptionsAllowed")),
        created(o, now),
    ]
}

macro_rules! col {
    ($name:expr, $ty:expr) => {
        ($name, $ty, 0, "")
    };
    ($name:expr, $ty:expr, wide) => {
        ($name, $ty, 1, "")
    };
}

const CONTAINERS: (&str, &str, i64, &str) = (
    "Containers",
    "string",
    1,
    "Names of each container in the template.",
);
const IMAGES: (&str, &str, i64, &str) = (
    "Images",
    "string",
    1,
    "Images referenced by each container in the template.",
);
const SELECTOR: (&str, &str, i64, &str) = ("Selector", "string", 1, "Label selector for pods.");

static PRINTERS: &[Printer] = &[
    Printer {
        group: "",
        plural: "pods",
        columns: &[
            (
                "Ready",
                "string",
                0,
                "The aggregate readiness state of this pod for accepting traffic.",
            ),
            (
                "Status",
                "string",
                0,
                "The aggregate status of the containers in this pod.",
            ),
            (
                "Restarts",
                "string",
                0,
                "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
            ),
            AGE,
            (
                "IP",
                "string",
                1,
                "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
            ),
            (
                "Node",
                "string",
                1,
                "NodeName is a request to schedule this pod onto a specific node.",
            ),
            (
                "Nominated Node",
                "string",
                1,
                "nominatedNodeName is set only when this pod preempts other pods on the node.",
            ),
            (
                "Readiness Gates",
                "string",
                1,
                "If specified, all readiness gates will be evaluated for pod readiness.",
            ),
        ],
        cells: pod_cells,
    },
    Printer {
        group: "apps",
        plural: "deployments",
        columns: &[
            ("Ready", "string", 0, "Number of the pod with ready state"),
            (
                "Up-to-date",
                "integer",
                0,
                "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
            ),
            (
                "Available",
                "integer",
                0,
                "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
            ),
            AGE,
            CONTAINERS,
            IMAGES,
            SELECTOR,
        ],
        cells: deployment_cells,
    },
    Printer {
        group: "apps",
        plural: "replicasets",
        columns: &[
            (
                "Desired",
                "integer",
                0,
                "Replicas is the number of desired replicas.",
            ),
            (
                "Current",
                "integer",
                0,
                "Replicas is the most recently observed number of replicas.",
            ),
            (
                "Ready",
                "integer",
                0,
                "The number of ready replicas for this replica set.",
            ),
            AGE,
            CONTAINERS,
            IMAGES,
            SELECTOR,
        ],
        cells: replicaset_cells,
    },
    Printer {
        group: "apps",
        plural: "statefulsets",
        columns: &[col!("Ready", "string"), AGE, CONTAINERS, IMAGES],
        cells: statefulset_cells,
    },
    Printer {
        group: "apps",
        plural: "daemonsets",
        columns: &[
            col!("Desired", "integer"),
            col!("Current", "integer"),
            col!("Ready", "integer"),
            col!("Up-to-date", "integer"),
            col!("Available", "integer"),
            col!("Node Selector", "string"),
            AGE,
            CONTAINERS,
            IMAGES,
            SELECTOR,
        ],
        cells: daemonset_cells,
    },
    Printer {
        group: "",
        plural: "namespaces",
        columns: &[("Status", "string", 0, "The status of the namespace"), AGE],
        cells: namespace_cells,
    },
    Printer {
        group: "",
        plural: "configmaps",
        columns: &[col!("Data", "integer"), AGE],
        cells: configmap_cells,
    },
    Printer {
        group: "",
        plural: "secrets",
        columns: &[col!("Type", "string"), col!("Data", "integer"), AGE],
        cells: secret_cells,
    },
    Printer {
        group: "",
        plural: "services",
        columns: &[
            col!("Type", "string"),
            col!("Cluster-IP", "string"),
            col!("External-IP", "string"),
            col!("Port(s)", "string"),
            AGE,
            SELECTOR,
        ],
        cells: service_cells,
    },
    Printer {
        group: "",
        plural: "nodes",
        columns: &[
            ("Status", "string", 0, "The status of the node"),
            ("Roles", "string", 0, "The roles of the node"),
            AGE,
            ("Version", "string", 0, "Kubelet Version reported by the node."),
            col!("Internal-IP", "string", wide),
            col!("External-IP", "string", wide),
            col!("OS-Image", "string", wide),
            col!("Kernel-Version", "string", wide),
            col!("Container-Runtime", "string", wide),
        ],
        cells: node_cells,
    },
    Printer {
        group: "",
        plural: "events",
        columns: &[
            col!("Last Seen", "string"),
            col!("Type", "string"),
            col!("Reason", "string"),
            col!("Object", "string"),
            col!("Subobject", "string", wide),
            col!("Source", "string", wide),
            col!("Message", "string"),
            col!("First Seen", "string", wide),
            col!("Count", "string", wide),
            col!("Name", "string", wide),
        ],
        cells: event_cells,
    },
    Printer {
        group: "",
        plural: "serviceaccounts",
        columns: &[col!("Secrets", "string"), AGE],
        cells: serviceaccount_cells,
    },
    Printer {
        group: "coordination.k8s.io",
        plural: "leases",
        columns: &[col!("Holder", "string"), AGE],
        cells: lease_cells,
    },
    Printer {
        group: "rbac.authorization.k8s.io",
        plural: "roles",
        columns: &[col!("Created At", "string")],
        cells: role_cells,
    },
    Printer {
        group: "rbac.authorization.k8s.io",
        plural: "clusterroles",
        columns: &[col!("Created At", "string")],
        cells: role_cells,
    },
    Printer {
        group: "rbac.authorization.k8s.io",
        plural: "rolebindings",
        columns: &[
            col!("Role", "string"),
            AGE,
            col!("Users", "string", wide),
            col!("Groups", "string", wide),
            col!("ServiceAccounts", "string", wide),
        ],
        cells: binding_cells,
    },
    Printer {
        group: "rbac.authorization.k8s.io",
        plural: "clusterrolebindings",
        columns: &[
            col!("Role", "string"),
            AGE,
            col!("Users", "string", wide),
            col!("Groups", "string", wide),
            col!("ServiceAccounts", "string", wide),
        ],
        cells: binding_cells,
    },
    Printer {
        group: "policy",
        plural: "poddisruptionbudgets",
        columns: &[
            col!("Min Available", "string"),
            col!("Max Unavailable", "string"),
            col!("Allowed Disruptions", "integer"),
            AGE,
        ],
        cells: pdb_cells,
    },
];

/// The printer of a built-in type, if it has one (others get the default
/// Name / Created At table).
pub fn find(group: &str, plural: &str) -> Option<&'static Printer> {
    PRINTERS.iter().find(|p| p.group == group && p.plural == plural)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(group: &str, plural: &str, o: &Value) -> Vec<Value> {
        let p = find(group, plural).unwrap();
        let c = (p.cells)(o, Utc::now());
        assert_eq!(c.len(), p.columns.len(), "{plural}: one cell per column");
        c
    }

    #[test]
    fn every_printer_fills_every_column() {
        for p in PRINTERS {
            assert_eq!(
                (p.cells)(&json!({}), Utc::now()).len(),
                p.columns.len(),
                "{}",
                p.plural
            );
        }
    }

    #[test]
    fn pods_print_ready_status_restarts() {
        let pod = json!({
            "metadata": {"name": "web-1", "creationTimestamp": Utc::now().to_rfc3339()},
            "spec": {"nodeName": "node-1", "containers": [{"name": "c"}, {"name": "d"}]},
            "status": {"phase": "Running", "podIP": "10.244.0.5", "containerStatuses": [
                {"name": "c", "ready": true, "restartCount": 2}, {"name": "d", "ready": false, "restartCount": 1,
                 "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}
        });
        let c = cells("", "pods", &pod);
        assert_eq!(c[..3], [json!("1/2"), json!("CrashLoopBackOff"), json!("3")]);
        assert!(c[3].as_str().unwrap().ends_with('s'), "{}", c[3]);
        assert_eq!(c[4..6], [json!("10.244.0.5"), json!("node-1")]);
        let pending = json!({"spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Pending"}});
        assert_eq!(
            cells("", "pods", &pending)[..3],
            [json!("0/1"), json!("Pending"), json!("0")]
        );
    }

    #[test]
    fn workloads_and_data_counts() {
        let d = json!({"spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}},
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}});
        let c = cells("apps", "deployments", &d);
        assert_eq!(c[..3], [json!("2/3"), json!(3), json!(2)]);
        assert_eq!(c[4..], [json!("nginx"), json!("nginx"), json!("app=web")]);
        let rs = cells("apps", "replicasets", &d);
        assert_eq!(rs[..3], [json!(3), json!(0), json!(2)]);
        let cm = json!({"data": {"a": "1", "b": "2"}, "binaryData": {"c": ""}});
        assert_eq!(cells("", "configmaps", &cm)[0], json!(3));
        let secret = json!({"type": "Opaque", "data": {"a": "Yg=="}});
        assert_eq!(cells("", "secrets", &secret)[..2], [json!("Opaque"), json!(1)]);
        let ns = json!({"status": {"phase": "Terminating"}});
        assert_eq!(cells("", "namespaces", &ns)[0], "Terminating");
        let node = json!({"metadata": {"labels": {"node-role.kubernetes.io/control-plane": ""}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}], "nodeInfo": {"kubeletVersion": "v1.32.0"}}});
        assert_eq!(
            cells("", "nodes", &node)[..2],
            [json!("Ready"), json!("control-plane")]
        );
        let svc = json!({"spec": {"type": "ClusterIP", "clusterIP": "10.96.0.1", "ports": [{"port": 443}]}});
        assert_eq!(
            cells("", "services", &svc)[..4],
            [
                json!("ClusterIP"),
                json!("10.96.0.1"),
                json!("<none>"),
                json!("443/TCP")
            ]
        );
    }
}
