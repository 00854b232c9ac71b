//! The operator's grants: what each plugin may do beyond reading what it
//! watches, from one YAML file (`wink run --grants FILE`). What a plugin may
//! do is the intersection of what it declared in its registration and what
//! its grant allows; with no grant, nothing beyond reading.
//!
//! ```yaml
//! plugins:
//!   require-labels:            # a plugin's name, or "*" for every plugin without its own entry
//!     mode: enforce            # or audit: every write is a server-side dry run
//!     events: true             # may record Events
//!     secrets: false           # may watch or read Secrets
//!     writes:
//!       - apiVersion: apps/v1
//!         kind: Deployment
//!         verbs: [patch]       # create, update, patch, delete
//!         namespaces: [default] # omitted: every namespace
//!     rate: {qps: 10, burst: 20}
//!     match:                   # where it applies (every field ANDed; crate::scope)
//!       namespaceSelector: {matchLabels: {enforce: "yes"}}
//!     exclude:                 # where it does not
//!       namespaces: [kube-system]
//! daemon:
//!   rate: {qps: 50, burst: 100}  # every plugin's writes together
//! ```
//!
//! Owns parsing (strict: unknown fields and duplicate keys are errors at
//! every level; [`file`]), the intersection and the snippet that would grant
//! what is missing; it performs no write and holds no state.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A kind of write (the WIT `verb`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    Create,
    Update,
    Patch,
    Delete,
}

impl Verb {
    /// As the grant file and RBAC spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
        }
    }
}

/// Whether a plugin's writes persist or are server-side dry runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Enforce,
    Audit,
}

pub use super::rate::Rate;

/// The default rate of one plugin's writes.
pub const PLUGIN_RATE: Rate = Rate { qps: 10.0, burst: 20 };

/// The default rate of all plugins' writes together.
pub const DAEMON_RATE: Rate = Rate {
    qps: 50.0,
    burst: 100,
};

/// Writes granted on one resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WriteGrant {
    pub api_version: String,
    pub kind: String,
    pub verbs: Vec<Verb>,
    /// The namespaces written in; none for every namespace (and cluster scope).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<Vec<String>>,
}

impl WriteGrant {
    /// Whether this grant allows `verb` on `api_version`/`kind` in
    /// `namespace`. Resource types compare in their canonical form
    /// ([`wink_informer::canonical`]): a spelling the API server would not accept,
    /// on either side, matches nothing.
    pub fn allows(&self, api_version: &str, kind: &str, verb: Verb, namespace: Option<&str>) -> bool {
        self.is_for(api_version, kind)
            && self.verbs.contains(&verb)
            && match (&self.namespaces, namespace) {
                (None, _) => true,
                (Some(nss), Some(ns)) => nss.iter().any(|n| n == ns || n == "*"),
                (Some(nss), None) => nss.iter().any(|n| n == "*"),
            }
    }

    /// Whether this grant is about `api_version`/`kind` (canonically).
    pub fn is_for(&self, api_version: &str, kind: &str) -> bool {
        wink_informer::canonical::same_type((&self.api_version, &self.kind), (api_version, kind))
    }
}

/// One plugin's grant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PluginGrant {
    pub mode: Mode,
    pub events: bool,
    pub secrets: bool,
    pub writes: Vec<WriteGrant>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// Where the plugin applies ([`crate::scope`]); none: everywhere.
    #[serde(rename = "match", skip_serializing_if = "Option::is_none")]
    pub match_: Option<crate::scope::Selection>,
    /// Where it does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exclude: Option<crate::scope::Selection>,
    /// The cluster-scoped kinds it sees (`Kind` or `apiVersion/Kind`;
    /// Namespaces go by `match`/`exclude`); none: every one. A team
    /// plugin's grant sets it from the team policy ([`team`]).
    #[serde(rename = "clusterReads", skip_serializing_if = "Option::is_none")]
    pub cluster_reads: Option<Vec<String>>,
    /// Caps tighter than the daemon's ([`limits`]), applied when the
    /// plugin is loaded; a team plugin's come from the team policy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<PluginLimits>,
    /// The team it belongs to (a team plugin's namespace, set by the team
    /// policy): the plugins of one team share one CPU share
    /// ([`crate::cpu_share`]); none: the plugin has its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
}

impl PluginGrant {
    /// The caps this grant sets, checked (none given: none). `plugins`
    /// caps a team (`teams.limits`), never one plugin: here it is an error.
    pub fn caps(&self) -> Result<Caps, String> {
        if self.limits.as_ref().is_some_and(|l| l.plugins.is_some()) {
            return Err("limits.plugins: a cap of a team's plugins, set in teams.limits only".into());
        }
        self.limits
            .as_ref()
            .map_or(Ok(Caps::default()), |l| l.caps("limits"))
    }

    /// The scope this grant sets, checked; none when it narrows nothing.
    pub fn scope(&self) -> Result<Option<crate::scope::Scope>, String> {
        if let Some(m) = &self.match_ {
            m.check("match")?;
        }
        if let Some(e) = &self.exclude {
            e.check("exclude")?;
            if e.is_empty() {
                return Err("exclude: name at least one of namespaceSelector, objectSelector, namespaces, kinds (an empty exclude would exclude everything)".into());
            }
        }
        if let Some(kinds) = &self.cluster_reads {
            let at = crate::scope::Selection {
                kinds: Some(kinds.clone()),
                ..Default::default()
            };
            at.check("clusterReads")?;
            let scope = crate::scope::Scope::new(self.match_.as_ref(), self.exclude.as_ref())
                .unwrap_or_else(crate::scope::Scope::everywhere);
            return Ok(Some(scope.with_cluster_reads(kinds.clone())));
        }
        Ok(crate::scope::Scope::new(
            self.match_.as_ref(),
            self.exclude.as_ref(),
        ))
    }
}

/// The daemon-wide part of the grants.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DaemonGrant {
    pub rate: Option<Rate>,
}

/// The whole grants file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Grants {
    pub plugins: BTreeMap<String, PluginGrant>,
    pub daemon: DaemonGrant,
    /// The operator's policy for team plugins (`NamespacedWinkPlugin`s);
    /// none: team plugins are off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub teams: Option<TeamPolicy>,
    /// Grant whatever a plugin declares (`wink dev`); never from a file.
    #[serde(skip)]
    pub grant_declared: bool,
}

/// What a plugin declared it may write (from its registration).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Declared {
    pub api_version: String,
    pub kind: String,
    pub verbs: Vec<Verb>,
}

/// What a plugin may do: its declaration intersected with its grant.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Permissions {
    pub mode: Mode,
    pub events: bool,
    pub writes: Vec<WriteGrant>,
    pub rate: Option<Rate>,
}

impl Permissions {
    /// Whether `verb` on `api_version`/`kind` in `namespace` is permitted.
    pub fn allows(&self, api_version: &str, kind: &str, verb: Verb, namespace: Option<&str>) -> bool {
        self.writes
            .iter()
            .any(|w| w.allows(api_version, kind, verb, namespace))
    }
}

/// What a plugin declared but was not granted: the grant snippet that
/// would allow it, for the one log line at startup.
#[derive(Debug, Clone, PartialEq)]
pub struct Missing {
    pub events: bool,
    pub writes: Vec<WriteGrant>,
}

impl Missing {
    /// Nothing missing.
    pub fn is_empty(&self) -> bool {
        !self.events && self.writes.is_empty()
    }

    /// The grants-file entry that would allow what is missing, on one line.
    pub fn snippet(&self, plugin: &str) -> String {
        let entry = PluginGrant {
            events: self.events,
            writes: self.writes.clone(),
            ..PluginGrant::default()
        };
        let mut plugins = serde_json::Map::new();
        let mut value = serde_json::to_value(&entry).expect("a grant serializes");
        if let Some(obj) = value.as_object_mut() {
            obj.retain(|k, v| match k.as_str() {
                "mode" | "secrets" => false,
                "events" => v.as_bool() == Some(true),
                "writes" => v.as_array().is_some_and(|a| !a.is_empty()),
                _ => true,
            });
        }
        plugins.insert(plugin.to_string(), value);
        // YAML's flow style is JSON: one line that pastes into the file.
        serde_json::json!({ "plugins": plugins }).to_string()
    }
}

impl Grants {
    /// Grants that allow whatever every plugin declares (`wink dev`).
    pub fn whatever_is_declared() -> Grants {
        Grants {
            grant_declared: true,
            ..Grants::default()
        }
    }

    /// Whether these grants allow whatever is declared (`wink dev`).
    pub fn grants_whatever_is_declared(&self) -> bool {
        self.grant_declared
    }

    /// The grant of `plugin`: its own entry, else the entry under its other
    /// spelling ([`Grants::other_spelling`]), else the `*` entry, else none.
    pub fn for_plugin(&self, plugin: &str) -> Option<&PluginGrant> {
        self.plugins
            .get(plugin)
            .or_else(|| self.other_spelling(plugin).and_then(|k| self.plugins.get(k)))
            .or_else(|| self.plugins.get("*"))
    }

    /// The key of an entry that names `plugin` with `_` for `-` or the
    /// reverse (a crate `team-label-guard` builds `team_label_guard.wasm`),
    /// when `plugin` has no entry of its own: it is used, and the loader
    /// warns that it should be renamed.
    pub fn other_spelling(&self, plugin: &str) -> Option<&str> {
        if self.plugins.contains_key(plugin) {
            return None;
        }
        let dashed = |k: &str| k.replace('_', "-");
        let wanted = dashed(plugin);
        self.plugins
            .keys()
            .map(String::as_str)
            .find(|k| *k != "*" && dashed(k) == wanted)
    }

    /// What `plugin` may do, given what it declared (writes, and whether it
    /// records Events), and what it declared but was not granted.
    pub fn permissions(&self, plugin: &str, declared: &[Declared], events: bool) -> (Permissions, Missing) {
        if self.grant_declared {
            let writes = declared
                .iter()
                .map(|d| WriteGrant {
                    api_version: d.api_version.clone(),
                    kind: d.kind.clone(),
                    verbs: d.verbs.clone(),
                    namespaces: None,
                })
                .collect();
            let none = Missing {
                events: false,
                writes: Vec::new(),
            };
            let all = Permissions {
                mode: Mode::Enforce,
                events,
                writes,
                rate: None,
            };
            return (all, none);
        }
        let grant = self.for_plugin(plugin).cloned().unwrap_or_default();
        let mut writes = Vec::new();
        let mut missing = Missing {
            events: events && !grant.events,
            writes: Vec::new(),
        };
        for d in declared {
            let mut lacking = Vec::new();
            for &verb in &d.verbs {
                let granted: Vec<&WriteGrant> = grant
                    .writes
                    .iter()
                    .filter(|g| g.is_for(&d.api_version, &d.kind) && g.verbs.contains(&verb))
                    .collect();
                if granted.is_empty() {
                    lacking.push(verb);
                }
                writes.extend(granted.into_iter().map(|g| WriteGrant {
                    verbs: vec![verb],
                    ..g.clone()
                }));
            }
            if !lacking.is_empty() {
                missing.writes.push(WriteGrant {
                    api_version: d.api_version.clone(),
                    kind: d.kind.clone(),
                    verbs: lacking,
                    namespaces: None,
                });
            }
        }
        let permissions = Permissions {
            mode: grant.mode,
            events: events && grant.events,
            writes,
            rate: grant.rate,
        };
        (permissions, missing)
    }

    /// The scope of `plugin`'s grant (none: everywhere); a grant whose
    /// scope does not check is an error naming the field.
    pub fn scope(&self, plugin: &str) -> Result<Option<crate::scope::Scope>, String> {
        if self.grant_declared && self.for_plugin(plugin).is_none() {
            return Ok(None);
        }
        self.for_plugin(plugin)
            .map_or(Ok(None), PluginGrant::scope)
            .map_err(|e| format!("the grant of plugin {plugin}: {e}"))
    }

    /// Whether `plugin` may watch or read Secrets.
    pub fn secrets(&self, plugin: &str) -> bool {
        self.grant_declared || self.for_plugin(plugin).is_some_and(|g| g.secrets)
    }

    /// Whether `plugin` may watch or read `api_version`/`kind`: any
    /// resource type the API server would accept the spelling of, but
    /// Secrets only with a grant. The one decision for `wink run` and the
    /// RBAC of `wink manifests`; call it with what was asked and again with
    /// what discovery resolved it to ([`wink_informer::canonical::Gvk::of_resource`]).
    pub fn may_read(
        &self,
        plugin: &str,
        api_version: &str,
        kind: &str,
    ) -> Result<wink_informer::canonical::Gvk, String> {
        let gvk = wink_informer::canonical::Gvk::parse(api_version, kind)
            .map_err(|e| format!("plugin {plugin}: {e}"))?;
        if gvk.is_secret() && !self.secrets(plugin) {
            return Err(format!(
                "plugin {plugin} asks for Secrets, which the operator has not granted (--allow-secrets {plugin}, or `secrets: true` in its grant)"
            ));
        }
        Ok(gvk)
    }

    /// The rate of all plugins' writes together.
    pub fn daemon_rate(&self) -> Rate {
        self.daemon.rate.unwrap_or(DAEMON_RATE)
    }
}

mod file;
pub mod limits;
pub mod team;
pub use file::{GrantsFile, MAX_GRANTS_BYTES};
pub use limits::{Caps, PluginLimits};
pub use team::TeamPolicy;

#[cfg(test)]
mod tests;
