//! Audit mode's record of what a plugin would have refused at admission: a
//! failing policy result about the object under review (as Kyverno's
//! admission reports in Audit mode), given to the report aggregator beside
//! the plugin's own results. The request is allowed all the same (see
//! [`super::audited`]).
//!
//! A request's object may have no uid yet (a CREATE), so these results are
//! keyed by the object's type, namespace and name, never by uid, and carry
//! the uid when the request has one. The object's latest review decides:
//! a later request about it that the plugin allows clears the result. At
//! most [`MAX_HELD`] objects per plugin are held; past that the oldest
//! result goes. Owns only these results; it never answers a request.

use super::{AdmissionRequest, Decision};
use crate::instance::Door;
use crate::reports::aggregate::{Aggregator, Outcome, PolicyResult, Subject};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// The most objects with an audit result one plugin holds at once.
pub const MAX_HELD: usize = 4096;

/// `properties.process` of a result from an admission review, as Kyverno
/// marks its own.
pub const PROCESS: &str = "admission review";

/// One plugin's admission results in audit mode: which objects have one,
/// oldest first.
#[derive(Default)]
pub struct AuditTrail {
    held: Mutex<VecDeque<(String, Subject)>>,
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The name and uid in an object's text (an audit result's subject).
#[derive(serde::Deserialize, Default)]
struct Named {
    #[serde(default)]
    metadata: NamedMeta,
}

#[derive(serde::Deserialize, Default)]
struct NamedMeta {
    #[serde(default)]
    name: String,
    #[serde(default)]
    uid: String,
}

/// The object `request` is about, or none when it has no name yet (a
/// CREATE with only `generateName`).
pub fn subject(request: &AdmissionRequest) -> Option<Subject> {
    let fields = request.fields();
    let null = Value::Null;
    let kind = fields.get("kind").unwrap_or(&null);
    let (group, version) = (text(kind, "group"), text(kind, "version"));
    let objects: Vec<NamedMeta> = [request.object(), request.old_object()]
        .into_iter()
        .flatten()
        .map(|t| serde_json::from_str::<Named>(t).unwrap_or_default().metadata)
        .collect();
    let meta = |key: fn(&NamedMeta) -> &str| -> &str {
        objects
            .iter()
            .map(key)
            .find(|s| !s.is_empty())
            .unwrap_or_default()
    };
    let name = Some(text(fields, "name"))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| meta(|m| &m.name));
    if name.is_empty() {
        return None;
    }
    let namespace = Some(text(fields, "namespace")).filter(|n| !n.is_empty());
    Some(Subject {
        api_version: if group.is_empty() {
            version.to_string()
        } else {
            format!("{group}/{version}")
        },
        kind: text(kind, "kind").to_string(),
        namespace: namespace.map(str::to_string),
        name: name.to_string(),
        uid: meta(|m| &m.uid).to_string(),
    })
}

/// The key of `subject`'s admission result: its type and key, never a uid.
fn key(subject: &Subject) -> String {
    let ns = subject.namespace.as_deref().unwrap_or_default();
    format!(
        "admission {} {} {ns}/{}",
        subject.api_version, subject.kind, subject.name
    )
}

/// The failing result `plugin` would have refused a request with.
pub fn result(plugin: &str, door: Door, request: &AdmissionRequest, decision: &Decision) -> PolicyResult {
    let mut properties = std::collections::BTreeMap::new();
    properties.insert("process".to_string(), PROCESS.to_string());
    properties.insert(
        "operation".to_string(),
        text(request.fields(), "operation").to_string(),
    );
    PolicyResult {
        policy: plugin.to_string(),
        rule: match door {
            Door::Validate => "validate",
            Door::Mutate => "mutate",
        }
        .to_string(),
        outcome: Outcome::Fail,
        severity: None,
        category: None,
        message: decision.message.clone(),
        properties,
    }
}

impl AuditTrail {
    /// Record `plugin`'s `decision` (before audit mode allowed it) about
    /// `request`: a denial becomes the object's failing result, an allowance
    /// clears one. `instance` is the plugin's event-handling instance (its
    /// results and these share its lifetime in the aggregator).
    pub fn record(
        &self,
        aggregator: &Aggregator,
        plugin: &Arc<str>,
        instance: usize,
        door: Door,
        request: &AdmissionRequest,
        decision: &Decision,
    ) {
        let Some(subject) = subject(request) else {
            return;
        };
        let key = key(&subject);
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let at = held.iter().position(|(k, _)| *k == key);
        if decision.allowed {
            if let Some(at) = at {
                let (key, subject) = held.remove(at).expect("found above");
                aggregator.set_keyed(plugin, instance, key, subject, Vec::new());
            }
            return;
        }
        let results = vec![result(plugin, door, request, decision)];
        aggregator.set_keyed(plugin, instance, key.clone(), subject.clone(), results);
        if let Some(at) = at {
            held.remove(at);
        }
        held.push_back((key, subject));
        while held.len() > MAX_HELD {
            let (key, subject) = held.pop_front().expect("longer than the cap");
            aggregator.set_keyed(plugin, instance, key, subject, Vec::new());
        }
    }

    /// How many objects have an audit result.
    pub fn len(&self) -> usize {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether no object has one.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(op: &str, name: &str, uid: &str) -> AdmissionRequest {
        AdmissionRequest::from_value(json!({"uid": "r", "operation": op, "namespace": "ns",
               "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
               "object": {"metadata": {"name": name, "namespace": "ns", "uid": uid}}}))
    }

    fn denied() -> Decision {
        Decision {
            allowed: false,
            message: "no team label".into(),
            ..Decision::allow()
        }
    }

    fn results(a: &Aggregator) -> Vec<(Subject, PolicyResult)> {
        a.snapshot(&Some("ns".into()))
            .into_iter()
            .map(|h| (h.subject, h.result))
            .collect()
    }

    #[test]
    fn a_denial_is_a_failing_result_and_a_later_allowance_clears_it() {
        let a = Aggregator::new();
        let trail = AuditTrail::default();
        let plugin: Arc<str> = Arc::from("p");
        // A CREATE: no uid yet, the result names the object.
        trail.record(
            &a,
            &plugin,
            1,
            Door::Validate,
            &request("CREATE", "web", ""),
            &denied(),
        );
        let got = results(&a);
        assert_eq!(got.len(), 1);
        let (s, r) = &got[0];
        assert_eq!(
            (s.api_version.as_str(), s.kind.as_str(), s.name.as_str()),
            ("apps/v1", "Deployment", "web")
        );
        assert_eq!(s.uid, "");
        assert_eq!(
            (r.policy.as_str(), r.rule.as_str(), r.outcome),
            ("p", "validate", Outcome::Fail)
        );
        assert_eq!(r.message, "no team label");
        assert_eq!(r.properties["process"], PROCESS);
        // An UPDATE still denied: one result, now with the uid.
        trail.record(
            &a,
            &plugin,
            1,
            Door::Validate,
            &request("UPDATE", "web", "u-1"),
            &denied(),
        );
        let got = results(&a);
        assert_eq!(got.len(), 1, "one result per object: {got:?}");
        assert_eq!(got[0].0.uid, "u-1");
        assert_eq!(got[0].1.properties["operation"], "UPDATE");
        // Allowed at last: cleared.
        trail.record(
            &a,
            &plugin,
            1,
            Door::Validate,
            &request("UPDATE", "web", "u-1"),
            &Decision::allow(),
        );
        assert!(results(&a).is_empty());
        assert!(trail.is_empty());
    }

    #[test]
    fn audit_results_stay_apart_from_the_handlers_and_are_capped() {
        let a = Aggregator::new();
        let trail = AuditTrail::default();
        let plugin: Arc<str> = Arc::from("p");
        let handler = PolicyResult {
            policy: "p".into(),
            rule: "background".into(),
            outcome: Outcome::Pass,
            severity: None,
            category: None,
            message: String::new(),
            properties: Default::default(),
        };
        let web = subject(&request("UPDATE", "web", "u-1")).unwrap();
        a.set(&plugin, 1, web, vec![handler.clone()]);
        trail.record(
            &a,
            &plugin,
            1,
            Door::Validate,
            &request("UPDATE", "web", "u-1"),
            &denied(),
        );
        assert_eq!(results(&a).len(), 2, "the handler's result stays");
        for i in 0..MAX_HELD + 10 {
            let r = request("CREATE", &format!("d-{i}"), "");
            trail.record(&a, &plugin, 1, Door::Validate, &r, &denied());
        }
        assert_eq!(trail.len(), MAX_HELD);
        let got = results(&a);
        assert_eq!(got.len(), MAX_HELD + 1, "the cap, and the handler's result");
        assert!(got.iter().any(|(_, r)| *r == handler));
        assert!(!got.iter().any(|(s, _)| s.name == "d-0"), "the oldest went first");
    }

    #[test]
    fn a_request_without_a_name_has_no_subject() {
        let r = json!({"operation": "CREATE", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                       "object": {"metadata": {"generateName": "web-"}}});
        assert!(subject(&AdmissionRequest::from_value(r)).is_none());
        let d = json!({"operation": "DELETE", "name": "x", "namespace": "ns",
                       "kind": {"group": "", "version": "v1", "kind": "Pod"},
                       "oldObject": {"metadata": {"name": "x", "uid": "u-x"}}});
        let s = subject(&AdmissionRequest::from_value(d)).unwrap();
        assert_eq!((s.api_version.as_str(), s.uid.as_str()), ("v1", "u-x"));
    }
}
