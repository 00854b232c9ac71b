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

use wink_sdk::admission::{self, Operation, Rule, Verdict, Webhook};
use wink_sdk::serde::Deserialize;
use wink_sdk::serde_json::Value;
use wink_sdk::{Handler, Object, Registration, Watch, policy};

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

impl Policy {
    /// What is wrong with `service`: its type, when blocked.
    fn violations(&self, service: &Value) -> Vec<String> {
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

    fn report(&self, obj: &Object) {
        if let Ok(service) = obj.decode::<Value>() {
            let rule = policy::Rule::new("service-type", "Best Practices", "an allowed Service type");
            policy::report(obj, &rule, &self.violations(&service));
        }
    }
}

impl Handler for Policy {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        let config: Config = wink_sdk::config(config)?;
        if let Some(t) = config.types.iter().find(|t| !TYPES.contains(&t.as_str())) {
            return Err(format!("bad config: types: {t:?} is none of {TYPES:?}"));
        }
        let door = Webhook::validate().rule(Rule::new(
            &[Operation::Create, Operation::Update],
            "",
            "v1",
            "services",
        ));
        let registration = Registration::new()
            .name(NAME)
            .watch(Watch::new("v1", "Service"))
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
