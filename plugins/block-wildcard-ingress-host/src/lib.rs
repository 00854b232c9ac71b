//! `block-wildcard-ingress-host`: an Ingress rule without a host, or with
//! a wildcard one (`*.example.com`), catches traffic meant for other
//! applications. Every `spec.rules[*].host` must be set and hold no `*`.
//!
//! - At the door (a validating webhook on Ingress create and update):
//!   refused, naming each rule's field and host.
//! - In the background: every Ingress gets the result `no-wildcard-host`
//!   (`fail` naming the rules, or `pass`).
//!
//! An Ingress with only a default backend (no rules) passes. No config.

use wink_sdk::admission::{Operation, Rule, Webhook};
use wink_sdk::serde_json::Value;
use wink_sdk::{Registration, Watch, policy};

const NAME: &str = "block-wildcard-ingress-host";

struct Policy;

impl policy::Check for Policy {
    const NAME: &'static str = NAME;

    fn new(config: &str) -> Result<Self, String> {
        match config.trim() {
            "" | "{}" => Ok(Policy),
            _ => Err(format!("bad config: {NAME} takes no config")),
        }
    }

    fn registration(&self) -> Registration {
        let ops = [Operation::Create, Operation::Update];
        Registration::new()
            .watch(Watch::new("networking.k8s.io/v1", "Ingress"))
            .admission(Webhook::validate().rule(Rule::new(&ops, "networking.k8s.io", "v1", "ingresses")))
    }

    fn rule(&self) -> policy::Rule {
        policy::Rule::new("no-wildcard-host", "Best Practices", "every rule names one host")
    }

    /// Each rule whose host is missing, empty or a wildcard.
    fn violations(&self, _kind: &str, ingress: &Value) -> Vec<String> {
        let rules = ingress["spec"]["rules"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        rules
            .iter()
            .enumerate()
            .filter_map(
                |(i, rule)| match rule.get("host").and_then(Value::as_str).unwrap_or_default() {
                    "" => Some(format!(
                        "spec.rules[{i}].host is empty: the rule matches every host"
                    )),
                    host if host.contains('*') => Some(format!("spec.rules[{i}].host {host} is a wildcard")),
                    _ => None,
                },
            )
            .collect()
    }
}

wink_sdk::export_plugin!(policy::Checked<Policy>);
