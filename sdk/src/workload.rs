//! Pod specs wherever they are, for policies about containers: a Pod's own
//! (`spec`) and the Pod template of each workload kind (Deployment,
//! StatefulSet, DaemonSet, ReplicaSet and Job: `spec.template.spec`;
//! CronJob: `spec.jobTemplate.spec.template.spec`). Owns which kinds carry
//! Pods, how to watch them and ask their admission, and the walk over an
//! object's containers with the path of each one's field, for messages that
//! name it: over a `serde_json::Value` ([`containers`]), or over the typed
//! view [`Pods`] (`view`), which decodes only each container's name,
//! image, resources and probes.
//!
//! ```no_run
//! use wink_sdk::admission::{Operation, Webhook};
//! use wink_sdk::workload::{self, List};
//! # fn f(kind: &str, object: &wink_sdk::serde_json::Value) {
//! for c in workload::containers(kind, object) {
//!     if c.list != List::Ephemeral && c.spec.get("livenessProbe").is_none() {
//!         wink_sdk::info!("{} ({}) has no liveness probe", c.name, c.path);
//!     }
//! }
//! let door = workload::rules(&[Operation::Create, Operation::Update], true)
//!     .into_iter()
//!     .fold(Webhook::validate(), Webhook::rule);
//! # let _ = door;
//! # }
//! ```

mod view;

use crate::admission::{Operation, Rule, Webhook};
use crate::{Registration, Watch};
use serde_json::Value;

pub use view::{ContainerAt, PodContainer, Pods};

/// A kind that carries Pods: its apiVersion, kind, API group, version and
/// resource (plural), and where its Pod spec is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodKind {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub group: &'static str,
    pub version: &'static str,
    pub resource: &'static str,
    /// The Pod spec's field path, dot-separated.
    pub pod_spec: &'static str,
}

const fn kind(
    api_version: &'static str,
    kind: &'static str,
    group: &'static str,
    resource: &'static str,
    pod_spec: &'static str,
) -> PodKind {
    let version = if group.is_empty() { api_version } else { "v1" };
    PodKind {
        api_version,
        kind,
        group,
        version,
        resource,
        pod_spec,
    }
}

/// The Pod and the workload kinds, in that order.
pub const KINDS: [PodKind; 7] = [
    kind("v1", "Pod", "", "pods", "spec"),
    kind(
        "apps/v1",
        "Deployment",
        "apps",
        "deployments",
        "spec.template.spec",
    ),
    kind(
        "apps/v1",
        "StatefulSet",
        "apps",
        "statefulsets",
        "spec.template.spec",
    ),
    kind("apps/v1", "DaemonSet", "apps", "daemonsets", "spec.template.spec"),
    kind(
        "apps/v1",
        "ReplicaSet",
        "apps",
        "replicasets",
        "spec.template.spec",
    ),
    kind("batch/v1", "Job", "batch", "jobs", "spec.template.spec"),
    kind(
        "batch/v1",
        "CronJob",
        "batch",
        "cronjobs",
        "spec.jobTemplate.spec.template.spec",
    ),
];

/// The [`PodKind`] called `kind` (`Pod`, `Deployment`, ...), if it carries Pods.
pub fn pod_kind(kind: &str) -> Option<&'static PodKind> {
    KINDS.iter().find(|k| k.kind == kind)
}

/// One watch per kind that carries Pods.
pub fn watches() -> Vec<Watch> {
    KINDS.iter().map(|k| Watch::new(k.api_version, k.kind)).collect()
}

/// Admission rules for `operations` on every kind that carries Pods (one
/// rule per API group); with `ephemeral`, the `pods/ephemeralcontainers`
/// subresource too (its request holds the whole Pod).
pub fn rules(operations: &[Operation], ephemeral: bool) -> Vec<Rule> {
    let pods = if ephemeral {
        "pods,pods/ephemeralcontainers"
    } else {
        "pods"
    };
    vec![
        Rule::new(operations, "", "v1", pods),
        Rule::new(
            operations,
            "apps",
            "v1",
            "deployments,statefulsets,daemonsets,replicasets",
        ),
        Rule::new(operations, "batch", "v1", "jobs,cronjobs"),
    ]
}

/// A registration watching every kind that carries Pods, with a validating
/// webhook on their create and update (see [`rules`] for `ephemeral`).
pub fn registration(ephemeral: bool) -> Registration {
    let door = rules(&[Operation::Create, Operation::Update], ephemeral)
        .into_iter()
        .fold(Webhook::validate(), Webhook::rule);
    watches()
        .into_iter()
        .fold(Registration::new(), Registration::watch)
        .admission(door)
}

/// Which list of the Pod spec a container is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum List {
    Containers,
    Init,
    Ephemeral,
}

impl List {
    /// The Pod spec's field: `containers`, `initContainers` or `ephemeralContainers`.
    pub fn field(self) -> &'static str {
        match self {
            List::Containers => "containers",
            List::Init => "initContainers",
            List::Ephemeral => "ephemeralContainers",
        }
    }
}

/// One container of an object's Pod spec.
#[derive(Debug, Clone)]
pub struct Container<'a> {
    /// Its field, e.g. `spec.template.spec.initContainers[0]`.
    pub path: String,
    pub list: List,
    /// Its `name` (empty when it has none).
    pub name: &'a str,
    /// The container itself.
    pub spec: &'a Value,
}

impl Container<'_> {
    /// Its `image` (empty when it has none).
    pub fn image(&self) -> &str {
        self.spec.get("image").and_then(Value::as_str).unwrap_or_default()
    }
}

/// The Pod spec of `object` of kind `kind`, if the kind carries Pods and it has one.
pub fn pod_spec<'a>(kind: &str, object: &'a Value) -> Option<&'a Value> {
    let path = pod_kind(kind)?.pod_spec;
    path.split('.').try_fold(object, |v, field| v.get(field))
}

/// Every container of `object`'s Pod spec, in the order of its lists
/// (containers, init containers, ephemeral containers); none when the
/// kind carries no Pods.
pub fn containers<'a>(kind: &str, object: &'a Value) -> Vec<Container<'a>> {
    let (Some(k), Some(spec)) = (pod_kind(kind), pod_spec(kind, object)) else {
        return Vec::new();
    };
    let mut all = Vec::new();
    for list in [List::Containers, List::Init, List::Ephemeral] {
        let Some(items) = spec.get(list.field()).and_then(Value::as_array) else {
            continue;
        };
        for (i, c) in items.iter().enumerate() {
            all.push(Container {
                path: format!("{}.{}[{i}]", k.pod_spec, list.field()),
                list,
                name: c.get("name").and_then(Value::as_str).unwrap_or_default(),
                spec: c,
            });
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_list_of_every_kind_is_walked_with_its_path() {
        let cron = json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {
            "containers": [{"name": "a", "image": "x"}],
            "initContainers": [{"name": "b"}]}}}}}});
        let got: Vec<(String, &str)> = containers("CronJob", &cron)
            .iter()
            .map(|c| (c.path.clone(), c.name))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "spec.jobTemplate.spec.template.spec.containers[0]".to_string(),
                    "a"
                ),
                (
                    "spec.jobTemplate.spec.template.spec.initContainers[0]".to_string(),
                    "b"
                ),
            ]
        );
        let pod = json!({"spec": {"ephemeralContainers": [{"name": "dbg", "image": "busybox"}]}});
        let c = &containers("Pod", &pod)[0];
        assert_eq!(
            (c.path.as_str(), c.list, c.image()),
            ("spec.ephemeralContainers[0]", List::Ephemeral, "busybox")
        );
        assert!(containers("Service", &pod).is_empty());
        assert!(containers("Deployment", &json!({})).is_empty());
    }

    #[test]
    fn kinds_know_their_group_version_and_resource() {
        let d = pod_kind("Deployment").unwrap();
        assert_eq!((d.group, d.version, d.resource), ("apps", "v1", "deployments"));
        let p = pod_kind("Pod").unwrap();
        assert_eq!((p.group, p.version, p.resource), ("", "v1", "pods"));
        assert_eq!(watches().len(), KINDS.len());
        assert_eq!(rules(&[Operation::Create], true).len(), 3);
    }
}
