//! The team policy as the team plugins' controller follows it: a changed
//! policy passes every NamespacedWinkPlugin over again, and a namespace
//! moved in or out of `teams.namespaceSelector` (relabelled, or come)
//! passes that namespace's plugins over again, so a waiting one loads and
//! a running one is unloaded (`Loaded=False`, reason `NotAllowed`) without
//! a restart. Namespace labels are read from the plugin manager's shared
//! Namespace informer (the one the scopes' namespace selectors read),
//! started when a policy first has a selector; each tick compares, for
//! every team plugin, the decision on its namespace it was last passed
//! under with the one the labels give now.
//!
//! Owns that following and the team plugins' part of the controller's
//! preparation (the policy, the namespace's labels, the cap).

use super::namespaced::{self, Refused};
use super::{Controller, Objects};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use wink_informer::Store;
use wink_informer::repeated::short_anyhow;
use wink_runtime::grants::TeamPolicy;

/// How long a pass waits for the Namespace informer's first sync (once);
/// past it namespaces are decided by name until the labels come, and the
/// ticks then pass over again the plugins whose decision changed.
pub const NAMESPACES_WAIT: Duration = Duration::from_secs(10);
/// How long after a failed start of the Namespace informer it is tried again.
const NAMESPACES_RETRY: Duration = Duration::from_secs(5);

/// What the team plugins' controller keeps of the team policy.
#[derive(Default)]
pub(super) struct Followed {
    /// The policy the team plugins were last passed under.
    policy: Option<Option<TeamPolicy>>,
    /// The Namespace informer's store: started (a receiver), synced (Some).
    namespaces: Option<watch::Receiver<Option<Store>>>,
    /// Per team plugin: its namespace, and whether the policy let that
    /// namespace run team plugins when the plugin was last passed over.
    decided: BTreeMap<String, (String, bool)>,
}

impl Controller {
    /// Each tick, for team plugins: pass them over again where the policy
    /// or the labels of their namespace changed what they may do.
    pub(super) async fn follow_team_policy(&mut self) {
        if !matches!(self.objects, Objects::Team(_)) {
            return;
        }
        self.policy_changed();
        self.team_namespaces().await;
        self.namespaces_moved();
    }

    /// When the operator's team policy changed, pass over every team
    /// plugin again (its grant is recomputed, or it is unloaded).
    fn policy_changed(&mut self) {
        let now = self.cx.manager.grants().teams.clone();
        if self.team.policy.as_ref() == Some(&now) {
            return;
        }
        if self.team.policy.is_some() {
            tracing::info!("the team policy changed: every NamespacedWinkPlugin is passed over again");
            for e in self.entries.values_mut() {
                e.retry_at = Some(Instant::now());
            }
        }
        self.team.policy = Some(now);
    }

    /// Pass over again the team plugins whose namespace the policy's
    /// `namespaceSelector` now decides otherwise; one whose pull is under
    /// way is looked at again on a tick after its pull's end.
    fn namespaces_moved(&mut self) {
        let grants = self.cx.manager.grants();
        let Some(policy) = grants.teams.as_ref() else {
            return;
        };
        let (entries, in_flight) = (&self.entries, &self.in_flight);
        self.team
            .decided
            .retain(|n, _| entries.contains_key(n) || in_flight.contains_key(n));
        if !policy.reads_namespace_labels() {
            return;
        }
        let moved: Vec<String> = self
            .team
            .decided
            .iter()
            .filter(|(name, _)| !self.in_flight.contains_key(*name))
            .filter(|(_, (ns, was))| policy.allows_namespace(ns, &self.namespace_labels(ns)) != *was)
            .map(|(name, _)| name.clone())
            .collect();
        for name in moved {
            if let Some(e) = self.entries.get_mut(&name) {
                tracing::info!(winkplugin = %name, "its namespace moved in or out of teams.namespaceSelector: passed over again");
                e.retry_at = Some(Instant::now());
            }
        }
    }

    /// Start the Namespace informer when the team policy reads namespace
    /// labels, and wait for its first sync (at most [`NAMESPACES_WAIT`], once).
    pub(super) async fn team_namespaces(&mut self) {
        if !matches!(self.objects, Objects::Team(_)) || self.team.namespaces.is_some() {
            return;
        }
        let grants = self.cx.manager.grants();
        if !grants.teams.as_ref().is_some_and(|p| p.reads_namespace_labels()) {
            return;
        }
        let (tx, mut rx) = watch::channel(None);
        let manager = self.cx.manager.clone();
        tokio::spawn(async move {
            loop {
                match manager.namespace_store().await {
                    Ok(store) => {
                        let _ = tx.send(Some(store));
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(
                            "teams.namespaceSelector: the Namespace informer did not start ({}); tried again in {NAMESPACES_RETRY:?}",
                            short_anyhow(&e)
                        );
                        tokio::time::sleep(NAMESPACES_RETRY).await;
                    }
                }
            }
        });
        let synced = tokio::time::timeout(NAMESPACES_WAIT, rx.wait_for(Option::is_some))
            .await
            .is_ok_and(|r| r.is_ok());
        if !synced {
            tracing::warn!(
                "teams.namespaceSelector: the Namespace informer has not synced in {NAMESPACES_WAIT:?} (may wink list and watch Namespaces? `wink manifests --winkplugins` grants it); namespaces are decided by name until it has"
            );
        }
        self.team.namespaces = Some(rx);
    }

    /// The labels of the namespace `ns` as the Namespace informer has them
    /// (none while it has not synced or the namespace is not known).
    fn namespace_labels(&self, ns: &str) -> BTreeMap<String, String> {
        let store = self.team.namespaces.as_ref().and_then(|rx| rx.borrow().clone());
        store
            .and_then(|s| s.get(ns))
            .map(|o| o.labels().map(|(k, v)| (k.to_string(), v.to_string())).collect())
            .unwrap_or_default()
    }

    /// The WinkPlugin the NamespacedWinkPlugin `object` runs as under the
    /// team policy, its namespace's labels and its team's cap; or why it
    /// may not run. The decision on its namespace is kept for the ticks.
    pub(super) fn team_plugin(&mut self, object: &Value) -> Result<Value, Refused> {
        let grants = self.cx.manager.grants();
        let policy = grants.teams.as_ref();
        let ns = object["metadata"]["namespace"].as_str().unwrap_or_default();
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let labels = match policy.is_some_and(|p| p.reads_namespace_labels()) {
            true => self.namespace_labels(ns),
            false => BTreeMap::new(),
        };
        if let Some(p) = policy {
            let allowed = p.allows_namespace(ns, &labels);
            self.team
                .decided
                .insert(namespaced::plugin_name(name, ns), (ns.to_string(), allowed));
        }
        let cap = policy.and_then(|p| p.plugins_cap());
        namespaced::as_winkplugin(object, policy, &labels).and_then(|w| {
            match cap.and_then(|cap| self.over_cap(object, cap)) {
                Some(refused) => Err(refused),
                None => Ok(w),
            }
        })
    }
}
