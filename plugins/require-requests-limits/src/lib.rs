//! `require-requests-limits`: a container without requests is scheduled
//! as if it needed nothing, and one without limits may take a whole node.
//! Every container and init container of a Pod, and of the Pod template of
//! a Deployment, StatefulSet, DaemonSet, ReplicaSet, Job or CronJob, must
//! set the configured requests and limits (ephemeral containers may set
//! none, and are not checked).
//!
//! - At the door (a validating webhook on create and update): refused,
//!   naming each container, its field and what it lacks.
//! - In the background: every such object gets the result
//!   `requests-limits` (`fail` naming the containers, or `pass`).
//!
//! Config (these are the defaults, Kyverno's `require-requests-limits`):
//! `{"requests": ["cpu", "memory"], "limits": ["memory"], "initContainers": true}`.
//! A quantity of `0` counts as set; an empty string does not.

use wink_sdk::serde::Deserialize;
use wink_sdk::workload::{self, List, PodContainer, Pods};
use wink_sdk::{Registration, policy};

const NAME: &str = "require-requests-limits";

#[derive(Deserialize)]
#[serde(
    crate = "wink_sdk::serde",
    default,
    deny_unknown_fields,
    rename_all = "camelCase"
)]
struct Config {
    requests: Vec<String>,
    limits: Vec<String>,
    init_containers: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            requests: vec!["cpu".into(), "memory".into()],
            limits: vec!["memory".into()],
            init_containers: true,
        }
    }
}

impl Config {
    fn check(&self) -> Result<(), String> {
        if self.requests.iter().chain(&self.limits).any(|r| r.is_empty()) {
            return Err("bad config: requests/limits: a resource name is empty".into());
        }
        Ok(())
    }
}

/// Whether `resources.<part>.<name>` is set (a number, or a non-empty string).
fn is_set(container: &PodContainer, part: &str, name: &str) -> bool {
    match part {
        "requests" => container.request(name),
        _ => container.limit(name),
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
            if c.list == List::Ephemeral || (c.list == List::Init && !self.config.init_containers) {
                continue;
            }
            let mut lacks = Vec::new();
            for (part, names) in [
                ("requests", &self.config.requests),
                ("limits", &self.config.limits),
            ] {
                let missing: Vec<&str> = names
                    .iter()
                    .filter(|n| !is_set(c.container, part, n))
                    .map(String::as_str)
                    .collect();
                if !missing.is_empty() {
                    lacks.push(format!("{part} {}", missing.join(", ")));
                }
            }
            if !lacks.is_empty() {
                found.push(format!(
                    "container {} ({}.resources) sets no {}",
                    c.container.name(),
                    c.path(),
                    lacks.join(" and no ")
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
        policy::Rule::new(
            "requests-limits",
            "Best Practices",
            "every container sets its requests and limits",
        )
    }

    fn violations(&self, kind: &str, object: &Pods) -> Vec<String> {
        self.find(kind, object)
    }
}

wink_sdk::export_plugin!(policy::Checked<Policy, Pods>);
