//! A WinkPlugin's status: what one pass over its spec found (pulled,
//! loaded, or why not), joined with what the plugin manager says of the
//! plugin now (synced, quarantined), as Kubernetes conditions: each with
//! its status, a reason in CamelCase, a message, and the time it last
//! changed (kept from the object's status while the condition's status
//! stays). Written through the status subresource with a merge patch, by
//! the leader only; the patch sets to null every field the status computed
//! leaves out ([`patch`]), so the object's status is exactly that one. A
//! change beyond the call counts is written at once ([`due`]); the counts
//! alone wait [`COUNTERS_REFRESH`] after the last write.

use super::COUNTERS_REFRESH;
use serde_json::{Map, Value, json};
use std::time::Duration;
use wink_runtime::manager::PluginState;

/// The longest message or last error written.
pub const MAX_MESSAGE: usize = 1024;

/// One condition.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub kind: &'static str,
    pub ok: Option<bool>,
    pub reason: String,
    pub message: String,
}

impl Condition {
    pub fn new(kind: &'static str, ok: Option<bool>, reason: &str, message: impl Into<String>) -> Self {
        let mut message: String = message.into();
        if message.len() > MAX_MESSAGE {
            let mut end = MAX_MESSAGE;
            while !message.is_char_boundary(end) {
                end -= 1;
            }
            message.truncate(end);
        }
        Condition {
            kind,
            ok,
            reason: reason.to_string(),
            message,
        }
    }

    fn status(&self) -> &'static str {
        match self.ok {
            Some(true) => "True",
            Some(false) => "False",
            None => "Unknown",
        }
    }
}

/// What the last pass over a WinkPlugin's spec found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// The generation the pass read.
    pub generation: i64,
    /// The source, as the SOURCE column shows it.
    pub source: String,
    /// The manifest digest of the version that runs: the one this pass
    /// pinned when it ran the plugin, else the one still running, if any.
    pub digest: Option<String>,
    pub component_digest: Option<String>,
    /// The component's language (`rust`, `python`, `javascript`,
    /// `unknown`), from its `producers` metadata.
    pub language: Option<String>,
    /// The grant's mode.
    pub mode: String,
    /// `Pulled`, `Verified` (under a cosign key) and `Loaded` (or, for a
    /// spec that does not read, why).
    pub conditions: Vec<Condition>,
    pub last_error: Option<String>,
}

/// The version of a plugin that runs: what a WinkPlugin's `digest`,
/// `componentDigest` and `language` describe, whatever a later pass found.
#[derive(Debug, Clone, PartialEq)]
pub struct Artifact {
    digest: Option<String>,
    component_digest: Option<String>,
    language: Option<String>,
}

impl Artifact {
    /// What the pass `o`, which ran the plugin, ran.
    pub fn of(o: &Outcome) -> Artifact {
        Artifact {
            digest: o.digest.clone(),
            component_digest: o.component_digest.clone(),
            language: o.language.clone(),
        }
    }

    /// Make the failed pass `o` describe this running version, not what it
    /// pulled but could not run (its conditions say what that was).
    pub fn describe(&self, o: &mut Outcome) {
        o.digest = self.digest.clone();
        o.component_digest = self.component_digest.clone();
        o.language = self.language.clone();
    }
}

/// What the manager says of the plugin now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Running {
    pub synced: bool,
    pub quarantined: Option<String>,
    pub compiler: String,
    pub calls: u64,
    pub crashes: u64,
}

impl Running {
    pub fn of(s: &wink_runtime::manager::PluginStatus) -> Running {
        Running {
            synced: s.synced,
            quarantined: match &s.state {
                PluginState::Quarantined(why) => Some(why.clone()),
                _ => None,
            },
            compiler: format!("{:?}", s.compiler).to_lowercase(),
            calls: s.calls,
            crashes: s.crashes,
        }
    }
}

/// Every condition: the pass's, then `Synced`, `Quarantined` and `Ready`.
pub fn conditions(outcome: &Outcome, running: Option<&Running>) -> Vec<Condition> {
    let mut all = outcome.conditions.clone();
    let loaded = all.iter().any(|c| c.kind == "Loaded" && c.ok == Some(true));
    let synced = match running {
        Some(r) if r.synced => Condition::new(
            "Synced",
            Some(true),
            "CachesSynced",
            "its informers delivered their initial lists",
        ),
        Some(_) => Condition::new("Synced", Some(false), "Syncing", "its informers are listing"),
        None => Condition::new("Synced", Some(false), "NotLoaded", "the plugin does not run"),
    };
    let quarantined = match running.and_then(|r| r.quarantined.as_ref()) {
        Some(why) => Condition::new("Quarantined", Some(true), "CrashedTooOften", why.clone()),
        None => Condition::new("Quarantined", Some(false), "Running", "not quarantined"),
    };
    let ready = match (all.iter().find(|c| c.ok != Some(true)), running) {
        (Some(bad), _) => Condition::new("Ready", Some(false), &bad.reason, bad.message.clone()),
        (None, Some(r)) if loaded && r.synced && r.quarantined.is_none() => {
            Condition::new("Ready", Some(true), "Running", "loaded, synced and taking events")
        }
        (None, Some(r)) if r.quarantined.is_some() => {
            Condition::new("Ready", Some(false), "Quarantined", quarantined.message.clone())
        }
        (None, _) => Condition::new(
            "Ready",
            Some(false),
            synced.reason.as_str(),
            synced.message.clone(),
        ),
    };
    all.extend([synced, quarantined, ready]);
    all
}

fn now() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// The status to write, given the object's current status (for the times
/// of conditions that did not change).
pub fn render(outcome: &Outcome, running: Option<&Running>, current: Option<&Value>) -> Value {
    let old = |kind: &str| {
        current
            .and_then(|s| s.get("conditions"))
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| c["type"] == kind))
    };
    let conditions: Vec<Value> = conditions(outcome, running)
        .iter()
        .map(|c| {
            let since = old(c.kind)
                .filter(|o| o["status"] == c.status())
                .and_then(|o| o["lastTransitionTime"].as_str().map(str::to_string))
                .unwrap_or_else(now);
            json!({
                "type": c.kind,
                "status": c.status(),
                "observedGeneration": outcome.generation,
                "reason": c.reason,
                "message": c.message,
                "lastTransitionTime": since,
            })
        })
        .collect();
    let ready = conditions
        .iter()
        .find(|c| c["type"] == "Ready")
        .map(|c| c["status"].clone())
        .unwrap_or(Value::Null);
    let mut status = json!({
        "observedGeneration": outcome.generation,
        "source": outcome.source,
        "mode": outcome.mode,
        "ready": ready,
        "conditions": conditions,
    });
    let mut set = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            status[k] = v;
        }
    };
    set("digest", outcome.digest.clone().map(Value::from));
    set(
        "componentDigest",
        outcome.component_digest.clone().map(Value::from),
    );
    set("language", outcome.language.clone().map(Value::from));
    set("lastError", outcome.last_error.clone().map(Value::from));
    if let Some(r) = running {
        set("compiler", Some(r.compiler.clone().into()));
        set("calls", Some(r.calls.into()));
        set("crashes", Some(r.crashes.into()));
    }
    status
}

/// The fields [`render`] may leave out.
pub const OPTIONAL: [&str; 7] = [
    "digest",
    "componentDigest",
    "language",
    "lastError",
    "compiler",
    "calls",
    "crashes",
];

/// The fields that count what the plugin did.
pub const COUNTS: [&str; 2] = ["calls", "crashes"];

/// `status` without the times of its conditions and, unless `counts`,
/// without [`COUNTS`].
fn comparable(status: &Value, counts: bool) -> Value {
    let mut v = status.clone();
    if let Some(cs) = v.get_mut("conditions").and_then(Value::as_array_mut) {
        for c in cs {
            if let Some(o) = c.as_object_mut() {
                o.remove("lastTransitionTime");
            }
        }
    }
    if !counts && let Some(o) = v.as_object_mut() {
        for k in COUNTS {
            o.remove(k);
        }
    }
    v
}

/// Whether `new` says something `current` does not (times aside).
pub fn differs(new: &Value, current: Option<&Value>) -> bool {
    current.is_none_or(|c| comparable(c, true) != comparable(new, true))
}

/// Whether `new` says something `current` does not, times and
/// [`COUNTS`] aside.
pub fn differs_beyond_counts(new: &Value, current: Option<&Value>) -> bool {
    current.is_none_or(|c| comparable(c, false) != comparable(new, false))
}

/// Whether to write `new` now, given the object's status `current`, the
/// last status this replica wrote, `written`, and the time since it wrote
/// it, `since`: not when either already says all of it; at once when both
/// miss something beyond the counts; when only the counts are new, once
/// [`COUNTERS_REFRESH`] has passed since the last write (or none was).
pub fn due(new: &Value, current: Option<&Value>, written: Option<&Value>, since: Option<Duration>) -> bool {
    if !differs(new, current) || !differs(new, written) {
        return false;
    }
    if differs_beyond_counts(new, current) && differs_beyond_counts(new, written) {
        return true;
    }
    since.is_none_or(|d| d >= COUNTERS_REFRESH)
}

/// The merge patch that makes the object's status `new`: each field
/// `current` or [`OPTIONAL`] has and `new` does not is set to null.
pub fn patch(new: &Value, current: Option<&Value>) -> Value {
    let mut status: Map<String, Value> = new.as_object().cloned().unwrap_or_default();
    let old = current
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|o| o.keys());
    for k in old.map(String::as_str).chain(OPTIONAL) {
        if !status.contains_key(k) {
            status.insert(k.to_string(), Value::Null);
        }
    }
    json!({"status": status})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_follows_the_first_false_condition_then_the_running_plugin() {
        let mut outcome = Outcome {
            conditions: vec![Condition::new(
                "Pulled",
                Some(false),
                "DigestMismatch",
                "bytes do not match",
            )],
            ..Outcome::default()
        };
        let ready = |o: &Outcome, r: Option<&Running>| {
            conditions(o, r).into_iter().find(|c| c.kind == "Ready").unwrap()
        };
        assert_eq!(ready(&outcome, None).reason, "DigestMismatch");
        outcome.conditions = vec![
            Condition::new("Pulled", Some(true), "Pulled", ""),
            Condition::new("Loaded", Some(true), "Loaded", ""),
        ];
        let mut running = Running::default();
        assert_eq!(ready(&outcome, Some(&running)).ok, Some(false));
        running.synced = true;
        assert_eq!(ready(&outcome, Some(&running)).ok, Some(true));
        running.quarantined = Some("trapped".into());
        assert_eq!(ready(&outcome, Some(&running)).reason, "Quarantined");
        outcome.language = Some("rust".into());
        let status = render(&outcome, Some(&running), None);
        assert_eq!(status["ready"], "False");
        assert_eq!(status["language"], "rust");
        assert!(!differs(
            &status,
            Some(&render(&outcome, Some(&running), Some(&status)))
        ));
        assert!(differs(&status, None));
    }

    /// RFC 7386, as the API server applies a merge patch.
    fn merge(target: &mut Value, patch: &Value) {
        let Some(p) = patch.as_object() else {
            *target = patch.clone();
            return;
        };
        if !target.is_object() {
            *target = json!({});
        }
        let t = target.as_object_mut().unwrap();
        for (k, v) in p {
            match v {
                Value::Null => {
                    t.remove(k);
                }
                _ => merge(t.entry(k.clone()).or_insert(Value::Null), v),
            }
        }
    }

    fn loaded() -> Outcome {
        Outcome {
            generation: 1,
            digest: Some("sha256:a".into()),
            component_digest: Some("sha256:b".into()),
            language: Some("rust".into()),
            conditions: vec![
                Condition::new("Pulled", Some(true), "Pulled", ""),
                Condition::new("Loaded", Some(true), "Loaded", ""),
            ],
            ..Outcome::default()
        }
    }

    #[test]
    fn the_patch_leaves_the_object_with_exactly_the_status_computed() {
        let failed = Outcome {
            conditions: vec![Condition::new("Pulled", Some(false), "NotFound", "gone")],
            last_error: Some("gone".into()),
            ..Outcome::default()
        };
        let running = Running {
            synced: true,
            calls: 3,
            ..Running::default()
        };
        let mut object = json!({"status": render(&loaded(), Some(&running), None)});
        object["status"]["writtenByAnOlderWink"] = json!(true);
        for (outcome, run) in [
            (&failed, None),
            (&loaded(), Some(&running)),
            (&failed, Some(&running)),
        ] {
            let new = render(outcome, run, Some(&object["status"]));
            let p = patch(&new, Some(&object["status"]));
            merge(&mut object, &p);
            assert_eq!(object["status"], new);
        }
        assert_eq!(object["status"]["lastError"], "gone");
        assert!(object["status"].get("digest").is_none());
        // Fields that the object's status (as read) lacks are cleared too.
        let new = render(&loaded(), None, None);
        let p = patch(&new, None);
        assert_eq!(p["status"]["lastError"], Value::Null);
        assert_eq!(p["status"]["calls"], Value::Null);
    }

    #[test]
    fn counts_alone_wait_their_period_while_other_changes_are_due_at_once() {
        let mut running = Running {
            synced: true,
            calls: 1,
            ..Running::default()
        };
        let a = render(&loaded(), Some(&running), None);
        let soon = Some(Duration::from_secs(1));
        assert!(due(&a, None, None, None));
        assert!(!due(&a, Some(&a), Some(&a), Some(COUNTERS_REFRESH)));
        running.calls = 2;
        running.crashes = 1;
        let counted = render(&loaded(), Some(&running), Some(&a));
        assert!(!due(&counted, Some(&a), Some(&a), soon));
        assert!(due(&counted, Some(&a), Some(&a), Some(COUNTERS_REFRESH)));
        assert!(due(&counted, Some(&a), None, None));
        running.quarantined = Some("trapped".into());
        let quarantined = render(&loaded(), Some(&running), Some(&a));
        assert!(due(&quarantined, Some(&a), Some(&a), Some(Duration::ZERO)));
        // Written, not read back yet: not written again.
        assert!(!due(
            &quarantined,
            Some(&a),
            Some(&quarantined),
            Some(Duration::ZERO)
        ));
        let mut edited = loaded();
        edited.generation = 2;
        let edited = render(&edited, Some(&running), Some(&quarantined));
        assert!(due(&edited, Some(&quarantined), Some(&quarantined), soon));
    }
}
