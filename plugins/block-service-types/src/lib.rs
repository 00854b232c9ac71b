//! `block-service-types`: a NodePort Service opens a port on every node,
//! a LoadBalancer one asks the cloud for a public address; both bypass the
//! Ingress and its policies. A Service whose `spec.type` is one of the
//! configured types is refused.
//!
//! - At the door (a validating webhook on Service create and update):
//!   refused, naming `spec.type` and its value.
//! - In the background: every Service gets the result `service-type`
//!   (`fail` naming the type, or `pass`).
//!
//! Config (these are the defaults): `{"types": ["NodePort", "LoadBalancer"]}`;
//! a type is one of `ClusterIP`, `NodePort`, `LoadBalancer`, `ExternalName`.

use wink_sdk::admission::{Operation, Rule, Webhook};
use wink_sdk::serde::Deserialize;
use wink_sdk::serde_json::Value;
use wink_sdk::{Registration, Watch, policy};

const NAME: &str = "block-service-types";
const TYPES: [&str; 4] = ["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"];

#[derive(Deserialize)]
#[serde(crate = "wink_sdk::serde", default, deny_unknown_fields)]
struct Config {
    types: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            types: vec!["NodePort".into(), "LoadBalancer".into()],
        }
    }
}

struct Policy {
    config: Config,
}

impl policy::Check for Policy {
    const NAME: &'static str = NAME;

    fn new(config: &str) -> Result<Self, String> {
        let config: Config = wink_sdk::config(config)?;
        match config.types.iter().find(|t| !TYPES.contains(&t.as_str())) {
            Some(t) => Err(format!("bad config: types: {t:?} is none of {TYPES:?}")),
            None => Ok(Policy { config }),
        }
    }

    fn registration(&self) -> Registration {
        let ops = [Operation::Create, Operation::Update];
        Registration::new()
            .watch(Watch::new("v1", "Service"))
            .admission(Webhook::validate().rule(Rule::new(&ops, "", "v1", "services")))
    }

    fn rule(&self) -> policy::Rule {
        policy::Rule::new("service-type", "Best Practices", "an allowed Service type")
    }

    fn violations(&self, _kind: &str, service: &Value) -> Vec<String> {
        // The API server defaults an absent type to ClusterIP.
        let kind = service["spec"]["type"].as_str().unwrap_or("ClusterIP");
        match self.config.types.iter().any(|t| t == kind) {
            true => vec![format!(
                "spec.type {kind} is not allowed (blocked: {})",
                self.config.types.join(", ")
            )],
            false => Vec::new(),
        }
    }
}

wink_sdk::export_plugin!(policy::Checked<Policy>);
