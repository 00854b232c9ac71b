//! `require-probes`: without a readiness probe a Pod takes traffic before
//! it is ready, and without a liveness probe a hung container is never
//! restarted. Every container of a Pod, and of the Pod template of a
//! Deployment, StatefulSet, DaemonSet, ReplicaSet, Job or CronJob, must
//! have the configured probes (init and ephemeral containers may have none,
//! and are not checked). A probe counts when it says how to probe (`exec`,
//! `httpGet`, `tcpSocket` or `grpc`): `livenessProbe: {}` does not.
//!
//! - At the door (a validating webhook on create and update): refused,
//!   naming each container, its field and the probes it lacks.
//! - In the background: every such object gets the result `probes`
//!   (`fail` naming the containers, or `pass`).
//!
//! Config (these are the defaults, Gatekeeper's `k8srequiredprobes`):
//! `{"probes": ["livenessProbe", "readinessProbe"], "require": "all"}`;
//! `"require": "any"` is satisfied by one of them (Kyverno's
//! `require-probes`, with `startupProbe` also listed).

use wink_sdk::admission::{self, Operation, Verdict, Webhook};
use wink_sdk::serde::Deserialize;
use wink_sdk::serde_json::Value;
use wink_sdk::workload::{self, List};
use wink_sdk::{Handler, Object, Registration, policy};

const NAME: &str = "require-probes";
const PROBES: [&str; 3] = ["livenessProbe", "readinessProbe", "startupProbe"];
const HANDLERS: [&str; 4] = ["exec", "httpGet", "tcpSocket", "grpc"];

#[derive(Clone, Copy, PartialEq, Deserialize)]
#[serde(crate = "wink_sdk::serde", rename_all = "lowercase")]
enum Require {
    All,
    Any,
}

#[derive(Deserialize)]
#[serde(crate = "wink_sdk::serde", default, deny_unknown_fields)]
struct Config {
    probes: Vec<String>,
    require: Require,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            probes: vec!["livenessProbe".into(), "readinessProbe".into()],
            require: Require::All,
        }
    }
}

impl Config {
    fn check(&self) -> Result<(), String> {
        if self.probes.is_empty() {
            return Err("bad config: probes: name at least one probe".into());
        }
        match self.probes.iter().find(|p| !PROBES.contains(&p.as_str())) {
            Some(p) => Err(format!("bad config: probes: {p:?} is none of {PROBES:?}")),
            None => Ok(()),
        }
    }
}

/// Whether `container` has the probe `probe`, saying how to probe.
fn has(container: &Value, probe: &str) -> bool {
    container
        .get(probe)
        .and_then(Value::as_object)
        .is_some_and(|p| HANDLERS.iter().any(|h| p.get(*h).is_some_and(|v| !v.is_null())))
}

struct Policy {
    config: Config,
}

impl Policy {
    /// What `object` (of kind `kind`) lacks, one line per container.
    fn violations(&self, kind: &str, object: &Value) -> Vec<String> {
        let mut found = Vec::new();
        for c in workload::containers(kind, object) {
            if c.list != List::Containers {
                continue;
            }
            let missing: Vec<&str> = self
                .config
                .probes
                .iter()
                .filter(|p| !has(c.spec, p))
                .map(String::as_str)
                .collect();
            let fails = match self.config.require {
                Require::All => !missing.is_empty(),
                Require::Any => missing.len() == self.config.probes.len(),
            };
            if fails {
                let which = if self.config.require == Require::Any {
                    "any of"
                } else {
                    ""
                };
                found.push(format!(
                    "container {} ({}) has no {which}{}{}",
                    c.name,
                    c.path,
                    if which.is_empty() { "" } else { " " },
                    missing.join(", ")
                ));
            }
        }
        found
    }
}

impl Handler for Policy {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        let config: Config = wink_sdk::config(config)?;
        config.check()?;
        let door = workload::rules(&[Operation::Create, Operation::Update], false)
            .into_iter()
            .fold(Webhook::validate(), Webhook::rule);
        let registration = workload::watches()
            .into_iter()
            .fold(Registration::new().name(NAME), Registration::watch)
            .admission(door);
        Ok((Policy { config }, registration))
    }

    fn on_add(&mut self, obj: &Object, _in_initial_list: bool) {
        self.report(obj);
    }

    fn on_update(&mut self, _old: &Object, new: &Object) {
        self.report(new);
    }

    fn validate(&mut self, request: &admission::Request) -> Verdict {
        policy::review(NAME, request, |o| self.check(o))
    }
}

impl Policy {
    /// The violations of `obj`, when it decodes.
    fn check(&self, obj: &Object) -> Vec<String> {
        obj.decode::<Value>()
            .map(|object| self.violations(obj.kind(), &object))
            .unwrap_or_default()
    }

    fn report(&self, obj: &Object) {
        if let Ok(object) = obj.decode::<Value>() {
            let rule = policy::Rule::new("probes", "Best Practices", "every container has its probes");
            policy::report(obj, &rule, &self.violations(obj.kind(), &object));
        }
    }
}

wink_sdk::export_plugin!(Policy);
