//! The manager's side of admission: which plugin answers a request, and
//! what the request gets when the plugin cannot (not loaded, not synced,
//! quarantined, trapped), decided by its webhook's failure policy; a plugin
//! in audit mode refuses nothing. Owns only that routing; the answers come
//! from [`crate::admission`].

use super::PluginManager;
use super::lifecycle::PluginState;
use crate::admission::audit::{self, InCache};
use crate::admission::{self, AdmissionPool, AdmissionRequest, Decision, Unanswered};
use crate::bindings::types::{FailurePolicy, Registration, Webhook};
use crate::instance::{Door, PluginInstance};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use wink_informer::{SharedInformer, SharedInformerFactory};

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

    /// `f`'s answer about `plugin`'s webhook for `door`, if it serves one,
    /// given the webhook and the failure policy in force (read in place:
    /// no copy of its rules).
    pub async fn with_webhook<R>(
        &self,
        plugin: &str,
        door: Door,
        f: impl FnOnce(&Webhook, FailurePolicy) -> R,
    ) -> Option<R> {
        let hook = admission::hook(door);
        let plugins = self.plugins.lock().await;
        let (webhooks, _) = plugins.get(plugin)?.admission.as_ref()?;
        let webhook = webhooks.iter().find(|w| w.hook == hook)?;
        Some(f(webhook, self.failure_policy_of(plugin, webhook)))
    }

    /// Ask `plugin` about an AdmissionRequest (its JSON) through `door`,
    /// sent from `peer` when known (the bound of audit mode's results).
    /// Always a decision: a plugin that cannot answer gets its webhook's
    /// failure policy (Fail when it declares none).
    pub async fn admit(
        &self,
        plugin: &str,
        door: Door,
        request: &AdmissionRequest,
        peer: Option<std::net::IpAddr>,
    ) -> Decision {
        // Only the webhook's failure policy is needed (no copy of its rules).
        let (policy, pool, audit) = {
            let plugins = self.plugins.lock().await;
            let Some(p) = plugins.get(plugin) else {
                return admission::failed(None, &Unanswered::NotLoaded(plugin.to_string()));
            };
            let hook = admission::hook(door);
            let found = p.admission.as_ref().and_then(|(hooks, pool)| {
                hooks
                    .iter()
                    .find(|w| w.hook == hook)
                    .map(|w| (self.failure_policy_of(plugin, w), pool.clone()))
            });
            let Some((policy, pool)) = found else {
                let what = if door == Door::Validate {
                    "validating"
                } else {
                    "mutating"
                };
                return admission::failed(None, &Unanswered::NoWebhook(plugin.to_string(), what));
            };
            if let PluginState::Quarantined(why) = p.lifecycle.state() {
                return admission::failed_under(
                    Some(policy),
                    &Unanswered::Quarantined(plugin.to_string(), why.clone()),
                );
            }
            if !p.instance.has_synced() {
                return admission::failed_under(Some(policy), &Unanswered::NotSynced(plugin.to_string()));
            }
            let audit = p.instance.write_scope().get().is_some_and(|a| a.audit());
            (policy, pool, audit)
        };
        let decision = match pool.ask(door, request).await {
            Ok(decision) => decision,
            Err(why) => {
                tracing::warn!(plugin, "admission request not answered: {why}");
                return admission::failed_under(Some(policy), &why);
            }
        };
        if audit {
            // `sideEffects: None`: a dry run's review leaves no result.
            let mut unrecorded = None;
            if !request.dry_run() {
                let cache = InformerCache::new(&self.factory);
                unrecorded = pool.record_audit(door, request, &decision, peer, &cache).err();
            }
            Decision {
                unrecorded,
                ..admission::audited(plugin, decision)
            }
        } else {
            decision
        }
    }
}

/// Which objects exist, for audit mode's full trail: a synced informer
/// holding the whole resource (all namespaces, or the object's; no
/// selector) is asked, whichever plugin it was started for. Each
/// resource's informer is looked up once per record.
struct InformerCache<'a> {
    factory: &'a SharedInformerFactory,
    found: Mutex<HashMap<Where, Option<Arc<SharedInformer>>>>,
}

/// A resource, and the namespace of an object of it.
type Where = (audit::Resource, Option<String>);

impl<'a> InformerCache<'a> {
    fn new(factory: &'a SharedInformerFactory) -> Self {
        InformerCache {
            factory,
            found: Mutex::default(),
        }
    }
}

impl audit::Cache for InformerCache<'_> {
    fn in_cache(&self, r: &audit::Resource, subject: &crate::reports::aggregate::Subject) -> InCache {
        let ns = subject.namespace.clone();
        let mut found = self.found.lock().unwrap_or_else(|e| e.into_inner());
        let informer = found.entry((r.clone(), ns.clone())).or_insert_with(|| {
            self.factory
                .find_complete(&r.group, &r.version, &r.resource, ns.as_deref())
                .map(|(informer, _)| informer)
                .filter(|i| i.has_synced())
        });
        let Some(informer) = informer else {
            return InCache::Unknown;
        };
        let key = match &ns {
            Some(ns) => format!("{ns}/{}", subject.name),
            None => subject.name.clone(),
        };
        // By name: a CREATE's review may carry a uid the stored object
        // does not (the simulator's dry run makes its own).
        match informer.store().get(&key) {
            Some(_) => InCache::Present,
            None => InCache::Absent,
        }
    }
}
