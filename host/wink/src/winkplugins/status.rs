//! A WinkPlugin's status: what one pass over its spec found (pulled,
//! loaded, or why not), joined with what the plugin manager says of the
//! plugin now (synced, quarantined), as Kubernetes conditions: each with
//! its status, a reason in CamelCase, a message, and the time it last
//! changed (kept from the object's status while the condition's status
//! stays). Written through the status subresource with a merge patch, by
//! the leader only.

use serde_json::{Value, json};
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
    /// The manifest digest the source is pinned to.
    pub digest: Option<String>,
    pub component_digest: Option<String>,
    /// The component's language (`rust`, `python`, `javascript`,
    /// `unknown`), from its `producers` metadata.
    pub language: Option<String>,
    /// The grant's mode.
    pub mode: String,
    /// `Pulled` and `Loaded` (or, for a spec that does not read, why).
    pub conditions: Vec<Condition>,
    pub last_error: Option<String>,
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

/// Whether `new` says something `current` does not (times aside).
pub fn differs(new: &Value, current: Option<&Value>) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(cs) = v.get_mut("conditions").and_then(Value::as_array_mut) {
            for c in cs {
                if let Some(o) = c.as_object_mut() {
                    o.remove("lastTransitionTime");
                }
            }
        }
        v
    };
    current.is_none_or(|c| strip(c) != strip(new))
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
}
