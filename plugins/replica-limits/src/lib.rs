//! `replica-limits`: a Deployment, StatefulSet or ReplicaSet must ask for
//! a number of replicas within the configured bounds: too few leaves a
//! service without redundancy, too many exhausts a namespace's quota.
//!
//! - At the door (a validating webhook on create and update): refused,
//!   naming `spec.replicas`, its value and the bounds.
//! - In the background: every such object gets the result `replicas`
//!   (`fail`, or `pass`).
//!
//! An absent `spec.replicas` counts as 1, as the API server defaults it.
//! Config (these are the defaults): `{"min": 0, "max": 50}`.

use wink_sdk::admission::{Operation, Rule, Webhook};
use wink_sdk::serde::Deserialize;
use wink_sdk::serde_json::Value;
use wink_sdk::{Registration, Watch, policy};

const NAME: &str = "replica-limits";
const KINDS: [&str; 3] = ["Deployment", "StatefulSet", "ReplicaSet"];

#[derive(Deserialize)]
#[serde(crate = "wink_sdk::serde", default, deny_unknown_fields)]
struct Config {
    min: u32,
    max: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config { min: 0, max: 50 }
    }
}

struct Policy {
    config: Config,
}

impl policy::Check for Policy {
    const NAME: &'static str = NAME;

    fn new(config: &str) -> Result<Self, String> {
        let config: Config = wink_sdk::config(config)?;
        match config.min > config.max {
            true => Err(format!(
                "bad config: min {} is above max {}",
                config.min, config.max
            )),
            false => Ok(Policy { config }),
        }
    }

    fn registration(&self) -> Registration {
        let ops = [Operation::Create, Operation::Update];
        let door = Webhook::validate().rule(Rule::new(
            &ops,
            "apps",
            "v1",
            "deployments,statefulsets,replicasets",
        ));
        KINDS
            .iter()
            .fold(Registration::new(), |r, k| r.watch(Watch::new("apps/v1", *k)))
            .admission(door)
    }

    fn rule(&self) -> policy::Rule {
        policy::Rule::new("replicas", "Best Practices", "replicas within the allowed range")
    }

    fn violations(&self, _kind: &str, object: &Value) -> Vec<String> {
        let replicas = object["spec"].get("replicas").map_or(Some(1), Value::as_i64);
        let (min, max) = (self.config.min, self.config.max);
        match replicas {
            Some(n) if (i64::from(min)..=i64::from(max)).contains(&n) => Vec::new(),
            Some(n) => vec![format!(
                "spec.replicas {n} is outside the allowed range {min} to {max}"
            )],
            None => vec![format!("spec.replicas is not a number (allowed: {min} to {max})")],
        }
    }
}

wink_sdk::export_plugin!(policy::Checked<Policy>);
