//! `admit-probe`: a test plugin serving a validating and a mutating webhook
//! on Pods (create and update; plus a rule on Leases, which wink drops).
//!
//! Validate: a Pod labelled `deny` is refused with code 422 and a message
//! naming it; one labelled `loop` is never answered (the call loops); any
//! other is allowed with a warning and an audit annotation.
//! Mutate: the Pod gets the label `probed: "yes"`.
//!
//! Config (defaults shown): `{"behaviour": "answer", "failure": "fail",
//! "timeout": 5, "namespaces": null}`; `behaviour` `trap` panics in every
//! admission call, `loop` never returns; `failure` is the webhooks'
//! failure policy (`fail` or `ignore`); `namespaces` a namespace selector.

use wink_sdk::admission::{self, FailurePolicy, Mutation, Operation, Rule, Verdict, Webhook};
use wink_sdk::serde::Deserialize;
use wink_sdk::serde_json;
use wink_sdk::{Handler, Registration, Watch};

#[derive(Deserialize)]
#[serde(crate = "wink_sdk::serde", default)]
struct Config {
    behaviour: String,
    failure: String,
    timeout: u32,
    namespaces: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            behaviour: "answer".into(),
            failure: "fail".into(),
            timeout: 5,
            namespaces: None,
        }
    }
}

struct Probe {
    behaviour: String,
}

impl Probe {
    fn misbehave(&self) {
        match self.behaviour.as_str() {
            "trap" => panic!("admit-probe traps as configured"),
            "loop" => {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            _ => {}
        }
    }
}

fn webhook(w: Webhook, config: &Config) -> Webhook {
    let policy = if config.failure == "ignore" {
        FailurePolicy::Ignore
    } else {
        FailurePolicy::Fail
    };
    let w = w
        .rule(Rule::new(
            &[Operation::Create, Operation::Update],
            "",
            "v1",
            "pods",
        ))
        .rule(Rule::new(
            &[Operation::Update],
            "coordination.k8s.io",
            "v1",
            "leases",
        ))
        .failure_policy(policy)
        .timeout_seconds(config.timeout);
    match &config.namespaces {
        Some(s) => w.namespace_selector(s.clone()),
        None => w,
    }
}

impl Handler for Probe {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        let config: Config = wink_sdk::config(config)?;
        let registration = Registration::new()
            .watch(Watch::new("v1", "ConfigMap"))
            .admission(webhook(Webhook::validate(), &config))
            .admission(webhook(Webhook::mutate(), &config));
        Ok((
            Probe {
                behaviour: config.behaviour,
            },
            registration,
        ))
    }

    fn validate(&mut self, request: &admission::Request) -> Verdict {
        self.misbehave();
        if request.object().is_some_and(|o| o.label("loop").is_some()) {
            Probe {
                behaviour: "loop".into(),
            }
            .misbehave();
        }
        let name = request.name().unwrap_or_default().to_string();
        let denied = request.object().is_some_and(|o| o.label("deny").is_some());
        if denied {
            return Verdict::deny(format!("admit-probe: pod {name} is labelled deny"))
                .code(422)
                .reason("Invalid");
        }
        Verdict::allow()
            .warn(format!("admit-probe: checked {name}"))
            .annotate("admit-probe/seen", name)
    }

    fn mutate(&mut self, request: &admission::Request) -> Mutation {
        self.misbehave();
        let Some(Ok(mut pod)) = request.decode::<serde_json::Value>() else {
            return Mutation::unchanged();
        };
        let labels = &mut pod["metadata"]["labels"];
        if !labels.is_object() {
            *labels = serde_json::json!({});
        }
        labels["probed"] = serde_json::json!("yes");
        Mutation::changed(pod)
    }
}

wink_sdk::export_plugin!(Probe);
