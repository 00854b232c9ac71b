//! `service-selector-guard`: a context-aware policy that no CEL expression
//! can state, because it needs other objects: a Service whose selector
//! matches no Pod of its namespace routes nowhere.
//!
//! - At the door (a validating webhook on Service create and update): such a
//!   Service is refused, naming its selector. The Pods are looked up in
//!   wink's informer cache (the plugin reads v1 Pods), so an admission
//!   request costs no request to the API server.
//! - In the background: every Service gets the policy result
//!   `selector-matches-pods` (`fail` naming the selector, or `pass`), kept
//!   current as Services change; Pods coming and going are seen at the next
//!   resync (every 5 minutes).
//!
//! A Service without a selector (one with manual Endpoints) passes. No config.

use wink_sdk::admission::{self, Operation, Rule, Verdict, Webhook};
use wink_sdk::cache;
use wink_sdk::report::{self, Outcome, Severity};
use wink_sdk::serde::Deserialize;
use wink_sdk::{Handler, Object, Registration, Resource, Watch};

#[derive(Deserialize)]
#[serde(crate = "wink_sdk::serde")]
struct Service {
    #[serde(default)]
    spec: Spec,
}

#[derive(Default, Deserialize)]
#[serde(crate = "wink_sdk::serde")]
struct Spec {
    #[serde(default)]
    selector: std::collections::BTreeMap<String, String>,
}

/// The selector as label-selector text, or none when the Service has none.
fn selector(service: &Service) -> Option<String> {
    let pairs: Vec<String> = service
        .spec
        .selector
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    (!pairs.is_empty()).then(|| pairs.join(","))
}

/// Whether some Pod of `namespace` matches `selector`, from the cache.
fn matches_pods(namespace: &str, selector: &str) -> Result<bool, String> {
    cache::first_object(&Resource::new("v1", "Pod"), Some(namespace), Some(selector))
        .map(|pod| pod.is_some())
        .map_err(|e| format!("{e:?}"))
}

struct Guard;

impl Handler for Guard {
    fn init(_config: &str) -> Result<(Self, Registration), String> {
        let door = Webhook::validate().rule(Rule::new(
            &[Operation::Create, Operation::Update],
            "",
            "v1",
            "services",
        ));
        let registration = Registration::new()
            // One name everywhere (grants, reports, Events), whatever the
            // file is called: cargo names it service_selector_guard.wasm.
            .name("service-selector-guard")
            .watch(Watch::new("v1", "Service").resync(std::time::Duration::from_secs(300)))
            .read(Watch::new("v1", "Pod"))
            .admission(door);
        Ok((Guard, registration))
    }

    fn on_add(&mut self, obj: &Object, _in_initial_list: bool) {
        report_on(obj);
    }

    fn on_update(&mut self, _old: &Object, new: &Object) {
        report_on(new);
    }

    fn validate(&mut self, request: &admission::Request) -> Verdict {
        let (Some(Ok(service)), Some(namespace)) = (request.decode::<Service>(), request.namespace()) else {
            return Verdict::allow();
        };
        let Some(selector) = selector(&service) else {
            return Verdict::allow();
        };
        match matches_pods(namespace, &selector) {
            Ok(true) => Verdict::allow(),
            Ok(false) => Verdict::deny(format!(
                "service-selector-guard: the selector {selector} matches no Pod in namespace {namespace}"
            )),
            Err(e) => Verdict::allow().warn(format!("service-selector-guard: Pods not looked up: {e}")),
        }
    }
}

fn report_on(obj: &Object) {
    let Ok(service) = obj.decode::<Service>() else {
        return;
    };
    let (outcome, message) = match (selector(&service), obj.namespace()) {
        (Some(selector), Some(ns)) => match matches_pods(ns, &selector) {
            Ok(true) => (Outcome::Pass, format!("the selector {selector} matches Pods")),
            Ok(false) => (Outcome::Fail, format!("the selector {selector} matches no Pod")),
            Err(e) => (Outcome::Error, format!("Pods not looked up: {e}")),
        },
        _ => (Outcome::Pass, "no selector".to_string()),
    };
    let finding = report::finding("selector-matches-pods", outcome)
        .message(message)
        .severity(Severity::Medium)
        .category("Services");
    if let Err(e) = report::set(obj, &[finding]) {
        wink_sdk::warn!(
            "service-selector-guard: results about {} not given: {e}",
            obj.key()
        );
    }
}

wink_sdk::export_plugin!(Guard);
