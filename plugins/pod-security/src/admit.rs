//! What the door says, as PodSecurity admission says it: a Pod that fails
//! its namespace's `enforce` level is refused with `violates PodSecurity
//! "baseline:latest": REASON (DETAIL), ...`; one that fails the `warn`
//! level (when it differs) gets a warning `would violate PodSecurity ...`.
//! A workload's Pod template is never refused: it gets those warnings for
//! both levels. Exempt users, runtime classes and namespaces pass without
//! a look. An update that changes nothing PodSecurity reads (only images,
//! labels, other annotations) passes too. Pure: no SDK call here.

use crate::checks;
use crate::config::Config;
use crate::pod::Pod;
use crate::version::{LevelVersion, Mode, from_labels};
use wink_sdk::serde_json::Value;

/// The levels a namespace's labels (or the config's defaults) set.
#[derive(Debug, Clone)]
pub struct NamespacePolicy {
    pub enforce: LevelVersion,
    pub audit: LevelVersion,
    pub warn: LevelVersion,
    /// Labels that did not parse (their mode got `restricted:latest`).
    pub errors: Vec<String>,
}

impl NamespacePolicy {
    /// The policy of a namespace with these labels (`label` looks one up).
    pub fn of<'a>(config: &Config, label: impl Fn(&str) -> Option<&'a str> + Copy) -> Self {
        let mut errors = Vec::new();
        let mut take = |mode| {
            let (lv, e) = from_labels(mode, label, config.default_of(mode));
            errors.extend(e);
            lv
        };
        let (enforce, audit, warn) = (take(Mode::Enforce), take(Mode::Audit), take(Mode::Warn));
        NamespacePolicy {
            enforce,
            audit,
            warn,
            errors,
        }
    }
}

/// The answer: refused with a message, or allowed with warnings.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Decision {
    pub denied: Option<String>,
    pub warnings: Vec<String>,
}

/// Who asks about what, beside the object.
pub struct Asked<'a> {
    pub username: &'a str,
    pub namespace: &'a str,
}

/// Whether `config` exempts this request or Pod.
pub fn exempt(config: &Config, asked: &Asked, pod: &Pod) -> bool {
    let e = &config.exemptions;
    e.usernames.iter().any(|u| u == asked.username)
        || e.namespaces.iter().any(|n| n == asked.namespace)
        || pod
            .spec
            .runtime_class_name
            .as_ref()
            .is_some_and(|rc| e.runtime_classes.contains(rc))
}

/// Failures of `pod` at `lv`, as one line, or `None` when it complies.
pub fn violations(lv: LevelVersion, pod: &Pod) -> Option<String> {
    let outcomes = checks::evaluate(lv, pod);
    let summary = checks::summary(&outcomes);
    (!summary.is_empty()).then_some(summary)
}

/// The door's answer about a Pod (`template`: a workload's Pod template).
pub fn judge(policy: &NamespacePolicy, pod: &Pod, template: bool) -> Decision {
    let mut decision = Decision::default();
    for e in &policy.errors {
        decision.warnings.push(format!("pod-security: namespace label {e}"));
    }
    if let Some(failed) = violations(policy.enforce, pod) {
        match template {
            true => decision.warnings.push(format!(
                "would violate PodSecurity \"{}\": {failed}",
                policy.enforce
            )),
            false => {
                decision.denied = Some(format!("violates PodSecurity \"{}\": {failed}", policy.enforce));
                return decision;
            }
        }
    }
    if policy.warn != policy.enforce {
        if let Some(failed) = violations(policy.warn, pod) {
            decision
                .warnings
                .push(format!("would violate PodSecurity \"{}\": {failed}", policy.warn));
        }
    }
    decision
}

/// The annotations PodSecurity reads.
const READ_ANNOTATIONS: [&str; 3] = [
    "seccomp.security.alpha.kubernetes.io/pod",
    "container.seccomp.security.alpha.kubernetes.io/",
    "container.apparmor.security.beta.kubernetes.io/",
];

/// A Pod's (or template's) JSON reduced to what PodSecurity reads: its
/// spec without container images, and the seccomp and AppArmor
/// annotations.
fn read_part(pod: &Value) -> Value {
    let mut spec = pod.get("spec").cloned().unwrap_or(Value::Null);
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        if let Some(cs) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                c.remove("image");
            }
        }
    }
    let notes: wink_sdk::serde_json::Map<String, Value> = pod
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .map(|a| {
            a.iter()
                .filter(|(k, _)| READ_ANNOTATIONS.iter().any(|p| k.starts_with(p)))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    Value::Array(vec![spec, Value::Object(notes)])
}

/// Whether an update from `old` to `new` changes what PodSecurity reads.
pub fn significant(old: &Value, new: &Value) -> bool {
    read_part(old) != read_part(new)
}

/// The Pod template of a workload of `kind` (JSON), if it has one where
/// that kind keeps it.
pub fn template(kind: &str, workload: &Value) -> Option<Value> {
    let path = match kind {
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" | "ReplicationController" => {
            "/spec/template"
        }
        "CronJob" => "/spec/jobTemplate/spec/template",
        _ => return None,
    };
    workload.pointer(path).cloned()
}

#[cfg(test)]
mod tests;
