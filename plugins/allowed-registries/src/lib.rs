//! `allowed-registries`: images come only from the registries (or
//! repositories) the operator trusts. Every container (containers, init
//! containers, ephemeral containers) of a Pod, and of the Pod template of a
//! Deployment, StatefulSet, DaemonSet, ReplicaSet, Job or CronJob, must
//! name an image that starts with one of the configured prefixes.
//!
//! - At the door (a validating webhook on create and update, Pods'
//!   `ephemeralcontainers` subresource included): refused, naming each
//!   container, its field and its image.
//! - In the background: every such object gets the result
//!   `allowed-registry` (`fail` naming the containers, or `pass`).
//!
//! Config (required: no registry is trusted by default):
//! `{"registries": ["registry.example.com/", "ghcr.io/my-org/"]}`. A
//! prefix is compared as text, as written in the image: end it with `/` so
//! that `registry.example.com` does not also allow `registry.example.com.evil.io`.

use wink_sdk::serde::Deserialize;
use wink_sdk::workload::{self, Pods};
use wink_sdk::{Registration, policy};

const NAME: &str = "allowed-registries";

#[derive(Default, Deserialize)]
#[serde(crate = "wink_sdk::serde", default, deny_unknown_fields)]
struct Config {
    registries: Vec<String>,
}

impl Config {
    fn check(&self) -> Result<(), String> {
        if self.registries.is_empty() {
            return Err(
                "bad config: registries: name at least one registry prefix (e.g. \"registry.example.com/\")"
                    .into(),
            );
        }
        if self.registries.iter().any(|r| r.is_empty()) {
            return Err("bad config: registries: a prefix is empty (it would allow every image)".into());
        }
        Ok(())
    }
}

struct Policy {
    config: Config,
}

impl Policy {
    /// What is wrong with the images of `object` (of kind `kind`), one line per container.
    fn find(&self, kind: &str, object: &Pods) -> Vec<String> {
        object
            .containers(kind)
            .filter(|c| {
                !self
                    .config
                    .registries
                    .iter()
                    .any(|r| c.container.image().starts_with(r.as_str()))
            })
            .map(|c| {
                format!(
                    "container {} ({}.image) uses the image {:?}, from none of the allowed registries {:?}",
                    c.container.name(),
                    c.path(),
                    c.container.image(),
                    self.config.registries
                )
            })
            .collect()
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
        workload::registration(true)
    }

    fn rule(&self) -> policy::Rule {
        policy::Rule::new(
            "allowed-registry",
            "Best Practices",
            "every image comes from an allowed registry",
        )
    }

    fn violations(&self, kind: &str, object: &Pods) -> Vec<String> {
        self.find(kind, object)
    }
}

wink_sdk::export_plugin!(policy::Checked<Policy, Pods>);
