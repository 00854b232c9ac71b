//! Policy results about objects, which the host keeps current in policy
//! reports (wgpolicyk8s PolicyReports or OpenReports Reports, per the
//! operator's `--report-api`; one per namespace, and their cluster-scoped
//! kinds for cluster-scoped objects). Nothing to declare in the registration.
//!
//! A plugin states what is true now, not a history: every result it gives
//! about one object during one handler call adds up with the others of that
//! call, and together, when the call returns, they replace every result it
//! gave about that object before. So give all of an object's results every
//! time it is checked (the host writes only what changed). A deleted object's
//! results go by themselves; [`clear`] drops them while it lives.
//!
//! ```no_run
//! use wink_sdk::report::{self, Outcome, Severity};
//! # fn f(pod: &wink_sdk::Object, privileged: &[&str]) -> Result<(), String> {
//! let finding = if privileged.is_empty() {
//!     report::finding("privileged-containers", Outcome::Pass).message("no privileged containers")
//! } else {
//!     report::finding("privileged-containers", Outcome::Fail)
//!         .severity(Severity::High)
//!         .message(format!("privileged containers: {}", privileged.join(", ")))
//!         .property("containers", privileged.join(","))
//! };
//! report::set(pod, &[finding.category("Pod Security Standards (Baseline)")])?;
//! // One result, no builder:
//! report::warn(pod, "latest-tag", "image tag latest")?;
//! # Ok(()) }
//! ```

use crate::Object;
use crate::bindings::wink::plugin::report as wit;

pub use wit::{Outcome, Severity};

/// One rule's result about one object (a report's `results[]` entry),
/// built by [`finding`] and given by [`set`].
#[derive(Debug, Clone)]
pub struct Finding(wit::PolicyResult);

/// A result of `rule` (e.g. `privileged-containers`; not empty), with no
/// message, severity, category or property yet, under the policy named as the
/// plugin.
pub fn finding(rule: impl Into<String>, outcome: Outcome) -> Finding {
    Finding(wit::PolicyResult {
        policy: None,
        rule: rule.into(),
        outcome,
        severity: None,
        category: None,
        message: String::new(),
        properties: Vec::new(),
    })
}

impl Finding {
    /// What a person reading the report needs to know (the host keeps at
    /// most 1,024 characters).
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.0.message = message.into();
        self
    }

    /// How much it matters.
    pub fn severity(mut self, severity: Severity) -> Self {
        self.0.severity = Some(severity);
        self
    }

    /// A grouping for dashboards, e.g. `Pod Security Standards (Baseline)`.
    pub fn category(mut self, category: impl Into<String>) -> Self {
        self.0.category = Some(category.into());
        self
    }

    /// The policy the rule belongs to, instead of the plugin's name.
    pub fn policy(mut self, policy: impl Into<String>) -> Self {
        self.0.policy = Some(policy.into());
        self
    }

    /// One more extra fact, e.g. `("containers", "app,sidecar")`.
    pub fn property(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.0.properties.push((key.into(), value.into()));
        self
    }
}

/// Give `findings` about `subject` (an object the plugin was handed or got
/// from the cache). They add up with the others given about it in the same
/// call, and replace its previous ones when the call returns. Refused, with
/// the reason, when a rule is empty or the object would get more than 256
/// results in one call; nothing of this list is kept then.
pub fn set(subject: &Object, findings: &[Finding]) -> Result<(), String> {
    let results: Vec<wit::PolicyResult> = findings.iter().map(|f| f.0.clone()).collect();
    wit::set_results(subject.handle(), &results)
}

/// Give no result about `subject`: unless others are given about it in the
/// same call, its previous results go when the call returns.
pub fn clear(subject: &Object) -> Result<(), String> {
    wit::set_results(subject.handle(), &[])
}

fn one(subject: &Object, rule: &str, outcome: Outcome, message: &str) -> Result<(), String> {
    set(subject, &[finding(rule, outcome).message(message)])
}

/// Give one result: `subject` complies with `rule`.
pub fn pass(subject: &Object, rule: &str, message: &str) -> Result<(), String> {
    one(subject, rule, Outcome::Pass, message)
}

/// Give one result: `subject` violates `rule`.
pub fn fail(subject: &Object, rule: &str, message: &str) -> Result<(), String> {
    one(subject, rule, Outcome::Fail, message)
}

/// Give one result: `subject` violates `rule`, which only warns.
pub fn warn(subject: &Object, rule: &str, message: &str) -> Result<(), String> {
    one(subject, rule, Outcome::Warn, message)
}

/// Give one result: `rule` could not be evaluated on `subject`.
pub fn error(subject: &Object, rule: &str, message: &str) -> Result<(), String> {
    one(subject, rule, Outcome::Error, message)
}

/// Give one result: `rule` does not apply to `subject`.
pub fn skip(subject: &Object, rule: &str, message: &str) -> Result<(), String> {
    one(subject, rule, Outcome::Skip, message)
}
