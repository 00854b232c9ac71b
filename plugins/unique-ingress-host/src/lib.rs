//! `unique-ingress-host`: two Ingresses routing the same host split its
//! traffic between two backends, whichever the controller reads last; a
//! policy that needs every other Ingress of the cluster, so no CEL
//! expression states it (Gatekeeper's `k8suniqueingresshost` and Kyverno's
//! `unique-ingress-host-and-path` read the same context).
//!
//! - The plugin watches networking.k8s.io/v1 Ingresses with the field index
//!   `host` over `spec.rules[*].host`: one value per rule, as a client-go
//!   index function returns several.
//! - At the door (a validating webhook on Ingress create and update): an
//!   Ingress naming a host that another Ingress already has (looked up in
//!   the index: no request to the API server) is refused, naming the host
//!   and the other Ingress. The same Ingress updated keeps its hosts.
//! - In the background: every Ingress gets the result `unique-host`
//!   (`fail` naming the host and the other Ingress, or `pass`).
//!
//! Rules without a host (the default backend's) are not compared. No config.

use wink_sdk::admission::{self, Operation, Rule, Verdict, Webhook};
use wink_sdk::cache;
use wink_sdk::report::{self, Outcome, Severity};
use wink_sdk::serde::Deserialize;
use wink_sdk::{Handler, IndexBy, Object, Registration, Resource, Watch};

const INDEX: &str = "host";

#[derive(Deserialize)]
#[serde(crate = "wink_sdk::serde")]
struct Ingress {
    #[serde(default)]
    spec: Spec,
}

#[derive(Default, Deserialize)]
#[serde(crate = "wink_sdk::serde")]
struct Spec {
    #[serde(default)]
    rules: Vec<IngressRule>,
}

#[derive(Deserialize)]
#[serde(crate = "wink_sdk::serde")]
struct IngressRule {
    #[serde(default)]
    host: Option<String>,
}

fn resource() -> Resource {
    Resource::new("networking.k8s.io/v1", "Ingress")
}

/// The hosts an Ingress routes, each once.
fn hosts(ingress: &Ingress) -> Vec<&str> {
    let mut hosts: Vec<&str> = ingress
        .spec
        .rules
        .iter()
        .filter_map(|r| r.host.as_deref())
        .filter(|h| !h.is_empty())
        .collect();
    hosts.sort_unstable();
    hosts.dedup();
    hosts
}

/// The first `(host, other Ingress's key)` that `key`'s hosts share with
/// another Ingress, from the index.
fn taken(key: &str, hosts: &[&str]) -> Result<Option<(String, String)>, String> {
    for host in hosts {
        let keys = cache::index_keys(&resource(), INDEX, host).map_err(|e| format!("{e:?}"))?;
        if let Some(other) = keys.into_iter().find(|k| k != key) {
            return Ok(Some((host.to_string(), other)));
        }
    }
    Ok(None)
}

struct Unique;

impl Handler for Unique {
    fn init(_config: &str) -> Result<(Self, Registration), String> {
        let door = Webhook::validate().rule(Rule::new(
            &[Operation::Create, Operation::Update],
            "networking.k8s.io",
            "v1",
            "ingresses",
        ));
        let registration = Registration::new()
            .name("unique-ingress-host")
            .watch(
                Watch::new("networking.k8s.io/v1", "Ingress")
                    .index(INDEX, IndexBy::Field("spec.rules[*].host".into())),
            )
            .admission(door);
        Ok((Unique, registration))
    }

    fn on_add(&mut self, obj: &Object, _in_initial_list: bool) {
        report_on(obj);
    }

    fn on_update(&mut self, _old: &Object, new: &Object) {
        report_on(new);
    }

    fn validate(&mut self, request: &admission::Request) -> Verdict {
        let Some(Ok(ingress)) = request.decode::<Ingress>() else {
            return Verdict::allow();
        };
        let key = format!(
            "{}/{}",
            request.namespace().unwrap_or_default(),
            request.name().unwrap_or_default()
        );
        match taken(&key, &hosts(&ingress)) {
            Ok(None) => Verdict::allow(),
            Ok(Some((host, other))) => Verdict::deny(format!(
                "unique-ingress-host: the host {host} is already routed by the Ingress {other}"
            )),
            Err(e) => Verdict::allow().warn(format!("unique-ingress-host: hosts not looked up: {e}")),
        }
    }
}

fn report_on(obj: &Object) {
    let Ok(ingress) = obj.decode::<Ingress>() else {
        return;
    };
    let (outcome, message) = match taken(obj.key(), &hosts(&ingress)) {
        Ok(None) => (Outcome::Pass, "every host is this Ingress's alone".to_string()),
        Ok(Some((host, other))) => (
            Outcome::Fail,
            format!("the host {host} is also routed by {other}"),
        ),
        Err(e) => (Outcome::Error, format!("hosts not looked up: {e}")),
    };
    let finding = report::finding("unique-host", outcome)
        .message(message)
        .severity(Severity::Medium)
        .category("Ingresses");
    if let Err(e) = report::set(obj, &[finding]) {
        wink_sdk::warn!("unique-ingress-host: results about {} not given: {e}", obj.key());
    }
}

wink_sdk::export_plugin!(Unique);
