//! Admission: a plugin's answers to the API server's admission requests,
//! for the webhooks its registration declares.
//!
//! Calls go to instances of their own ([`AdmissionPool`]: a few instances of
//! the plugin beside its event-handling instance), so an admission answer
//! never waits for an event call and several requests are answered at once.
//! They query the same informer stores as the handler (no second cache, no
//! request to the API server) and may not write. Owns the pool, the
//! translation of requests and answers ([`review`]), and what a request gets
//! when the plugin cannot answer: its webhook's failure policy ([`failed`]),
//! and audit mode's allow-with-warning ([`audited`]). It never serves HTTP
//! (the daemon does) and never decides which plugins run (the manager does).

pub mod review;

use crate::bindings::types::{FailurePolicy, Hook, Webhook};
use crate::instance::{Door, PluginInstance};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many instances answer one plugin's admission requests.
pub const POOL_SIZE: usize = 2;

/// What the API server is told about one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    /// The HTTP code of a denial (the Status's `code`).
    pub code: u16,
    pub reason: String,
    pub message: String,
    pub warnings: Vec<String>,
    pub audit_annotations: Vec<(String, String)>,
    /// A mutation: the JSON Patch (RFC 6902) to apply.
    pub patch: Option<serde_json::Value>,
}

impl Decision {
    /// Allowed, with nothing to say.
    pub fn allow() -> Decision {
        Decision {
            allowed: true,
            code: 200,
            reason: String::new(),
            message: String::new(),
            warnings: Vec::new(),
            audit_annotations: Vec::new(),
            patch: None,
        }
    }
}

/// Why a plugin gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unanswered {
    #[error("no plugin {0} is loaded")]
    NotLoaded(String),
    #[error("plugin {0} declares no {1} webhook")]
    NoWebhook(String, &'static str),
    #[error("plugin {0} has not synced its cache yet")]
    NotSynced(String),
    #[error("plugin {0} is quarantined: {1}")]
    Quarantined(String, String),
    #[error("plugin {0} gave no answer: {1}")]
    Failed(String, String),
    #[error("the admission request is malformed: {0}")]
    Malformed(String),
}

/// The hook a door answers for.
pub fn hook(door: Door) -> Hook {
    match door {
        Door::Validate => Hook::Validate,
        Door::Mutate => Hook::Mutate,
    }
}

/// What `why` gets under `webhook`'s failure policy: Fail denies, naming
/// wink and the plugin; Ignore allows, with a warning.
pub fn failed(webhook: Option<&Webhook>, why: &Unanswered) -> Decision {
    let ignore = webhook.is_some_and(|w| w.failure_policy == FailurePolicy::Ignore);
    if ignore {
        return Decision {
            warnings: vec![format!("wink: {why}; allowed by failurePolicy Ignore")],
            ..Decision::allow()
        };
    }
    Decision {
        allowed: false,
        code: 500,
        reason: "InternalError".into(),
        message: format!("wink: {why} (failurePolicy Fail)"),
        ..Decision::allow()
    }
}

/// In audit mode nothing is refused: a denial becomes a warning, and a
/// mutation is not applied.
pub fn audited(plugin: &str, mut decision: Decision) -> Decision {
    if !decision.allowed {
        decision.warnings.push(format!(
            "wink audit: plugin {plugin} would deny this request: {}",
            decision.message
        ));
    }
    if decision.patch.is_some() {
        decision
            .warnings
            .push(format!("wink audit: plugin {plugin} would change this object"));
    }
    Decision {
        warnings: decision.warnings,
        audit_annotations: decision.audit_annotations,
        ..Decision::allow()
    }
}

/// The instances that answer one plugin's admission requests, taken in
/// turn; one that trapped is replaced before it is asked again.
pub struct AdmissionPool {
    handler: Arc<PluginInstance>,
    instances: Vec<std::sync::Mutex<Arc<PluginInstance>>>,
    next: AtomicUsize,
}

impl AdmissionPool {
    /// [`POOL_SIZE`] instances of `handler`'s plugin (each instantiated and
    /// initialized, off the async threads).
    pub fn start(handler: &Arc<PluginInstance>) -> anyhow::Result<Self> {
        let instances = (0..POOL_SIZE)
            .map(|_| PluginInstance::start_sharing(handler).map(std::sync::Mutex::new))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AdmissionPool {
            handler: handler.clone(),
            instances,
            next: AtomicUsize::new(0),
        })
    }

    /// Ask the plugin about `request` (an AdmissionRequest's JSON) through
    /// `door`.
    pub async fn ask(&self, door: Door, request: &serde_json::Value) -> Result<Decision, Unanswered> {
        let plugin = self.handler.name().to_string();
        let asked = review::asked(request).map_err(Unanswered::Malformed)?;
        let slot = &self.instances[self.next.fetch_add(1, Ordering::Relaxed) % self.instances.len()];
        let instance = {
            let current = slot.lock().unwrap().clone();
            if current.is_crashed() {
                let handler = self.handler.clone();
                let fresh = tokio::task::spawn_blocking(move || PluginInstance::start_sharing(&handler))
                    .await
                    .map_err(|e| Unanswered::Failed(plugin.clone(), e.to_string()))?
                    .map_err(|e| Unanswered::Failed(plugin.clone(), e.to_string()))?;
                *slot.lock().unwrap() = fresh.clone();
                fresh
            } else {
                current
            }
        };
        let (verdict, changed) = instance
            .admit(door, asked)
            .await
            .map_err(|why| Unanswered::Failed(plugin.clone(), why))?;
        let changed = changed.filter(|_| door == Door::Mutate);
        review::decision(verdict, changed, request).map_err(|why| Unanswered::Failed(plugin, why))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::types::{MatchPolicy, Scope};

    fn webhook(policy: FailurePolicy) -> Webhook {
        Webhook {
            hook: Hook::Validate,
            rules: vec![crate::bindings::types::AdmissionRule {
                operations: vec![],
                api_groups: vec![],
                api_versions: vec![],
                resources: vec![],
                scope: Scope::Any,
            }],
            namespace_selector: None,
            object_selector: None,
            failure_policy: policy,
            timeout_seconds: 5,
            match_policy: MatchPolicy::Equivalent,
        }
    }

    #[test]
    fn failure_policy_fail_denies_naming_wink_and_ignore_allows_with_a_warning() {
        let why = Unanswered::Quarantined("p".into(), "crashed".into());
        let fail = failed(Some(&webhook(FailurePolicy::Fail)), &why);
        assert!(!fail.allowed);
        assert!(
            fail.message.starts_with("wink: plugin p is quarantined"),
            "{}",
            fail.message
        );
        let ignore = failed(Some(&webhook(FailurePolicy::Ignore)), &why);
        assert!(ignore.allowed);
        assert!(ignore.warnings[0].contains("failurePolicy Ignore"));
        assert!(!failed(None, &why).allowed, "no webhook: Fail");
    }

    #[test]
    fn audit_mode_allows_and_says_what_would_have_happened() {
        let denied = Decision {
            allowed: false,
            code: 403,
            message: "no team".into(),
            ..Decision::allow()
        };
        let d = audited("p", denied);
        assert!(d.allowed);
        assert!(d.warnings[0].contains("would deny this request: no team"));
        let mutated = Decision {
            patch: Some(serde_json::json!([])),
            ..Decision::allow()
        };
        let d = audited("p", mutated);
        assert!(d.patch.is_none() && d.warnings[0].contains("would change"));
    }
}
