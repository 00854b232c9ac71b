//! The grants in force, and reading them again: `wink run --grants FILE`
//! re-reads the file when it changes (the reload watcher asks, on a change
//! of the file and before each plugin load), and applies what it says to
//! every loaded plugin: writes, Events, mode and rate re-granted, and a
//! plugin whose watches or reads the new grants refuse (Secrets without a
//! grant) unloaded, with the same decision as at load
//! ([`Grants::may_read`]); a changed scope is put in force (`scoping.rs`). A file that does not read or parse keeps the
//! grants in force, said once per distinct error.
//!
//! Owns [`LiveGrants`] and the advice that names what to grant; the
//! decisions themselves are [`Grants`]'.

use super::PluginManager;
use crate::bindings::types::{FailurePolicy, Webhook};
use crate::capabilities::WriteAccess;
use crate::grants::{Grants, GrantsFile, Missing, PluginGrant};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};

/// The grants in force and where they come from.
pub(super) struct LiveGrants {
    current: RwLock<Arc<Grants>>,
    file: Option<GrantsFile>,
    /// The last error reading the file, said once.
    last_error: Mutex<Option<String>>,
    /// Grants given per plugin outside the file (a cluster object's):
    /// they win over the file's entry of the same name, through re-reads.
    given: Mutex<BTreeMap<String, PluginGrant>>,
    /// Admission failure policies given per plugin outside its registration.
    policies: Mutex<BTreeMap<String, FailurePolicy>>,
}

impl LiveGrants {
    pub(super) fn new(grants: Grants, file: Option<GrantsFile>) -> Self {
        LiveGrants {
            current: RwLock::new(Arc::new(grants)),
            file,
            last_error: Mutex::new(None),
            given: Mutex::new(BTreeMap::new()),
            policies: Mutex::new(BTreeMap::new()),
        }
    }
}

impl PluginManager {
    /// The grants in force.
    pub fn grants(&self) -> Arc<Grants> {
        self.grants.current.read().unwrap().clone()
    }

    /// The caps `plugin`'s grant sets beyond the daemon's limits
    /// ([`crate::grants::PluginLimits`]); an error says which field does
    /// not read.
    pub fn caps(&self, plugin: &str) -> anyhow::Result<crate::grants::Caps> {
        let grants = self.grants();
        let Some(grant) = grants.for_plugin(plugin) else {
            return Ok(Default::default());
        };
        grant
            .caps()
            .map_err(|e| anyhow::anyhow!("the grant of plugin {plugin}: {e}"))
    }

    /// The CPU share `plugin`'s grant holds it to: its team's (the grant's
    /// `team`, else its own), when the grant sets `limits.cpu`.
    pub(super) fn cpu_share(&self, plugin: &str) -> Option<Arc<crate::cpu_share::CpuShare>> {
        let grants = self.grants();
        let grant = grants.for_plugin(plugin)?;
        let cores = grant.caps().ok()?.cpu?;
        let team = grant.team.as_deref().unwrap_or(plugin);
        Some(self.cpu_shares.get(team, cores))
    }

    /// The budget `plugin`'s log lines count against: its team's (the
    /// grant's `team`), shared by the team's plugins; else its own.
    pub(super) fn log_budget(&self, plugin: &str) -> crate::stdio::LogBudget {
        let team = self.grants().for_plugin(plugin).and_then(|g| g.team.clone());
        match team {
            Some(team) => self.log_budgets.get(&team),
            None => crate::stdio::LogBudget::new(plugin.into()),
        }
    }

    /// Every team's time its deliveries were held back to its CPU share:
    /// (team, time).
    pub fn cpu_held(&self) -> Vec<(String, std::time::Duration)> {
        self.cpu_shares.held()
    }

    /// The grants file, when the grants come from one.
    pub fn grants_file(&self) -> Option<&GrantsFile> {
        self.grants.file.as_ref()
    }

    /// Read the grants file again; when it says something new, put it in
    /// force for every loaded plugin. Whether the grants changed.
    pub async fn reread_grants(&self) -> bool {
        let Some(file) = self.grants.file.clone() else {
            return false;
        };
        let read = tokio::task::spawn_blocking(move || file.load()).await;
        let mut new = match read {
            Ok(Ok(g)) => g,
            Ok(Err(e)) => {
                let msg = format!("{e:#}");
                let mut last = self.grants.last_error.lock().unwrap();
                if last.as_deref() != Some(&msg) {
                    tracing::error!("grants file not re-read, the grants in force stay: {msg}");
                    *last = Some(msg);
                }
                return false;
            }
            Err(e) => {
                tracing::error!("grants file not re-read, the grants in force stay: {e}");
                return false;
            }
        };
        *self.grants.last_error.lock().unwrap() = None;
        for (name, grant) in self.grants.given.lock().unwrap().iter() {
            new.plugins.insert(name.clone(), grant.clone());
        }
        if *self.grants() == new {
            return false;
        }
        if new.daemon_rate() != self.grants().daemon_rate() {
            tracing::warn!("the grants' daemon rate changed: it takes effect when wink restarts");
        }
        let new = Arc::new(new);
        *self.grants.current.write().unwrap() = new.clone();
        tracing::info!(
            path = %self.grants.file.as_ref().map(|f| f.path.display().to_string()).unwrap_or_default(),
            "grants file re-read: the new grants are in force"
        );
        self.apply_grants(&new).await;
        true
    }

    /// Give plugin `name` its own grant (`None`: take it back), in force at
    /// once for every loaded plugin and kept through re-reads of the
    /// grants file. Whether the grants changed.
    pub async fn give_grant(&self, name: &str, grant: Option<PluginGrant>) -> bool {
        let mut new = (*self.grants()).clone();
        {
            let mut given = self.grants.given.lock().unwrap();
            match grant {
                Some(g) => {
                    given.insert(name.to_string(), g.clone());
                    new.plugins.insert(name.to_string(), g);
                }
                None => {
                    if given.remove(name).is_none() {
                        return false;
                    }
                    new.plugins.remove(name);
                }
            }
        }
        if *self.grants() == new {
            return false;
        }
        let new = Arc::new(new);
        *self.grants.current.write().unwrap() = new.clone();
        self.apply_grants(&new).await;
        true
    }

    /// Give plugin `name`'s webhooks this failure policy whatever its
    /// registration declares (`None`: its own again); in force for the next
    /// request and the next webhook configuration, with no reload.
    pub fn give_failure_policy(&self, name: &str, policy: Option<FailurePolicy>) {
        let mut policies = self.grants.policies.lock().unwrap();
        match policy {
            Some(p) => policies.insert(name.to_string(), p),
            None => policies.remove(name),
        };
    }

    /// `webhook` of plugin `name` with the failure policy given it, if any.
    pub(super) fn with_given_policy(&self, name: &str, mut webhook: Webhook) -> Webhook {
        webhook.failure_policy = self.failure_policy_of(name, &webhook);
        webhook
    }

    /// The failure policy of plugin `name`'s `webhook`: the one given it,
    /// if any, else its own.
    pub(super) fn failure_policy_of(&self, name: &str, webhook: &Webhook) -> FailurePolicy {
        let given = self.grants.policies.lock().unwrap().get(name).copied();
        given.unwrap_or(webhook.failure_policy)
    }

    /// Put `grants` in force for every loaded plugin.
    async fn apply_grants(&self, grants: &Grants) {
        let mut refused = Vec::new();
        let mut reload = Vec::new();
        {
            let plugins = self.plugins.lock().await;
            for (name, p) in plugins.iter() {
                let why = p
                    .registered
                    .iter()
                    .find_map(|r| grants.may_read(name, &r.spec.api_version, &r.spec.kind).err());
                if let Some(why) = why {
                    refused.push((name.clone(), why));
                    continue;
                }
                let (declared, events) = &p.declared;
                let (permissions, missing) = grants.permissions(name, declared, *events);
                p.instance.write_scope().grant(WriteAccess::new(
                    p.instance.name().into(),
                    self.cluster.clone(),
                    permissions,
                ));
                if !missing.is_empty() {
                    tracing::warn!(plugin = %name, "{}", self.grant_advice(name, &missing));
                }
                let caps = grants.for_plugin(name).map(|g| g.caps().unwrap_or_default());
                if caps.unwrap_or_default() != p.caps {
                    reload.push((name.clone(), p.path.clone(), "gets other caps (limits)"));
                } else if self.rescope_plugin(p, grants).await {
                    reload.push((name.clone(), p.path.clone(), "gains or loses a scope"));
                }
            }
        }
        for (name, path, why) in reload {
            tracing::info!(plugin = %name, "the plugin {why}: it is loaded again under it");
            self.unload(&name).await;
            if let Err(e) = self.load_file(&path).await {
                tracing::error!(plugin = %name, "plugin not loaded again under its new scope: {e:#}");
            }
        }
        for (name, why) in refused {
            tracing::error!(plugin = %name, "plugin unloaded: the new grants refuse what it watches: {why}");
            self.unload(&name).await;
        }
    }

    /// What to say of a plugin's declared but not granted writes and Events:
    /// the entry that would grant them, and where it goes.
    pub(super) fn grant_advice(&self, plugin: &str, missing: &Missing) -> String {
        let snippet = missing.snippet(plugin);
        let refused = "plugin declares writes the operator has not granted; they will be refused";
        match &self.grants.file {
            Some(file) => format!(
                "{refused}. To allow them, merge into {} (re-read when it changes): {snippet}",
                file.path.display()
            ),
            None => format!("{refused}. To allow them, run wink with --grants FILE holding: {snippet}"),
        }
    }
}
