//! `pod-security`: the Pod Security Standards
//! (<https://kubernetes.io/docs/concepts/security/pod-security-standards/>)
//! as Kubernetes' PodSecurity admission applies them, every check of
//! Baseline and Restricted at every policy version (v1.0 to latest), with
//! PodSecurity's check IDs ([`checks`]).
//!
//! - Levels per namespace from PodSecurity's labels
//!   (`pod-security.kubernetes.io/enforce|audit|warn` and `-version`),
//!   read from the informer cache; the config's defaults where a label is
//!   missing ([`config`]: `baseline:latest` for every mode unless set).
//! - At the door (a validating webhook on Pods and their ephemeral
//!   containers, and on the workloads that hold Pod templates: Deployments,
//!   StatefulSets, DaemonSets, ReplicaSets, Jobs, CronJobs): a Pod failing the `enforce` level is refused with
//!   PodSecurity's message, the `warn` level warns, a template only warns
//!   ([`admit`]).
//! - In the background: every Pod gets one result per check of its
//!   namespace's `audit` level (rule: the check ID; `fail` with the
//!   reason), given again for the namespace's Pods when its labels change.
//!   Exempt namespaces and runtime classes get none.

mod admit;
mod checks;
mod config;
mod pod;
mod version;

use admit::{Asked, NamespacePolicy};
use config::Config;
use pod::Pod;
use version::Level;
use wink_sdk::admission::{self, Operation, Rule, Verdict, Webhook};
use wink_sdk::cache;
use wink_sdk::report::{self, Finding, Outcome, Severity};
use wink_sdk::serde_json::Value;
use wink_sdk::{Handler, Object, Registration, Resource, Watch};

struct PodSecurity {
    config: Config,
}

fn namespaces() -> Resource {
    Resource::new("v1", "Namespace")
}

fn pods() -> Resource {
    Resource::new("v1", "Pod")
}

impl PodSecurity {
    /// The policy of `namespace`, from its labels in the cache (the
    /// defaults when it is not there).
    fn policy(&self, namespace: &str) -> NamespacePolicy {
        match cache::get_object(&namespaces(), namespace) {
            Ok(Some(ns)) => NamespacePolicy::of(&self.config, |k| ns.label(k)),
            Ok(None) => NamespacePolicy::of(&self.config, |_| None),
            Err(e) => {
                wink_sdk::warn!("pod-security: namespace {namespace} not read: {e:?}");
                NamespacePolicy::of(&self.config, |_| None)
            }
        }
    }

    /// The Pod a request asks about, read through its JSON tree: a
    /// workload's template, or an update's Pod (`None`: nothing to judge,
    /// as an update changing nothing PodSecurity checks); or the verdict
    /// on an object that does not decode.
    fn updated_or_template(
        &self,
        request: &admission::Request,
        kind: &str,
        template: bool,
    ) -> Result<Option<Pod>, Verdict> {
        let Some(Ok(object)) = request.decode::<Value>() else {
            return Err(Verdict::deny("pod-security: the object does not decode"));
        };
        let (new, old) = match template {
            false => (
                Some(object),
                request.old_object().and_then(|o| o.decode::<Value>().ok()),
            ),
            true => (
                admit::template(kind, &object),
                request
                    .old_object()
                    .and_then(|o| o.decode::<Value>().ok())
                    .and_then(|o| admit::template(kind, &o)),
            ),
        };
        let Some(new) = new else {
            return Ok(None);
        };
        if request.operation() == Operation::Update
            && old.as_ref().is_some_and(|o| !admit::significant(o, &new))
        {
            return Ok(None);
        }
        match wink_sdk::serde_json::from_value(new) {
            Ok(pod) => Ok(Some(pod)),
            Err(e) if template => {
                Err(Verdict::allow().warn(format!("pod-security: the Pod template does not decode: {e}")))
            }
            Err(e) => Err(Verdict::deny(format!(
                "pod-security: the Pod does not decode: {e}"
            ))),
        }
    }

    /// Give every result about `pod` at its namespace's `audit` level.
    fn report(&self, pod: &Object) {
        let namespace = pod.namespace().unwrap_or_default();
        let exemptions = &self.config.exemptions;
        let decoded = pod.decode::<Pod>();
        let exempt = exemptions.namespaces.iter().any(|n| n == namespace)
            || decoded.as_ref().is_ok_and(|p| {
                let class = p.spec.runtime_class_name.as_ref();
                class.is_some_and(|rc| exemptions.runtime_classes.contains(rc))
            });
        let audit = self.policy(namespace).audit;
        let level = audit.to_string();
        let findings: Vec<Finding> = match decoded {
            _ if exempt => Vec::new(),
            Ok(p) => {
                let outcomes = checks::evaluate(audit, &p);
                let failed: Vec<&str> = outcomes
                    .iter()
                    .filter(|o| o.forbidden.is_some())
                    .map(|o| o.id)
                    .collect();
                match failed.is_empty() {
                    true => wink_sdk::debug!("pod-security: {} passes {level}", pod.key()),
                    false => {
                        wink_sdk::debug!("pod-security: {} fails {level}: {}", pod.key(), failed.join(", "))
                    }
                }
                outcomes.iter().map(|o| finding(o, &level)).collect()
            }
            Err(e) => checks::applicable(audit)
                .into_iter()
                .map(|(c, _)| {
                    let message = format!("the Pod did not decode: {e}");
                    described(
                        report::finding(c.id, Outcome::Error).message(message),
                        c.level,
                        &level,
                    )
                })
                .collect(),
        };
        if let Err(e) = report::set(pod, &findings) {
            wink_sdk::warn!("pod-security: results about {} not given: {e}", pod.key());
        }
    }

    /// Give the results of every Pod of `namespace` again.
    fn report_namespace(&self, namespace: &str) {
        match cache::list_objects(&pods(), Some(namespace), None) {
            Ok(list) => list.iter().for_each(|p| self.report(p)),
            Err(e) => wink_sdk::warn!("pod-security: Pods of {namespace} not listed: {e:?}"),
        }
    }
}

/// One check's result about a Pod at the `audit` level `level`.
fn finding(o: &checks::Outcome, level: &str) -> Finding {
    let finding = match &o.forbidden {
        None => report::finding(o.id, Outcome::Pass).message("allowed"),
        Some(f) if f.detail.is_empty() => report::finding(o.id, Outcome::Fail).message(&f.reason),
        Some(f) => report::finding(o.id, Outcome::Fail).message(format!("{} ({})", f.reason, f.detail)),
    };
    described(finding, o.level, level)
}

fn described(finding: Finding, level: Level, audit: &str) -> Finding {
    let (severity, category) = match level {
        Level::Restricted => (Severity::Medium, "Pod Security Standards (Restricted)"),
        _ => (Severity::High, "Pod Security Standards (Baseline)"),
    };
    finding
        .severity(severity)
        .category(category)
        .property("level", audit)
}

/// The webhook's rules: Pods, and the workloads with Pod templates.
fn door() -> Webhook {
    let ops = [Operation::Create, Operation::Update];
    let mut door = Webhook::validate()
        .rule(Rule::new(&ops, "", "v1", "pods"))
        .rule(Rule::new(
            &[Operation::Update],
            "",
            "v1",
            "pods/ephemeralcontainers",
        ));
    for resources in ["deployments", "statefulsets", "daemonsets", "replicasets"] {
        door = door.rule(Rule::new(&ops, "apps", "v1", resources));
    }
    for resources in ["jobs", "cronjobs"] {
        door = door.rule(Rule::new(&ops, "batch", "v1", resources));
    }
    door
}

impl Handler for PodSecurity {
    fn init(text: &str) -> Result<(Self, Registration), String> {
        let config = config::parse(text)?;
        let registration = Registration::new()
            .watch(Watch::new("v1", "Pod"))
            .watch(Watch::new("v1", "Namespace"))
            .admission(door());
        Ok((PodSecurity { config }, registration))
    }

    fn validate(&mut self, request: &admission::Request) -> Verdict {
        let (_, _, kind) = request.kind();
        let template = kind != "Pod";
        // `kubectl debug` adds ephemeral containers through their subresource.
        if request
            .sub_resource()
            .is_some_and(|sub| sub != "ephemeralcontainers")
        {
            return Verdict::allow();
        }
        // A new Pod is read straight into its type (no JSON tree first);
        // one that does not decode so is read the long way, for its message.
        let created = (!template && request.operation() != Operation::Update)
            .then(|| request.decode::<Pod>())
            .flatten()
            .and_then(Result::ok);
        let pod = match created {
            Some(pod) => pod,
            None => match self.updated_or_template(request, kind, template) {
                Ok(Some(pod)) => pod,
                Ok(None) => return Verdict::allow(),
                Err(verdict) => return verdict,
            },
        };
        let namespace = request.namespace().unwrap_or_default();
        let asked = Asked {
            username: request.username(),
            namespace,
        };
        if let Some(why) = admit::exempt(&self.config, &asked, &pod) {
            return Verdict::allow().annotate("pod-security.kubernetes.io/exempt", why);
        }
        let decision = admit::judge(&self.policy(namespace), &pod, template);
        let mut verdict = match decision.denied {
            Some(message) => Verdict::deny(message),
            None => Verdict::allow(),
        };
        for warning in decision.warnings {
            verdict = verdict.warn(warning);
        }
        for (key, value) in decision.annotations {
            verdict = verdict.annotate(key, value);
        }
        verdict
    }

    fn on_add(&mut self, obj: &Object, in_initial_list: bool) {
        match obj.kind() {
            "Namespace" if !in_initial_list => self.report_namespace(obj.name()),
            "Namespace" => {}
            _ => self.report(obj),
        }
    }

    fn on_update(&mut self, old: &Object, new: &Object) {
        match new.kind() {
            "Namespace" => {
                let labels = |o: &Object| -> Vec<(String, String)> {
                    o.labels()
                        .filter(|(k, _)| k.starts_with("pod-security.kubernetes.io/"))
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect()
                };
                if labels(old) != labels(new) {
                    self.report_namespace(new.name());
                }
            }
            _ => self.report(new),
        }
    }
}

wink_sdk::export_plugin!(PodSecurity);
