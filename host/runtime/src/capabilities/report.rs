//! The `report` import: a plugin's policy results about objects. Results
//! given during one call into the guest are held here, per subject, and
//! handed to the aggregator when the call returns: together they replace
//! what the plugin stated about each subject before. A call that traps
//! commits nothing (its instance is replaced and replayed anyway).
//!
//! Owns the checks on what a guest gives (rules, sizes) and the conversion
//! from WIT types; the aggregator owns the results, the report writer the
//! API server.

use super::HostState;
use crate::bindings::wink::plugin::report::{self, Outcome as WitOutcome, Severity as WitSeverity};
use crate::reports::{Aggregator, Outcome, PolicyResult, Severity, Subject};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};
use wasmtime::component::Resource;

/// Results about one object in one call, at most.
pub const MAX_RESULTS_PER_OBJECT: usize = 256;

/// The longest message kept, in characters.
pub const MAX_MESSAGE: usize = 1024;

/// The longest rule, policy, category or property, in characters.
const MAX_NAME: usize = 253;

/// Where a plugin's results go: nowhere until the manager connects it.
#[derive(Clone, Default)]
pub struct ReportScope {
    sink: Arc<OnceLock<Arc<Aggregator>>>,
}

impl ReportScope {
    /// Send results to `aggregator` from now on.
    pub fn connect(&self, aggregator: Arc<Aggregator>) {
        let _ = self.sink.set(aggregator);
    }

    /// The aggregator, once connected.
    pub fn get(&self) -> Option<&Arc<Aggregator>> {
        self.sink.get()
    }
}

/// The results of the call in progress, by subject uid.
#[derive(Default)]
pub struct Pending {
    by_uid: HashMap<String, (Subject, Vec<PolicyResult>)>,
}

fn outcome(o: WitOutcome) -> Outcome {
    match o {
        WitOutcome::Pass => Outcome::Pass,
        WitOutcome::Fail => Outcome::Fail,
        WitOutcome::Warn => Outcome::Warn,
        WitOutcome::Error => Outcome::Error,
        WitOutcome::Skip => Outcome::Skip,
    }
}

fn severity(s: WitSeverity) -> Severity {
    match s {
        WitSeverity::Info => Severity::Info,
        WitSeverity::Low => Severity::Low,
        WitSeverity::Medium => Severity::Medium,
        WitSeverity::High => Severity::High,
        WitSeverity::Critical => Severity::Critical,
    }
}

fn clip(s: String, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => s[..at].to_string(),
        None => s,
    }
}

/// A guest's result, checked and converted.
fn convert(plugin: &str, r: report::PolicyResult) -> Result<PolicyResult, String> {
    if r.rule.trim().is_empty() {
        return Err("a result needs a rule".into());
    }
    let name = |what: &str, s: &str| match s.chars().count() > MAX_NAME {
        true => Err(format!("{what} {s:?} is longer than {MAX_NAME} characters")),
        false => Ok(()),
    };
    name("rule", &r.rule)?;
    let policy = r
        .policy
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| plugin.to_string());
    name("policy", &policy)?;
    if let Some(c) = &r.category {
        name("category", c)?;
    }
    let mut properties = BTreeMap::new();
    for (k, v) in r.properties {
        name("property", &k)?;
        properties.insert(k, clip(v, MAX_MESSAGE));
    }
    Ok(PolicyResult {
        policy,
        rule: r.rule,
        outcome: outcome(r.outcome),
        severity: r.severity.map(severity),
        category: r.category.filter(|c| !c.is_empty()),
        message: clip(r.message, MAX_MESSAGE),
        properties,
    })
}

impl HostState {
    /// Hand the call's results to the aggregator as `instance`'s.
    pub(crate) fn commit_reports(&mut self, instance: usize) {
        if self.report_pending.by_uid.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.report_pending.by_uid);
        let Some(aggregator) = self.reports.get() else {
            return;
        };
        for (_, (subject, results)) in pending {
            aggregator.set(&self.plugin, instance, subject, results);
        }
    }

    /// Drop the call's results (it trapped).
    pub(crate) fn discard_reports(&mut self) {
        self.report_pending.by_uid.clear();
    }
}

impl report::Host for HostState {
    fn set_results(
        &mut self,
        subject: Resource<super::ObjectHandle>,
        results: Vec<report::PolicyResult>,
    ) -> wasmtime::Result<Result<(), String>> {
        let obj = self.object(&subject)?.clone();
        let subject = Subject {
            api_version: obj.api_version().to_string(),
            kind: obj.kind().to_string(),
            namespace: obj.namespace().map(str::to_string),
            name: obj.name().to_string(),
            uid: obj.uid().to_string(),
        };
        if !self.cache.scope().admits(&obj) {
            return Ok(Err(format!(
                "{} {} is outside this plugin's scope (set by the operator): no results for it",
                obj.kind(),
                obj.key()
            )));
        }
        if subject.uid.is_empty() {
            return Ok(Err(format!(
                "{} has no uid: results need a stored object",
                obj.key()
            )));
        }
        let held = self
            .report_pending
            .by_uid
            .get(&subject.uid)
            .map_or(0, |(_, r)| r.len());
        if held + results.len() > MAX_RESULTS_PER_OBJECT {
            return Ok(Err(format!(
                "{} would get {} results in one call; at most {MAX_RESULTS_PER_OBJECT}",
                obj.key(),
                held + results.len()
            )));
        }
        let converted: Result<Vec<_>, String> =
            results.into_iter().map(|r| convert(&self.plugin, r)).collect();
        let converted = match converted {
            Ok(c) => c,
            Err(e) => return Ok(Err(e)),
        };
        let uid = subject.uid.clone();
        self.report_pending
            .by_uid
            .entry(uid)
            .or_insert_with(|| (subject, Vec::new()))
            .1
            .extend(converted);
        Ok(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wit(rule: &str) -> report::PolicyResult {
        report::PolicyResult {
            policy: None,
            rule: rule.into(),
            outcome: WitOutcome::Fail,
            severity: Some(WitSeverity::High),
            category: Some(String::new()),
            message: "x".repeat(5000),
            properties: vec![("containers".into(), "a,b".into())],
        }
    }

    #[test]
    fn results_are_checked_and_named_after_the_plugin_by_default() {
        let r = convert("pod-security", wit("privileged-containers")).unwrap();
        assert_eq!(r.policy, "pod-security");
        assert_eq!(r.message.len(), MAX_MESSAGE);
        assert_eq!(r.category, None, "an empty category is none");
        assert_eq!(r.properties["containers"], "a,b");
        assert!(convert("p", wit(" ")).unwrap_err().contains("needs a rule"));
        assert!(
            convert("p", wit(&"r".repeat(300)))
                .unwrap_err()
                .contains("longer than")
        );
    }
}
