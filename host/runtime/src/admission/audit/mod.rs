//! Audit mode's record of what a plugin would have refused at admission: a
//! failing policy result about the object under review (as Kyverno's
//! admission reports in Audit mode), given to the report aggregator beside
//! the plugin's own results. The request is allowed all the same (see
//! [`super::audited`]).
//!
//! A request's object may have no uid yet (a CREATE), so these results are
//! keyed by the object's type, namespace and name, never by uid, and carry
//! the uid when the request has one. The object's latest review decides:
//! a later request about it that the plugin allows clears the result.
//!
//! Anything that reaches the webhook port can post reviews, so results are
//! bounded: each peer adds them at its rate ([`peers`]: past it a result is
//! not recorded), and at most [`MAX_HELD`] objects per plugin are held;
//! past that a result about an object the informer cache does not hold goes
//! first, and a result about an object that exists is never given up for
//! one about an object that does not ([`evict`]). A result not recorded is
//! said to the caller ([`Unrecorded`]), which counts it. Owns only these
//! results; it never answers a request.

pub mod evict;
pub mod peers;

use super::{AdmissionRequest, Decision};
use crate::instance::Door;
use crate::reports::aggregate::{Aggregator, Outcome, PolicyResult, Subject};
pub use evict::{Cache, InCache, Resource};
use serde_json::Value;
use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use wink_informer::repeated::RepeatedFailure;

/// The most objects with an audit result one plugin holds at once.
pub const MAX_HELD: usize = 4096;

/// `properties.process` of a result from an admission review, as Kyverno
/// marks its own.
pub const PROCESS: &str = "admission review";

/// Why a denial's result was not recorded: what the admission metrics
/// count it as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unrecorded {
    /// Its peer was over its rate ([`peers`]).
    Rate,
    /// The trail was full of results about objects no less present than
    /// its own ([`evict`]).
    Full,
}

impl Unrecorded {
    /// Its name in the metrics.
    pub fn name(self) -> &'static str {
        match self {
            Unrecorded::Rate => "rate",
            Unrecorded::Full => "full",
        }
    }
}

/// One held result: its key, its subject, and the resource it is of.
struct Held {
    key: String,
    subject: Subject,
    resource: Resource,
}

/// One plugin's admission results in audit mode: which objects have one,
/// oldest first, and the peers that added them.
#[derive(Default)]
pub struct AuditTrail {
    held: Mutex<VecDeque<Held>>,
    peers: Mutex<peers::Peers>,
    /// What was said of results dropped for a full trail.
    full: Mutex<RepeatedFailure>,
}

/// The `resource` of `request`.
fn resource(request: &AdmissionRequest) -> Resource {
    let null = Value::Null;
    let r = request.fields().get("resource").unwrap_or(&null);
    Resource {
        group: text(r, "group").to_string(),
        version: text(r, "version").to_string(),
        resource: text(r, "resource").to_string(),
    }
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
    /// `request`, sent by `peer` when known: a denial becomes the object's
    /// failing result, an allowance clears one. `instance` is the plugin's
    /// event-handling instance (its results and these share its lifetime
    /// in the aggregator); `cache` says which objects exist. A denial not
    /// recorded says why.
    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &self,
        aggregator: &Aggregator,
        plugin: &Arc<str>,
        instance: usize,
        door: Door,
        request: &AdmissionRequest,
        decision: &Decision,
        peer: Option<IpAddr>,
        cache: &dyn Cache,
    ) -> Result<(), Unrecorded> {
        let Some(subject) = subject(request) else {
            return Ok(());
        };
        let key = key(&subject);
        if decision.allowed {
            let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(at) = held.iter().position(|h| h.key == key) {
                let h = held.remove(at).expect("found above");
                aggregator.set_keyed(plugin, instance, h.key, h.subject, Vec::new());
            }
            return Ok(());
        }
        if let Some(peer) = peer {
            let taken = self
                .peers
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take_at(peer, Instant::now());
            if let peers::Taken::No(said) = taken {
                if let Some(line) = said {
                    tracing::warn!(plugin = &**plugin, "{line}");
                }
                return Err(Unrecorded::Rate);
            }
        }
        let resource = resource(request);
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let at = held.iter().position(|h| h.key == key);
        if at.is_none() && held.len() >= MAX_HELD {
            let rank = cache.in_cache(&resource, &subject);
            let given_up = evict::victim(held.iter().map(|h| (&h.resource, &h.subject)), rank, cache);
            let Some(i) = given_up else {
                let what = format!(
                    "audit trail full: its {MAX_HELD} results are about objects the cache \
                     holds (or cannot tell of), and a result is not recorded in place of one \
                     about an object more surely there"
                );
                let said = self.full.lock().unwrap_or_else(|e| e.into_inner()).failed(&what);
                if let Some(line) = said {
                    tracing::warn!(plugin = &**plugin, "{line}");
                }
                return Err(Unrecorded::Full);
            };
            let h = held.remove(i).expect("an index of held");
            aggregator.set_keyed(plugin, instance, h.key, h.subject, Vec::new());
        }
        let results = vec![result(plugin, door, request, decision)];
        aggregator.set_keyed(plugin, instance, key.clone(), subject.clone(), results);
        if let Some(at) = at {
            held.remove(at);
        }
        held.push_back(Held {
            key,
            subject,
            resource,
        });
        Ok(())
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

    /// `trail.record` of a validation, from no known peer, with nothing
    /// known of the cache.
    fn record(
        trail: &AuditTrail,
        a: &Aggregator,
        plugin: &Arc<str>,
        r: &AdmissionRequest,
        d: &Decision,
    ) -> Result<(), Unrecorded> {
        let unknown = |_: &Resource, _: &Subject| InCache::Unknown;
        trail.record(a, plugin, 1, Door::Validate, r, d, None, &unknown)
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
        record(&trail, &a, &plugin, &request("CREATE", "web", ""), &denied()).unwrap();
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
        record(&trail, &a, &plugin, &request("UPDATE", "web", "u-1"), &denied()).unwrap();
        let got = results(&a);
        assert_eq!(got.len(), 1, "one result per object: {got:?}");
        assert_eq!(got[0].0.uid, "u-1");
        assert_eq!(got[0].1.properties["operation"], "UPDATE");
        // Allowed at last: cleared.
        record(
            &trail,
            &a,
            &plugin,
            &request("UPDATE", "web", "u-1"),
            &Decision::allow(),
        )
        .unwrap();
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
        record(&trail, &a, &plugin, &request("UPDATE", "web", "u-1"), &denied()).unwrap();
        assert_eq!(results(&a).len(), 2, "the handler's result stays");
        for i in 0..MAX_HELD + 10 {
            let r = request("CREATE", &format!("d-{i}"), "");
            record(&trail, &a, &plugin, &r, &denied()).unwrap();
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

    /// A trail of [`MAX_HELD`] results about objects that exist (`real-*`)
    /// and forged ones (any other name) about objects that do not.
    fn present(_: &Resource, s: &Subject) -> InCache {
        match s.name.starts_with("real-") {
            true => InCache::Present,
            false => InCache::Absent,
        }
    }

    #[test]
    fn a_full_trail_gives_up_results_about_absent_objects_never_about_present_ones() {
        let a = Aggregator::new();
        let trail = AuditTrail::default();
        let plugin: Arc<str> = Arc::from("p");
        let add = |name: &str| {
            let r = request("CREATE", name, "");
            trail.record(&a, &plugin, 1, Door::Validate, &r, &denied(), None, &present)
        };
        for i in 0..100 {
            add(&format!("real-{i}")).unwrap();
        }
        // A flood about made-up objects fills the trail, then gives up its
        // own oldest results, never the real ones.
        for i in 0..MAX_HELD + 500 {
            add(&format!("forged-{i}")).unwrap();
        }
        assert_eq!(trail.len(), MAX_HELD);
        let names = |a: &Aggregator| -> Vec<String> { results(a).into_iter().map(|(s, _)| s.name).collect() };
        let got = names(&a);
        for i in 0..100 {
            assert!(got.contains(&format!("real-{i}")), "real-{i} was evicted");
        }
        assert!(!got.contains(&"forged-0".to_string()), "the oldest forged went");
        // A new real result takes a forged one's place.
        add("real-new").unwrap();
        assert!(names(&a).contains(&"real-new".to_string()));
        // Full of real results: a forged one is dropped, a real one evicts
        // the oldest.
        for i in 0..MAX_HELD {
            add(&format!("real-more-{i}")).unwrap();
        }
        assert!(!names(&a).iter().any(|n| n.starts_with("forged-")));
        assert_eq!(add("forged-late"), Err(Unrecorded::Full));
        assert!(!names(&a).contains(&"forged-late".to_string()));
        assert_eq!(trail.len(), MAX_HELD);
        assert!(
            !names(&a).contains(&"real-0".to_string()),
            "the oldest real one went"
        );
    }

    #[test]
    fn results_from_one_peer_past_its_burst_are_not_recorded() {
        let a = Aggregator::new();
        let trail = AuditTrail::default();
        let plugin: Arc<str> = Arc::from("p");
        let peer: IpAddr = "10.0.0.9".parse().unwrap();
        let mut dropped = 0;
        for i in 0..peers::BURST as usize + 100 {
            let r = request("CREATE", &format!("forged-{i}"), "");
            match trail.record(
                &a,
                &plugin,
                1,
                Door::Validate,
                &r,
                &denied(),
                Some(peer),
                &present,
            ) {
                Ok(()) => {}
                Err(why) => {
                    assert_eq!(why, Unrecorded::Rate);
                    dropped += 1;
                }
            }
        }
        // The burst, and what the rate refilled while the loop ran.
        let kept = trail.len();
        assert!(
            (peers::BURST as usize..peers::BURST as usize + 10).contains(&kept),
            "{kept} kept"
        );
        assert_eq!(kept + dropped, peers::BURST as usize + 100);
        assert_eq!(results(&a).len(), kept);
        // Another peer has its own bucket; an allowance from the flooding
        // one still clears (it adds nothing).
        let other: IpAddr = "10.0.0.10".parse().unwrap();
        let r = request("CREATE", "real-1", "");
        let got = trail.record(
            &a,
            &plugin,
            1,
            Door::Validate,
            &r,
            &denied(),
            Some(other),
            &present,
        );
        assert_eq!(got, Ok(()));
        let got = trail.record(
            &a,
            &plugin,
            1,
            Door::Validate,
            &r,
            &Decision::allow(),
            Some(peer),
            &present,
        );
        assert_eq!(got, Ok(()));
        assert!(!results(&a).iter().any(|(s, _)| s.name == "real-1"));
    }
}
