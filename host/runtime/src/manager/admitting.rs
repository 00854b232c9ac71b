//! The manager's side of admission: which plugin answers a request, and
//! what the request gets when the plugin cannot (not loaded, not synced,
//! quarantined, trapped), decided by its webhook's failure policy; a plugin
//! in audit mode refuses nothing. Owns only that routing; the answers come
//! from [`crate::admission`].

use super::PluginManager;
use super::lifecycle::PluginState;
use crate::admission::{self, AdmissionPool, AdmissionRequest, Decision, Unanswered};
use crate::bindings::types::{Registration, Webhook};
use crate::instance::{Door, PluginInstance};
use std::sync::Arc;

/// A plugin's calls: its instance's, and its admission pool's (since it
/// was loaded, whichever instance of the pool made them).
pub(super) fn calls(p: &super::LoadedPlugin) -> u64 {
    let pool = p.admission.as_ref().map_or(0, |(_, pool)| pool.counts().calls());
    p.instance.calls() + pool
}

/// The durations of the calls [`calls`] counts.
pub(super) fn call_times(p: &super::LoadedPlugin) -> crate::call_times::CallTimes {
    match &p.admission {
        Some((_, pool)) => p.instance.handler_time().merged(&pool.counts().times),
        None => p.instance.handler_time().clone(),
    }
}

/// The webhooks one plugin serves.
#[derive(Debug, Clone)]
pub struct PluginWebhooks {
    pub plugin: String,
    pub webhooks: Vec<Webhook>,
}

impl PluginManager {
    /// The instances answering `instance`'s webhooks, when it declares any.
    pub(super) async fn admission_pool(
        &self,
        instance: &Arc<PluginInstance>,
        registration: &Registration,
    ) -> anyhow::Result<Option<(Vec<Webhook>, Arc<AdmissionPool>)>> {
        if registration.admission.is_empty() {
            return Ok(None);
        }
        let handler = instance.clone();
        let webhooks = registration.admission.clone();
        let pool = tokio::task::spawn_blocking(move || AdmissionPool::start(&handler, &webhooks)).await??;
        Ok(Some((registration.admission.clone(), Arc::new(pool))))
    }

    /// Every plugin's webhooks (for the webhook configurations), narrowed
    /// to its scope.
    pub async fn webhooks(&self) -> Vec<PluginWebhooks> {
        let plugins = self.plugins.lock().await;
        plugins
            .iter()
            .filter_map(|(name, p)| {
                let scope = p.instance.cache_scope().scope().get();
                p.admission.as_ref().map(|(webhooks, _)| PluginWebhooks {
                    plugin: name.clone(),
                    webhooks: webhooks
                        .iter()
                        .map(|w| self.with_given_policy(name, w.clone()))
                        .map(|w| match &scope {
                            Some(s) => crate::scope::webhook::narrow(w, s),
                            None => w,
                        })
                        .collect(),
                })
            })
            .collect()
    }

    /// `plugin`'s webhook for `door`, if it serves one (one lookup, no copy
    /// of the other plugins' webhooks).
    pub async fn webhook(&self, plugin: &str, door: Door) -> Option<Webhook> {
        let hook = admission::hook(door);
        let plugins = self.plugins.lock().await;
        let (webhooks, _) = plugins.get(plugin)?.admission.as_ref()?;
        let found = webhooks.iter().find(|w| w.hook == hook).cloned();
        found.map(|w| self.with_given_policy(plugin, w))
    }

    /// Ask `plugin` about an AdmissionRequest (its JSON) through `door`.
    /// Always a decision: a plugin that cannot answer gets its webhook's
    /// failure policy (Fail when it declares none).
    pub async fn admit(&self, plugin: &str, door: Door, request: &AdmissionRequest) -> Decision {
        let (webhook, pool, audit) = {
            let plugins = self.plugins.lock().await;
            let Some(p) = plugins.get(plugin) else {
                return admission::failed(None, &Unanswered::NotLoaded(plugin.to_string()));
            };
            let hook = admission::hook(door);
            let found = p.admission.as_ref().and_then(|(hooks, pool)| {
                hooks
                    .iter()
                    .find(|w| w.hook == hook)
                    .map(|w| (self.with_given_policy(plugin, w.clone()), pool.clone()))
            });
            let Some((webhook, pool)) = found else {
                let what = if door == Door::Validate {
                    "validating"
                } else {
                    "mutating"
                };
                return admission::failed(None, &Unanswered::NoWebhook(plugin.to_string(), what));
            };
            if let PluginState::Quarantined(why) = p.lifecycle.state() {
                return admission::failed(
                    Some(&webhook),
                    &Unanswered::Quarantined(plugin.to_string(), why.clone()),
                );
            }
            if !p.instance.has_synced() {
                return admission::failed(Some(&webhook), &Unanswered::NotSynced(plugin.to_string()));
            }
            let audit = p.instance.write_scope().get().is_some_and(|a| a.audit());
            (webhook, pool, audit)
        };
        let decision = match pool.ask(door, request).await {
            Ok(decision) => decision,
            Err(why) => {
                tracing::warn!(plugin, "admission request not answered: {why}");
                return admission::failed(Some(&webhook), &why);
            }
        };
        if audit {
            // `sideEffects: None`: a dry run's review leaves no result.
            if !request.dry_run() {
                pool.record_audit(door, request, &decision);
            }
            admission::audited(plugin, decision)
        } else {
            decision
        }
    }
}
