//! `unique-service-selector`: two Services of a namespace with the same
//! selector send the same Pods two names' traffic, and a change meant for
//! one reaches the other; a policy that needs the other Services of the
//! namespace (Gatekeeper's `k8suniqueserviceselector` reads the same
//! context from its replicated inventory; wink from its informer cache).
//!
//! - At the door (a validating webhook on Service create and update): a
//!   Service whose `spec.selector` is, as a set of labels, that of another
//!   Service of its namespace is refused, naming the selector and the other
//!   Service. The same Service updated is not its own twin.
//! - In the background: every Service gets the result `unique-selector`
//!   (`fail` naming the twin, or `pass`); a Service added, changed or
//!   deleted has its twins' results given again, so both sides of a pair
//!   fail together and pass together once it is gone.
//!
//! Services without a selector (manual Endpoints, ExternalName) are not
//! compared. No config.

use std::collections::BTreeMap;
use wink_sdk::admission::{self, Operation, Rule, Verdict, Webhook};
use wink_sdk::cache;
use wink_sdk::serde::Deserialize;
use wink_sdk::{Handler, Object, Registration, Resource, Watch, policy};

const NAME: &str = "unique-service-selector";

#[derive(Default, Deserialize)]
#[serde(crate = "wink_sdk::serde")]
struct Service {
    #[serde(default)]
    spec: Spec,
}

#[derive(Default, Deserialize)]
#[serde(crate = "wink_sdk::serde")]
struct Spec {
    #[serde(default)]
    selector: Option<BTreeMap<String, String>>,
}

fn services() -> Resource {
    Resource::new("v1", "Service")
}

/// The selector as sorted `key=value` text; none when empty.
fn selector(service: &Service) -> Option<String> {
    let pairs: Vec<String> = service
        .spec
        .selector
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    (!pairs.is_empty()).then(|| pairs.join(","))
}

/// The Services of `namespace` other than `key` whose selector is `selector`.
fn twins(namespace: &str, key: &str, selector: &str) -> Result<Vec<Object>, String> {
    let all = cache::list_objects(&services(), Some(namespace), None).map_err(|e| format!("{e:?}"))?;
    Ok(all
        .into_iter()
        .filter(|o| o.key() != key)
        .filter(|o| {
            o.decode::<Service>()
                .ok()
                .and_then(|s| self::selector(&s))
                .as_deref()
                == Some(selector)
        })
        .collect())
}

/// `obj`'s violations and its twins.
fn check(obj: &Object) -> (Vec<String>, Vec<Object>) {
    let sel = obj.decode::<Service>().ok().and_then(|s| selector(&s));
    let (Some(sel), Some(ns)) = (sel, obj.namespace()) else {
        return (Vec::new(), Vec::new());
    };
    match twins(ns, obj.key(), &sel) {
        Ok(twins) => {
            let found = twins
                .iter()
                .map(|t| {
                    format!(
                        "spec.selector {sel} is also the selector of the Service {}",
                        t.key()
                    )
                })
                .collect();
            (found, twins)
        }
        Err(e) => (vec![format!("Services not looked up: {e}")], Vec::new()),
    }
}

fn rule() -> policy::Rule {
    policy::Rule::new(
        "unique-selector",
        "Best Practices",
        "no other Service of the namespace has this selector",
    )
}

/// Report `obj`, and with `and_twins` its twins too.
fn report(obj: &Object, and_twins: bool) {
    let (found, twins) = check(obj);
    policy::report(obj, &rule(), &found);
    if and_twins {
        for twin in &twins {
            policy::report(twin, &rule(), &check(twin).0);
        }
    }
}

/// After `gone` left (deleted, or its selector changed): its former twins again.
fn report_former_twins(gone: &Object) {
    let sel = gone.decode::<Service>().ok().and_then(|s| selector(&s));
    if let (Some(sel), Some(ns)) = (sel, gone.namespace()) {
        for twin in twins(ns, gone.key(), &sel).unwrap_or_default() {
            policy::report(&twin, &rule(), &check(&twin).0);
        }
    }
}

struct Policy;

impl Handler for Policy {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        if !config.trim().is_empty() && config.trim() != "{}" {
            return Err("bad config: unique-service-selector takes no config".into());
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
        Ok((Policy, registration))
    }

    fn on_add(&mut self, obj: &Object, in_initial_list: bool) {
        // During the initial list each Service is reported against the
        // whole cache: its twins get theirs from their own add.
        report(obj, !in_initial_list);
    }

    fn on_update(&mut self, old: &Object, new: &Object) {
        report(new, true);
        let of = |o: &Object| o.decode::<Service>().ok().and_then(|s| selector(&s));
        // Reported once per call: the same twins, when the selector stayed.
        if of(old) != of(new) {
            report_former_twins(old);
        }
    }

    fn on_delete(&mut self, obj: &Object, _final_state_unknown: bool) {
        report_former_twins(obj);
    }

    fn validate(&mut self, request: &admission::Request) -> Verdict {
        let (Some(Ok(service)), Some(ns)) = (request.decode::<Service>(), request.namespace()) else {
            return Verdict::allow();
        };
        let Some(sel) = selector(&service) else {
            return Verdict::allow();
        };
        let key = format!("{ns}/{}", request.name().unwrap_or_default());
        match twins(ns, &key, &sel) {
            Ok(twins) => {
                let found: Vec<String> = twins
                    .iter()
                    .map(|t| {
                        format!(
                            "spec.selector {sel} is already the selector of the Service {}",
                            t.key()
                        )
                    })
                    .collect();
                policy::verdict(NAME, &found)
            }
            Err(e) => Verdict::allow().warn(format!("{NAME}: Services not looked up: {e}")),
        }
    }
}

wink_sdk::export_plugin!(Policy);
