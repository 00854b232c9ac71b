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

/// The answer: refused with a message, or allowed with warnings; and the
/// audit annotations PodSecurity gives (`enforce-policy`,
/// `audit-violations`), plus `pod-security.wink.dev/failed-checks`: the IDs
/// of the checks the `enforce` level fails.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Decision {
    pub denied: Option<String>,
    pub warnings: Vec<String>,
    pub annotations: Vec<(String, String)>,
}

/// The annotation naming the IDs of the failed `enforce` checks.
pub const FAILED_CHECKS: &str = "pod-security.wink.dev/failed-checks";

/// Who asks about what, beside the object.
pub struct Asked<'a> {
    pub username: &'a str,
    pub namespace: &'a str,
}

/// What exempts this request or Pod (`namespace`, `user` or
/// `runtimeClass`, as PodSecurity's `exempt` annotation says), if anything.
pub fn exempt(config: &Config, asked: &Asked, pod: &Pod) -> Option<&'static str> {
    let e = &config.exemptions;
    if e.namespaces.iter().any(|n| n == asked.namespace) {
        return Some("namespace");
    }
    if e.usernames.iter().any(|u| u == asked.username) {
        return Some("user");
    }
    let class = pod.spec.runtime_class_name.as_ref();
    class
        .is_some_and(|rc| e.runtime_classes.contains(rc))
        .then_some("runtimeClass")
}

/// Failures of `pod` at `lv`, as one line, or `None` when it complies.
pub fn violations(lv: LevelVersion, pod: &Pod) -> Option<String> {
    let outcomes = checks::evaluate(lv, pod);
    let summary = checks::summary(&outcomes);
    (!summary.is_empty()).then_some(summary)
}

/// The IDs of the checks `pod` fails at `lv`, comma-separated.
fn failed_ids(lv: LevelVersion, pod: &Pod) -> String {
    let failed: Vec<&str> = checks::evaluate(lv, pod)
        .into_iter()
        .filter(|o| o.forbidden.is_some())
        .map(|o| o.id)
        .collect();
    failed.join(",")
}

/// The door's answer about a Pod (`template`: a workload's Pod template).
pub fn judge(policy: &NamespacePolicy, pod: &Pod, template: bool) -> Decision {
    let mut decision = Decision::default();
    for e in &policy.errors {
        decision
            .warnings
            .push(format!("pod-security: namespace label {e}"));
    }
    decision.annotations.push((
        "pod-security.kubernetes.io/enforce-policy".to_string(),
        policy.enforce.to_string(),
    ));
    if let Some(failed) = violations(policy.audit, pod) {
        decision.annotations.push((
            "pod-security.kubernetes.io/audit-violations".to_string(),
            format!("would violate PodSecurity \"{}\": {failed}", policy.audit),
        ));
    }
    if let Some(failed) = violations(policy.enforce, pod) {
        decision
            .annotations
            .push((FAILED_CHECKS.to_string(), failed_ids(policy.enforce, pod)));
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
    if policy.warn != policy.enforce
        && let Some(failed) = violations(policy.warn, pod)
    {
        decision
            .warnings
            .push(format!("would violate PodSecurity \"{}\": {failed}", policy.warn));
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
