//! The built-in types' table printers: the columns after Name that the real
//! API server's printers give each type (names, types, priorities: priority
//! 1 columns are the ones `kubectl get -o wide` adds), and how each row's
//! cells are read from the object. Every cell of every column is filled;
//! kubectl chooses which to show.
//!
//! Owns: per-type columns and cells. Must not touch: the Table shape
//! (`table`) or the store.

use super::cells::*;
use chrono::{DateTime, Utc};
use serde_json::Value;
#[cfg(test)]
use serde_json::json;

type Cells = fn(&Value, DateTime<Utc>) -> Vec<Value>;

/// One built-in type's printer: the columns after Name (name, type,
/// priority, description) and its cells.
pub struct Printer {
    pub(super) group: &'static str,
    pub(super) plural: &'static str,
    pub columns: &'static [(&'static str, &'static str, i64, &'static str)],
    pub cells: Cells,
}

pub(super) const AGE: (&str, &str, i64, &str) = (
    "Age",
    "string",
    0,
    "CreationTimestamp is a timestamp representing the server time when this object was created.",
);

macro_rules! col {
    ($name:expr, $ty:expr) => {
        ($name, $ty, 0, "")
    };
    ($name:expr, $ty:expr, wide) => {
        ($name, $ty, 1, "")
    };
}

/// RoleBindings' and ClusterRoleBindings' columns.
const BINDING_COLUMNS: &[(&str, &str, i64, &str)] = &[
    col!("Role", "string"),
    AGE,
    col!("Users", "string", wide),
    col!("Groups", "string", wide),
    col!("ServiceAccounts", "string", wide),
];

pub(super) const CONTAINERS: (&str, &str, i64, &str) = (
    "Containers",
    "string",
    1,
    "Names of each container in the template.",
);
pub(super) const IMAGES: (&str, &str, i64, &str) = (
    "Images",
    "string",
    1,
    "Images referenced by each container in the template.",
);
const SELECTOR: (&str, &str, i64, &str) = ("Selector", "string", 1, "Label selector for pods.");

/// Events' columns (both groups').
const EVENT_COLUMNS: &[(&str, &str, i64, &str)] = &[
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
];

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
        columns: EVENT_COLUMNS,
        cells: event_cells,
    },
    // The same printer: kube-apiserver serves both from one storage.
    Printer {
        group: "events.k8s.io",
        plural: "events",
        columns: EVENT_COLUMNS,
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
        columns: &[col!("Created At", "date")],
        cells: role_cells,
    },
    Printer {
        group: "rbac.authorization.k8s.io",
        plural: "clusterroles",
        columns: &[col!("Created At", "date")],
        cells: role_cells,
    },
    Printer {
        group: "rbac.authorization.k8s.io",
        plural: "rolebindings",
        columns: BINDING_COLUMNS,
        cells: binding_cells,
    },
    Printer {
        group: "rbac.authorization.k8s.io",
        plural: "clusterrolebindings",
        columns: BINDING_COLUMNS,
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
    Printer {
        group: "admissionregistration.k8s.io",
        plural: "validatingwebhookconfigurations",
        columns: &[col!("Webhooks", "integer"), AGE],
        cells: webhook_configuration_cells,
    },
    Printer {
        group: "admissionregistration.k8s.io",
        plural: "mutatingwebhookconfigurations",
        columns: &[col!("Webhooks", "integer"), AGE],
        cells: webhook_configuration_cells,
    },
];

/// The printer of a built-in type, if it has one (others get the default
/// Name / Created At table).
pub fn find(group: &str, plural: &str) -> Option<&'static Printer> {
    PRINTERS
        .iter()
        .chain(super::policy_printers::PRINTERS)
        .find(|p| p.group == group && p.plural == plural)
}

impl Printer {
    /// Whether rows start with the Name column: every type's but Events',
    /// whose printer starts with Last Seen and puts Name last (wide).
    pub fn named(&self) -> bool {
        self.plural != "events"
    }

    /// The Name cell: the object's name, a default StorageClass's marked
    /// ` (default)` as the real printer marks it.
    pub fn name(&self, obj: &Value) -> String {
        match (self.group, self.plural) {
            ("storage.k8s.io", "storageclasses") => super::policy_cells::storage_class_name(obj),
            _ => obj
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        }
    }
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
        for p in PRINTERS.iter().chain(crate::table::policy_printers::PRINTERS) {
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
    fn events_print_as_the_real_printer_in_either_group() {
        let ago = |secs: i64| (Utc::now() - chrono::Duration::seconds(secs)).to_rfc3339();
        let recorded = json!({"apiVersion": "events.k8s.io/v1", "metadata": {"name": "web.1"},
            "eventTime": ago(300), "reportingController": "wink.dev/x", "reportingInstance": "wink-x",
            "reason": "MissingLabel", "note": " needs team ", "type": "Warning",
            "regarding": {"kind": "Deployment", "name": "web"},
            "series": {"count": 4, "lastObservedTime": ago(30)}});
        let c = cells("events.k8s.io", "events", &recorded);
        assert_eq!(
            c[1..7],
            [
                json!("Warning"),
                json!("MissingLabel"),
                json!("deployment/web"),
                json!(""),
                json!("wink.dev/x, wink-x"),
                json!("needs team")
            ]
        );
        assert_eq!(
            (&c[0], &c[7], &c[8], &c[9]),
            (&json!("30s"), &json!("5m"), &json!(4), &json!("web.1"))
        );
        let kubelet = json!({"apiVersion": "v1", "involvedObject": {"kind": "Node"}, "count": 0,
            "source": {"component": "kubelet", "host": "node-1"}, "firstTimestamp": ago(120)});
        let c = cells("", "events", &kubelet);
        assert_eq!(
            (&c[0], &c[3], &c[5], &c[8]),
            (&json!("2m"), &json!("node"), &json!("kubelet, node-1"), &json!(1))
        );
        assert!(!find("", "events").unwrap().named() && find("", "pods").unwrap().named());
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
