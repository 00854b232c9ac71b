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

pub mod audit;
mod request;
pub mod review;

pub use request::AdmissionRequest;

use crate::bindings::types::{FailurePolicy, Hook, Webhook};
use crate::call_times::CallCounts;
use crate::instance::{Door, NoAnswer, PluginInstance};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many instances answer one plugin's admission requests.
pub const POOL_SIZE: usize = 2;

/// How many instances one admission request is asked of at most, when
/// those it waited for were replaced before they could answer.
pub const ASKS: usize = 4;

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
    /// Set when this is not the plugin's answer but its failure policy's
    /// ([`failed`]).
    pub fallback: Option<Fallback>,
    /// In audit mode: set when the plugin's denial was not recorded as a
    /// policy result ([`audit`]'s bounds), and why.
    pub unrecorded: Option<audit::Unrecorded>,
}

/// Why a request got its webhook's failure policy, and which policy:
/// what the admission metrics count it as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fallback {
    /// [`Unanswered::kind`].
    pub why: &'static str,
    /// `Ignore` or `Fail`, as the webhook configuration spells it.
    pub policy: &'static str,
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
            fallback: None,
            unrecorded: None,
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
    /// The plugin has this many requests under way already.
    #[error("plugin {0} gave no answer: {1} of its requests are still under way")]
    Overloaded(String, usize),
    /// The webhook's deadline passed first.
    #[error("plugin {0} gave no answer: no answer within {1:?}")]
    Deadline(String, std::time::Duration),
}

impl Unanswered {
    /// What kind of failure this is, in a word: `unavailable` (the plugin
    /// is not loaded, not synced, quarantined, or serves no such webhook),
    /// `trapped` (its call failed: a trap, or an answer wink cannot use),
    /// `deadline` (its call ran out of time: the webhook's deadline, or
    /// the call's own), `overloaded` (too many of its requests under way),
    /// `malformed` (the request).
    pub fn kind(&self) -> &'static str {
        match self {
            Unanswered::NotLoaded(_)
            | Unanswered::NoWebhook(..)
            | Unanswered::NotSynced(_)
            | Unanswered::Quarantined(..) => "unavailable",
            Unanswered::Failed(_, why) if crate::manager::crash_kind(why) == "deadline" => "deadline",
            Unanswered::Failed(..) => "trapped",
            Unanswered::Malformed(_) => "malformed",
            Unanswered::Overloaded(..) => "overloaded",
            Unanswered::Deadline(..) => "deadline",
        }
    }
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
    failed_under(webhook.map(|w| w.failure_policy), why)
}

/// [`failed`], given the webhook's failure policy alone (`None`: no
/// webhook, so Fail).
pub fn failed_under(policy: Option<FailurePolicy>, why: &Unanswered) -> Decision {
    let ignore = policy == Some(FailurePolicy::Ignore);
    let fallback = |policy| {
        Some(Fallback {
            why: why.kind(),
            policy,
        })
    };
    if ignore {
        return Decision {
            warnings: vec![format!("wink: {why}; allowed by failurePolicy Ignore")],
            fallback: fallback("Ignore"),
            ..Decision::allow()
        };
    }
    Decision {
        allowed: false,
        code: 500,
        reason: "InternalError".into(),
        message: format!("wink: {why} (failurePolicy Fail)"),
        fallback: fallback("Fail"),
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
        unrecorded: decision.unrecorded,
        ..Decision::allow()
    }
}

/// The deadline of an admission call: the shortest webhook timeout less
/// half the margin the webhook server keeps (a fifth of the timeout, 0.2 to
/// 2 s), so the server answers with the failure policy first and the call
/// then ends, and never more than `call_deadline`. A call past it traps, so
/// no instance stays busy long after its answer stopped mattering.
pub fn call_deadline(webhooks: &[Webhook], call_deadline: std::time::Duration) -> std::time::Duration {
    use std::time::Duration;
    let shortest = webhooks
        .iter()
        .map(|w| w.timeout_seconds.max(1))
        .min()
        .unwrap_or(30);
    let timeout = Duration::from_secs(u64::from(shortest));
    let margin = (timeout / 5).clamp(Duration::from_millis(200), Duration::from_secs(2));
    call_deadline.min(timeout - margin / 2)
}

/// The instances that answer one plugin's admission requests, taken in
/// turn; one that trapped is replaced before it is asked again.
pub struct AdmissionPool {
    handler: Arc<PluginInstance>,
    /// Each call's deadline.
    deadline: std::time::Duration,
    instances: Vec<std::sync::Mutex<Arc<PluginInstance>>>,
    /// Every call of every instance, replaced ones included.
    counts: CallCounts,
    next: AtomicUsize,
    /// What audit mode would have refused (see [`audit`]).
    audit: audit::AuditTrail,
}

impl AdmissionPool {
    /// [`POOL_SIZE`] instances of `handler`'s plugin (each instantiated and
    /// initialized, off the async threads), whose calls end by
    /// [`call_deadline`] of `webhooks`.
    pub fn start(handler: &Arc<PluginInstance>, webhooks: &[Webhook]) -> anyhow::Result<Self> {
        let deadline = call_deadline(webhooks, handler.limits().call_deadline);
        let counts = CallCounts::default();
        let instances = (0..POOL_SIZE)
            .map(|_| PluginInstance::start_sharing(handler, deadline, &counts).map(std::sync::Mutex::new))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AdmissionPool {
            handler: handler.clone(),
            deadline,
            instances,
            counts,
            next: AtomicUsize::new(0),
            audit: audit::AuditTrail::default(),
        })
    }

    /// Ask the plugin about `request` (an AdmissionRequest's JSON) through
    /// `door`. A request that waited for an instance replaced meanwhile (a
    /// call of it trapped or was stopped at its deadline) is asked of the
    /// next, up to [`ASKS`] times, within the caller's deadline.
    pub async fn ask(&self, door: Door, request: &AdmissionRequest) -> Result<Decision, Unanswered> {
        let plugin = || self.handler.name().to_string();
        let mut asks = 0;
        let (verdict, changed) = loop {
            let asked = review::asked(request).map_err(Unanswered::Malformed)?;
            let slot = &self.instances[self.next.fetch_add(1, Ordering::Relaxed) % self.instances.len()];
            let instance = self.live_in(slot).await?;
            asks += 1;
            match instance.admit(door, asked).await {
                Ok(answer) => break answer,
                Err(NoAnswer::Replaced) if asks < ASKS => continue,
                Err(why) => return Err(Unanswered::Failed(plugin(), why.to_string())),
            }
        };
        let changed = changed.filter(|_| door == Door::Mutate);
        review::decision(verdict, changed, request).map_err(|why| Unanswered::Failed(plugin(), why))
    }

    /// The instance in `slot`, a fresh one in its place when it crashed.
    async fn live_in(
        &self,
        slot: &std::sync::Mutex<Arc<PluginInstance>>,
    ) -> Result<Arc<PluginInstance>, Unanswered> {
        let current = slot.lock().unwrap().clone();
        if !current.is_crashed() {
            return Ok(current);
        }
        let plugin = || self.handler.name().to_string();
        let handler = self.handler.clone();
        let (deadline, counts) = (self.deadline, self.counts.clone());
        let fresh =
            tokio::task::spawn_blocking(move || PluginInstance::start_sharing(&handler, deadline, &counts))
                .await
                .map_err(|e| Unanswered::Failed(plugin(), e.to_string()))?
                .map_err(|e| Unanswered::Failed(plugin(), e.to_string()))?;
        let mut slot = slot.lock().unwrap();
        // Another request may have replaced it first: the first fresh one stays.
        if slot.is_crashed() {
            *slot = fresh.clone();
            return Ok(fresh);
        }
        Ok(slot.clone())
    }
}

impl AdmissionPool {
    /// The calls its instances made, and their durations.
    pub fn counts(&self) -> &CallCounts {
        &self.counts
    }

    /// In audit mode: record `decision` (the plugin's own, before audit mode
    /// allowed it) as the reviewed object's policy result, within the
    /// bounds of [`audit`]: `peer` is the address the review came from,
    /// `cache` says which objects exist. A denial not recorded says why.
    pub fn record_audit(
        &self,
        door: Door,
        request: &AdmissionRequest,
        decision: &Decision,
        peer: Option<std::net::IpAddr>,
        cache: &dyn audit::Cache,
    ) -> Result<(), audit::Unrecorded> {
        let Some(aggregator) = self.handler.report_sink() else {
            return Ok(());
        };
        let plugin: Arc<str> = Arc::from(self.handler.name());
        let instance = self.handler.id();
        self.audit.record(
            &aggregator,
            &plugin,
            instance,
            door,
            request,
            decision,
            peer,
            cache,
        )
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
        let said = |d: &Decision| d.fallback.map(|f| (f.why, f.policy));
        assert_eq!(said(&fail), Some(("unavailable", "Fail")));
        assert_eq!(said(&ignore), Some(("unavailable", "Ignore")));
        assert_eq!(said(&Decision::allow()), None, "the plugin's own answer");
    }

    #[test]
    fn failures_are_named_by_kind() {
        let p = || "p".to_string();
        let kinds = [
            (Unanswered::NotSynced(p()), "unavailable"),
            (
                Unanswered::Failed(p(), "wasm trap: wasm `unreachable` instruction executed".into()),
                "trapped",
            ),
            (Unanswered::Failed(p(), "wasm trap: interrupt".into()), "deadline"),
            (
                Unanswered::Deadline(p(), std::time::Duration::from_secs(1)),
                "deadline",
            ),
            (Unanswered::Overloaded(p(), 32), "overloaded"),
            (Unanswered::Malformed("x".into()), "malformed"),
        ];
        for (why, kind) in kinds {
            assert_eq!(why.kind(), kind, "{why}");
        }
        assert_eq!(
            Unanswered::Overloaded(p(), 32).to_string(),
            "plugin p gave no answer: 32 of its requests are still under way"
        );
    }

    #[test]
    fn an_admission_call_ends_before_the_shortest_webhook_timeout() {
        let mut short = webhook(FailurePolicy::Fail);
        short.timeout_seconds = 2;
        let long = webhook(FailurePolicy::Fail);
        let limit = std::time::Duration::from_secs(10);
        assert_eq!(call_deadline(&[long.clone(), short], limit).as_millis(), 1800);
        assert_eq!(
            call_deadline(&[long], std::time::Duration::from_secs(1)).as_millis(),
            1000
        );
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
