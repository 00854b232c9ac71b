//! The two answers of a policy that states what is wrong with an object as
//! a list of violations (one line each, naming the field): the verdict at
//! the door, and the one result per object in the background. Owns only
//! their wording, so that every library policy (`plugins/*`) answers alike:
//! a denial `NAME: violation; violation`, a result `fail` with the
//! violations as its message, or `pass`.
//!
//! ```no_run
//! use wink_sdk::policy;
//! # fn f(obj: &wink_sdk::Object, found: Vec<String>) {
//! let verdict = policy::verdict("block-service-types", &found);
//! policy::report(obj, &policy::Rule::new("service-type", "Best Practices", "an allowed type"), &found);
//! # let _ = verdict; }
//! ```

use crate::Object;
use crate::admission::{Operation, Request, Verdict};
use crate::report::{self, Outcome, Severity};

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
