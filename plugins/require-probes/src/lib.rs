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

use wink_sdk::serde::Deserialize;
use wink_sdk::workload::{self, List, Pods};
use wink_sdk::{Registration, policy};

const NAME: &str = "require-probes";
const PROBES: [&str; 3] = ["livenessProbe", "readinessProbe", "startupProbe"];

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

struct Policy {
    config: Config,
}

impl Policy {
    /// What `object` (of kind `kind`) lacks, one line per container.
    fn find(&self, kind: &str, object: &Pods) -> Vec<String> {
        let mut found = Vec::new();
        for c in object.containers(kind) {
            if c.list != List::Containers {
                continue;
            }
            let missing: Vec<&str> = self
                .config
                .probes
                .iter()
                .filter(|p| !c.container.probe(p))
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
                    c.container.name(),
                    c.path(),
                    if which.is_empty() { "" } else { " " },
                    missing.join(", ")
                ));
            }
        }
        found
    }
}

impl policy::Check<Pods> for Policy {
    const NAME: &'static str = NAME;

    fn new(config: &str) -> Result<Self, String> {
        let config: Config = wink_sdk::config(config)?;
        config.check()?;
        Ok(Policy { config })
    }

    fn registration(&self) -> Registration {
        workload::registration(false)
    }

    fn rule(&self) -> policy::Rule {
        policy::Rule::new("probes", "Best Practices", "every container has its probes")
    }

    fn violations(&self, kind: &str, object: &Pods) -> Vec<String> {
        self.find(kind, object)
    }
}

wink_sdk::export_plugin!(policy::Checked<Policy, Pods>);
