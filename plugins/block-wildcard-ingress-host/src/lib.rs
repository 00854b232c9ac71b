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

use wink_sdk::admission::{self, Operation, Rule, Verdict, Webhook};
use wink_sdk::serde_json::Value;
use wink_sdk::{Handler, Object, Registration, Watch, policy};

const NAME: &str = "block-wildcard-ingress-host";

/// What is wrong with `ingress`: each rule whose host is missing, empty or a wildcard.
fn violations(ingress: &Value) -> Vec<String> {
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

fn report(obj: &Object) {
    if let Ok(ingress) = obj.decode::<Value>() {
        let rule = policy::Rule::new("no-wildcard-host", "Best Practices", "every rule names one host");
        policy::report(obj, &rule, &violations(&ingress));
    }
}

struct Policy;

impl Handler for Policy {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        if !config.trim().is_empty() && config.trim() != "{}" {
            return Err("bad config: block-wildcard-ingress-host takes no config".into());
        }
        let door = Webhook::validate().rule(Rule::new(
            &[Operation::Create, Operation::Update],
            "networking.k8s.io",
            "v1",
            "ingresses",
        ));
        let registration = Registration::new()
            .name(NAME)
            .watch(Watch::new("networking.k8s.io/v1", "Ingress"))
            .admission(door);
        Ok((Policy, registration))
    }

    fn on_add(&mut self, obj: &Object, _in_initial_list: bool) {
        report(obj);
    }

    fn on_update(&mut self, _old: &Object, new: &Object) {
        report(new);
    }

    fn validate(&mut self, request: &admission::Request) -> Verdict {
        policy::review(NAME, request, |o| {
            o.decode::<Value>().map(|v| violations(&v)).unwrap_or_default()
        })
    }
}

wink_sdk::export_plugin!(Policy);
