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

use wink_sdk::admission::{self, Operation, Rule, Verdict, Webhook};
use wink_sdk::serde::Deserialize;
use wink_sdk::serde_json::Value;
use wink_sdk::{Handler, Object, Registration, Watch, policy};

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

impl Policy {
    /// What is wrong with `object`'s replicas.
    fn violations(&self, object: &Value) -> Vec<String> {
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

    fn report(&self, obj: &Object) {
        if let Ok(object) = obj.decode::<Value>() {
            let rule = policy::Rule::new("replicas", "Best Practices", "replicas within the allowed range");
            policy::report(obj, &rule, &self.violations(&object));
        }
    }
}

impl Handler for Policy {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        let config: Config = wink_sdk::config(config)?;
        if config.min > config.max {
            return Err(format!(
                "bad config: min {} is above max {}",
                config.min, config.max
            ));
        }
        let door = Webhook::validate().rule(Rule::new(
            &[Operation::Create, Operation::Update],
            "apps",
            "v1",
            "deployments,statefulsets,replicasets",
        ));
        let registration = KINDS
            .iter()
            .fold(Registration::new().name(NAME), |r, k| {
                r.watch(Watch::new("apps/v1", *k))
            })
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
        policy::review(NAME, request, |o| {
            o.decode::<Value>()
                .map(|v| self.violations(&v))
                .unwrap_or_default()
        })
    }
}

wink_sdk::export_plugin!(Policy);
