//! The two answers of a policy that states what is wrong with an object as
//! a list of violations (one line each, naming the field): the verdict at
//! the door, and the one result per object in the background. Owns only
//! their wording, so that every library policy (`plugins/*`) answers alike:
//! a denial `NAME: violation; violation`, a result `fail` with the
//! violations as its message, or `pass`.
//!
//! A policy that judges one object at a time implements [`Check`] and
//! exports [`Checked`]: the handler that reports every object it is handed
//! (on add and update) and answers its validating webhook with [`review`].
//! It reads each object as a `serde_json::Value` tree, or as a typed view
//! of its own (`Check<V>`, exported as `Checked<Policy, V>`): a sparse
//! struct decodes only the fields it names, which costs a fraction of the
//! whole tree (e.g. [`workload::Pods`](crate::workload::Pods), a Pod's or a
//! workload's containers, see the module's second example).
//!
//! ```no_run
//! use wink_sdk::admission::{Operation, Rule, Webhook};
//! use wink_sdk::serde_json::Value;
//! use wink_sdk::{Registration, Watch, policy};
//!
//! struct NoNodePorts;
//!
//! impl policy::Check for NoNodePorts {
//!     const NAME: &'static str = "no-node-ports";
//!     fn new(_config: &str) -> Result<Self, String> {
//!         Ok(NoNodePorts)
//!     }
//!     fn registration(&self) -> Registration {
//!         let ops = [Operation::Create, Operation::Update];
//!         Registration::new()
//!             .watch(Watch::new("v1", "Service"))
//!             .admission(Webhook::validate().rule(Rule::new(&ops, "", "v1", "services")))
//!     }
//!     fn rule(&self) -> policy::Rule {
//!         policy::Rule::new("service-type", "Best Practices", "not a NodePort")
//!     }
//!     fn violations(&self, _kind: &str, service: &Value) -> Vec<String> {
//!         match service["spec"]["type"] == "NodePort" {
//!             true => vec!["spec.type NodePort is not allowed".into()],
//!             false => Vec::new(),
//!         }
//!     }
//! }
//!
//! wink_sdk::export_plugin!(policy::Checked<NoNodePorts>);
//! # fn main() {}
//! ```
//!
//! The same with a view of its own, the Service's `spec.type` only:
//!
//! ```no_run
//! # use wink_sdk::{Registration, Watch, policy};
//! use wink_sdk::serde::Deserialize;
//!
//! #[derive(Deserialize, Default)]
//! #[serde(crate = "wink_sdk::serde", default)]
//! struct Service {
//!     spec: Spec,
//! }
//!
//! #[derive(Deserialize, Default)]
//! #[serde(crate = "wink_sdk::serde", default, rename_all = "camelCase")]
//! struct Spec {
//!     r#type: Option<String>,
//! }
//!
//! struct NoNodePorts;
//!
//! impl policy::Check<Service> for NoNodePorts {
//!     // NAME, new, registration and rule as above.
//! #   const NAME: &'static str = "no-node-ports";
//! #   fn new(_config: &str) -> Result<Self, String> {
//! #       Ok(NoNodePorts)
//! #   }
//! #   fn registration(&self) -> Registration {
//! #       Registration::new().watch(Watch::new("v1", "Service"))
//! #   }
//! #   fn rule(&self) -> policy::Rule {
//! #       policy::Rule::new("service-type", "Best Practices", "not a NodePort")
//! #   }
//!     fn violations(&self, _kind: &str, service: &Service) -> Vec<String> {
//!         match service.spec.r#type.as_deref() == Some("NodePort") {
//!             true => vec!["spec.type NodePort is not allowed".into()],
//!             false => Vec::new(),
//!         }
//!     }
//! }
//!
//! wink_sdk::export_plugin!(policy::Checked<NoNodePorts, Service>);
//! # fn main() {}
//! ```
//!
//! An object its view cannot decode has no violations (a `Value` decodes
//! every object): a view should take every shape the API server sends, as
//! `Option` and `#[serde(default)]` fields do.

use crate::admission::{Operation, Request, Verdict};
use crate::report::{self, Outcome, Severity};
use crate::{Handler, Object, Registration};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::marker::PhantomData;

/// A policy that judges one object at a time, by its content alone, read
/// as a `V`: a `serde_json::Value` unless it names a view of its own.
pub trait Check<V = Value>: Sized + 'static {
    /// Its name: the plugin's, and the prefix of its denials.
    const NAME: &'static str;
    /// Build it from its config text (see [`crate::config`]); an error
    /// fails the plugin's `init`.
    fn new(config: &str) -> Result<Self, String>;
    /// Its watches and its validating webhook (the name is set to [`Check::NAME`]).
    fn registration(&self) -> Registration;
    /// The rule its background results are given under.
    fn rule(&self) -> Rule;
    /// What is wrong with `object` (of kind `kind`), one line per
    /// violation, each naming the field.
    fn violations(&self, kind: &str, object: &V) -> Vec<String>;
}

/// The [`Handler`] of a [`Check`] reading objects as `V`: every object
/// added or updated gets its one result ([`report`]); the validating
/// webhook answers with [`review`].
pub struct Checked<C, V = Value>(C, PhantomData<fn() -> V>);

impl<C: Check<V>, V: DeserializeOwned> Checked<C, V> {
    fn check(&self, obj: &Object) -> Vec<String> {
        obj.decode::<V>()
            .map(|object| self.0.violations(obj.kind(), &object))
            .unwrap_or_default()
    }
}

impl<C: Check<V>, V: DeserializeOwned + 'static> Handler for Checked<C, V> {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        let check = C::new(config)?;
        let registration = check.registration().name(C::NAME);
        Ok((Checked(check, PhantomData), registration))
    }

    fn on_add(&mut self, obj: &Object, _in_initial_list: bool) {
        report(obj, &self.0.rule(), &self.check(obj));
    }

    fn on_update(&mut self, _old: &Object, new: &Object) {
        report(new, &self.0.rule(), &self.check(new));
    }

    fn validate(&mut self, request: &Request) -> Verdict {
        review(C::NAME, request, |o| self.check(o))
    }
}

/// Allow when `violations` is empty; else deny with them, after the policy's name.
pub fn verdict(policy: &str, violations: &[String]) -> Verdict {
    match violations.is_empty() {
        true => Verdict::allow(),
        false => Verdict::deny(format!("{policy}: {}", violations.join("; "))),
    }
}

/// An update's verdict: deny only the violations `old` (the stored object)
/// did not have. Those it keeps are allowed, with a warning each, so that
/// an object already in breach (stored before the policy, or in audit) can
/// still be scaled, labelled or fixed one field at a time, while its
/// background result says `fail`.
pub fn verdict_update(policy: &str, old: &[String], new: &[String]) -> Verdict {
    let added: Vec<String> = new.iter().filter(|v| !old.contains(v)).cloned().collect();
    if !added.is_empty() {
        return verdict(policy, &added);
    }
    new.iter().fold(Verdict::allow(), |v, kept| {
        v.warn(format!("{policy}: {kept} (already so before this update)"))
    })
}

/// The verdict on `request` for a policy whose violations of an object
/// `check` lists: [`verdict`] on a create, [`verdict_update`] on an update
/// (with the old object), allow when there is no object to check.
pub fn review(policy: &str, request: &Request, check: impl Fn(&Object) -> Vec<String>) -> Verdict {
    let Some(new) = request.object().map(&check) else {
        return Verdict::allow();
    };
    match (request.operation(), request.old_object()) {
        (Operation::Update, Some(old)) => verdict_update(policy, &check(old), &new),
        _ => verdict(policy, &new),
    }
}

/// The rule a policy reports under.
pub struct Rule {
    name: String,
    category: String,
    pass: String,
    severity: Severity,
}

impl Rule {
    /// Rule `name` in `category`; `pass` is the message of a passing result.
    /// Severity medium.
    pub fn new(name: &str, category: &str, pass: &str) -> Rule {
        Rule {
            name: name.into(),
            category: category.into(),
            pass: pass.into(),
            severity: Severity::Medium,
        }
    }

    /// Another severity.
    pub fn severity(mut self, severity: Severity) -> Rule {
        self.severity = severity;
        self
    }
}

/// Give `obj` its one result of `rule`: `fail` with `violations` as its
/// message, or `pass`. A refused result is logged, not returned: a report
/// is never worth a failed event.
pub fn report(obj: &Object, rule: &Rule, violations: &[String]) {
    let finding = match violations.is_empty() {
        true => report::finding(rule.name.as_str(), Outcome::Pass).message(rule.pass.as_str()),
        false => report::finding(rule.name.as_str(), Outcome::Fail).message(violations.join("; ")),
    };
    let finding = finding.severity(rule.severity).category(rule.category.as_str());
    if let Err(e) = report::set(obj, &[finding]) {
        crate::warn!("results about {} not given: {e}", obj.key());
    }
}
