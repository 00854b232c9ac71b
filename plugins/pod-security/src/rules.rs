//! The five Pod Security Standards (Baseline) rules this plugin checks, over
//! the few fields of a Pod they read. Pure: no SDK call here, so the unit
//! tests below run on the host target.
//!
//! The allowed values are those of the standard
//! (<https://kubernetes.io/docs/concepts/security/pod-security-standards/>)
//! and of the built-in Pod Security Admission: a field unset, `null` or
//! `false` (`0` for a host port) passes; capabilities are compared by their
//! exact names, so `CAP_CHOWN` or `chown` is not the allowed `CHOWN`.

use wink_sdk::serde::de::IgnoredAny;
use wink_sdk::serde::{Deserialize, Deserializer};

pub const PRIVILEGED_CONTAINERS: &str = "privileged-containers";
pub const HOST_NAMESPACES: &str = "host-namespaces";
pub const HOST_PATH_VOLUMES: &str = "host-path-volumes";
pub const CAPABILITIES: &str = "capabilities";
pub const HOST_PORTS: &str = "host-ports";

/// How much a rule's failure matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Medium,
    High,
}

/// Every rule with its level, in the order [`evaluate`] answers.
pub const RULES: [(&str, Level); 5] = [
    (PRIVILEGED_CONTAINERS, Level::High),
    (HOST_NAMESPACES, Level::High),
    (HOST_PATH_VOLUMES, Level::High),
    (CAPABILITIES, Level::Medium),
    (HOST_PORTS, Level::Medium),
];

/// The capabilities a Baseline container may add.
const BASELINE_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// A missing or `null` field as its default.
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// The parts of a Pod the rules read.
#[derive(Debug, Default, Deserialize)]
#[serde(crate = "wink_sdk::serde")]
pub struct Pod {
    #[serde(default, deserialize_with = "nullable")]
    pub spec: PodSpec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(crate = "wink_sdk::serde", rename_all = "camelCase")]
pub struct PodSpec {
    #[serde(default, deserialize_with = "nullable")]
    containers: Vec<Container>,
    #[serde(default, deserialize_with = "nullable")]
    init_containers: Vec<Container>,
    #[serde(default, deserialize_with = "nullable")]
    ephemeral_containers: Vec<Container>,
    #[serde(default, deserialize_with = "nullable")]
    volumes: Vec<Volume>,
    #[serde(default, deserialize_with = "nullable")]
    host_network: bool,
    #[serde(default, deserialize_with = "nullable", rename = "hostPID")]
    host_pid: bool,
    #[serde(default, deserialize_with = "nullable", rename = "hostIPC")]
    host_ipc: bool,
}

/// A container, init container or ephemeral container.
#[derive(Debug, Default, Deserialize)]
#[serde(crate = "wink_sdk::serde", rename_all = "camelCase")]
struct Container {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    security_context: SecurityContext,
    #[serde(default, deserialize_with = "nullable")]
    ports: Vec<Port>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(crate = "wink_sdk::serde")]
struct SecurityContext {
    #[serde(default, deserialize_with = "nullable")]
    privileged: bool,
    #[serde(default, deserialize_with = "nullable")]
    capabilities: Capabilities,
}

#[derive(Debug, Default, Deserialize)]
#[serde(crate = "wink_sdk::serde")]
struct Capabilities {
    #[serde(default, deserialize_with = "nullable")]
    add: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(crate = "wink_sdk::serde", rename_all = "camelCase")]
struct Port {
    #[serde(default, deserialize_with = "nullable")]
    host_port: i64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(crate = "wink_sdk::serde", rename_all = "camelCase")]
struct Volume {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    host_path: Option<IgnoredAny>,
}

/// One rule's conclusion about one Pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub rule: &'static str,
    pub level: Level,
    pub passed: bool,
    pub message: String,
    /// Extra facts of a failure, e.g. `("containers", "app,sidecar")`.
    pub properties: Vec<(&'static str, String)>,
}

impl Check {
    fn pass(rule: &'static str, level: Level, message: &str) -> Check {
        Check {
            rule,
            level,
            passed: true,
            message: message.to_string(),
            properties: Vec::new(),
        }
    }

    fn fail(rule: &'static str, level: Level, message: String) -> Check {
        Check {
            rule,
            level,
            passed: false,
            message,
            properties: Vec::new(),
        }
    }

    fn property(mut self, key: &'static str, value: String) -> Check {
        self.properties.push((key, value));
        self
    }
}

/// Every rule's conclusion about a Pod with this spec, one per rule, in the
/// order of [`RULES`].
pub fn evaluate(spec: &PodSpec) -> [Check; 5] {
    [
        privileged_containers(spec),
        host_namespaces(spec),
        host_path_volumes(spec),
        capabilities(spec),
        host_ports(spec),
    ]
}

/// Containers, init containers, then ephemeral containers.
fn all_containers(spec: &PodSpec) -> impl Iterator<Item = &Container> {
    spec.containers
        .iter()
        .chain(&spec.init_containers)
        .chain(&spec.ephemeral_containers)
}

/// `name (a, b), other (c)`, and the names alone comma-separated.
fn per_container(offenders: &[(&str, Vec<String>)]) -> (String, String) {
    let listed: Vec<String> = offenders
        .iter()
        .map(|(name, what)| format!("{name} ({})", what.join(", ")))
        .collect();
    let names: Vec<&str> = offenders.iter().map(|(name, _)| *name).collect();
    (listed.join(", "), names.join(","))
}

fn privileged_containers(spec: &PodSpec) -> Check {
    let (rule, level) = (PRIVILEGED_CONTAINERS, Level::High);
    let names: Vec<&str> = all_containers(spec)
        .filter(|c| c.security_context.privileged)
        .map(|c| c.name.as_str())
        .collect();
    if names.is_empty() {
        return Check::pass(rule, level, "no privileged containers");
    }
    Check::fail(
        rule,
        level,
        format!("privileged containers: {}", names.join(", ")),
    )
    .property("containers", names.join(","))
}

fn host_namespaces(spec: &PodSpec) -> Check {
    let (rule, level) = (HOST_NAMESPACES, Level::High);
    let shared: Vec<&str> = [
        (spec.host_network, "hostNetwork"),
        (spec.host_pid, "hostPID"),
        (spec.host_ipc, "hostIPC"),
    ]
    .into_iter()
    .filter_map(|(on, field)| on.then_some(field))
    .collect();
    if shared.is_empty() {
        return Check::pass(rule, level, "no host namespaces");
    }
    Check::fail(
        rule,
        level,
        format!("host namespaces shared: {}", shared.join(", ")),
    )
}

fn host_path_volumes(spec: &PodSpec) -> Check {
    let (rule, level) = (HOST_PATH_VOLUMES, Level::High);
    let names: Vec<&str> = spec
        .volumes
        .iter()
        .filter(|v| v.host_path.is_some())
        .map(|v| v.name.as_str())
        .collect();
    if names.is_empty() {
        return Check::pass(rule, level, "no hostPath volumes");
    }
    Check::fail(rule, level, format!("hostPath volumes: {}", names.join(", ")))
        .property("volumes", names.join(","))
}

fn capabilities(spec: &PodSpec) -> Check {
    let (rule, level) = (CAPABILITIES, Level::Medium);
    let offenders: Vec<(&str, Vec<String>)> = all_containers(spec)
        .filter_map(|c| {
            let beyond: Vec<String> = c
                .security_context
                .capabilities
                .add
                .iter()
                .filter(|cap| !BASELINE_CAPABILITIES.contains(&cap.as_str()))
                .cloned()
                .collect();
            (!beyond.is_empty()).then_some((c.name.as_str(), beyond))
        })
        .collect();
    if offenders.is_empty() {
        return Check::pass(rule, level, "no capabilities beyond the baseline");
    }
    let (listed, names) = per_container(&offenders);
    Check::fail(rule, level, format!("capabilities beyond the baseline: {listed}"))
        .property("containers", names)
}

fn host_ports(spec: &PodSpec) -> Check {
    let (rule, level) = (HOST_PORTS, Level::Medium);
    let offenders: Vec<(&str, Vec<String>)> = all_containers(spec)
        .filter_map(|c| {
            let ports: Vec<String> = c
                .ports
                .iter()
                .filter(|p| p.host_port != 0)
                .map(|p| p.host_port.to_string())
                .collect();
            (!ports.is_empty()).then_some((c.name.as_str(), ports))
        })
        .collect();
    if offenders.is_empty() {
        return Check::pass(rule, level, "no host ports");
    }
    let (listed, names) = per_container(&offenders);
    Check::fail(rule, level, format!("host ports: {listed}")).property("containers", names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wink_sdk::serde_json::{self, json};

    fn checks(pod: serde_json::Value) -> [Check; 5] {
        let pod: Pod = serde_json::from_value(pod).expect("a pod");
        evaluate(&pod.spec)
    }

    fn failed(checks: &[Check; 5]) -> Vec<&'static str> {
        checks.iter().filter(|c| !c.passed).map(|c| c.rule).collect()
    }

    #[test]
    fn a_plain_pod_passes_every_rule_in_order() {
        let all = checks(json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
            "spec": {"containers": [{"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]}],
                     "volumes": [{"name": "data", "emptyDir": {}}]},
            "status": {"phase": "Running"}
        }));
        let rules: Vec<_> = all.iter().map(|c| (c.rule, c.level)).collect();
        assert_eq!(rules, RULES);
        assert!(
            all.iter().all(|c| c.passed && c.properties.is_empty()),
            "{all:#?}"
        );
        assert_eq!(all[0].message, "no privileged containers");
        assert_eq!(all[1].message, "no host namespaces");
        assert_eq!(all[2].message, "no hostPath volumes");
        assert_eq!(all[3].message, "no capabilities beyond the baseline");
        assert_eq!(all[4].message, "no host ports");
        // No spec at all, and nulls and explicit falses, pass too.
        assert!(failed(&checks(json!({"kind": "Pod"}))).is_empty());
        let allowed = checks(json!({"spec": {
            "hostNetwork": false, "hostPID": null, "volumes": null, "initContainers": null,
            "containers": [{"name": "app", "securityContext": {"privileged": false,
                "capabilities": {"add": ["NET_BIND_SERVICE", "CHOWN"], "drop": ["ALL"]}},
                "ports": [{"containerPort": 8080, "hostPort": 0}]}]
        }}));
        assert!(failed(&allowed).is_empty(), "{allowed:#?}");
    }

    #[test]
    fn privileged_containers_of_every_kind_fail() {
        let all = checks(json!({"spec": {
            "containers": [{"name": "app"}, {"name": "priv", "securityContext": {"privileged": true}}],
            "initContainers": [{"name": "setup", "securityContext": {"privileged": true}}],
            "ephemeralContainers": [{"name": "debug", "securityContext": {"privileged": true}}]
        }}));
        assert_eq!(failed(&all), [PRIVILEGED_CONTAINERS]);
        assert_eq!(all[0].message, "privileged containers: priv, setup, debug");
        assert_eq!(
            all[0].properties,
            [("containers", "priv,setup,debug".to_string())]
        );
    }

    #[test]
    fn host_namespaces_fail_naming_each() {
        let all = checks(json!({"spec": {"hostNetwork": true, "hostIPC": true, "containers": []}}));
        assert_eq!(failed(&all), [HOST_NAMESPACES]);
        assert_eq!(all[1].message, "host namespaces shared: hostNetwork, hostIPC");
        assert!(all[1].properties.is_empty());
        let pid = checks(json!({"spec": {"hostPID": true}}));
        assert_eq!(pid[1].message, "host namespaces shared: hostPID");
    }

    #[test]
    fn host_path_volumes_fail() {
        let all = checks(json!({"spec": {"volumes": [
            {"name": "logs", "hostPath": {"path": "/var/log"}},
            {"name": "cfg", "configMap": {"name": "cfg"}},
            {"name": "sock", "hostPath": {"path": "/run/containerd.sock", "type": "Socket"}}
        ]}}));
        assert_eq!(failed(&all), [HOST_PATH_VOLUMES]);
        assert_eq!(all[2].message, "hostPath volumes: logs, sock");
        assert_eq!(all[2].properties, [("volumes", "logs,sock".to_string())]);
    }

    #[test]
    fn capabilities_beyond_the_baseline_fail_by_exact_name() {
        let all = checks(json!({"spec": {
            "containers": [
                {"name": "app", "securityContext": {"capabilities": {"add": ["CHOWN", "NET_ADMIN", "SYS_ADMIN"]}}},
                {"name": "ok", "securityContext": {"capabilities": {"add": ["KILL"]}}}
            ],
            "initContainers": [{"name": "init", "securityContext": {"capabilities": {"add": ["CAP_CHOWN"]}}}]
        }}));
        assert_eq!(failed(&all), [CAPABILITIES]);
        assert_eq!(
            all[3].message,
            "capabilities beyond the baseline: app (NET_ADMIN, SYS_ADMIN), init (CAP_CHOWN)"
        );
        assert_eq!(all[3].properties, [("containers", "app,init".to_string())]);
    }

    #[test]
    fn host_ports_fail() {
        let all = checks(json!({"spec": {"containers": [
            {"name": "web", "ports": [{"containerPort": 80, "hostPort": 80}, {"containerPort": 9090},
                                      {"containerPort": 443, "hostPort": 8443}]},
            {"name": "metrics", "ports": [{"containerPort": 9100, "hostPort": 9100}]}
        ]}}));
        assert_eq!(failed(&all), [HOST_PORTS]);
        assert_eq!(all[4].message, "host ports: web (80, 8443), metrics (9100)");
        assert_eq!(all[4].properties, [("containers", "web,metrics".to_string())]);
    }

    #[test]
    fn every_rule_can_fail_at_once() {
        let all = checks(json!({"spec": {
            "hostPID": true,
            "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
            "containers": [{"name": "x", "ports": [{"containerPort": 1, "hostPort": 1}],
                "securityContext": {"privileged": true, "capabilities": {"add": ["SYS_ADMIN"]}}}]
        }}));
        assert_eq!(failed(&all), RULES.map(|(rule, _)| rule));
    }
}
