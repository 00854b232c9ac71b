//! The team policy: the `teams:` section of the grants file, the operator's
//! word on team plugins (`NamespacedWinkPlugin`s). It says which namespaces
//! may run them, the writes (namespaced kinds and verbs) and Events they
//! may be granted, the cluster-scoped kinds they may read, their rate,
//! whether audit mode is forced, their caps (memory, call deadline,
//! work-queue keys, CPU share, fuel: [`super::limits`]; and how many plugins one
//! namespace runs, [`TeamPolicy::plugins_cap`]), and which registries
//! their components come from and which cosign keys must have signed them.
//!
//! ```yaml
//! teams:
//!   namespaces: [team-a, team-b]   # "*" for every namespace
//!   namespaceSelector: {matchLabels: {wink.dev/team: "true"}}  # or labelled so
//!   writes:
//!     - {apiVersion: v1, kind: ConfigMap, verbs: [create, patch]}
//!   events: true
//!   clusterReads: [Namespace]      # cluster-scoped kinds readable (read only)
//!   rate: {qps: 2, burst: 4}       # at most; a team asking less gets less
//!   mode: audit                    # forced on every team plugin
//!   limits: {memory: 64Mi, callDeadline: 500ms, queue: 1000, cpu: 0.25, fuel: 50000000, plugins: 20}
//!   registries: [registry.example.com/teams]
//!   cosignKeys: ["-----BEGIN PUBLIC KEY-----..."]
//! ```
//!
//! Owns the policy's parse and [`TeamPolicy::grant`]: a team plugin's
//! grant is the intersection of what it declares and this policy, its
//! scope confined to its own namespace. With no `teams:` section, team
//! plugins are off. It performs no write and holds no state.

use super::{Mode, PluginGrant, Rate, WriteGrant};
use crate::scope::{NAME_LABEL, Selection, Selector};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// At most this many entries in each list of the policy.
pub const MAX_TEAM_ITEMS: usize = 256;

/// The operator's policy for team plugins.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct TeamPolicy {
    /// The namespaces that may run team plugins (`*`: every one).
    pub namespaces: Vec<String>,
    /// The labels of namespaces that may run team plugins too (a namespace
    /// named in `namespaces` or matching this may); read from the shared
    /// Namespace informer, so a namespace relabelled in or out is followed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<Selector>,
    /// The writes a team plugin may be granted, in its namespace only
    /// (no `namespaces` field: the plugin's namespace is the only one).
    pub writes: Vec<WriteGrant>,
    /// Whether a team plugin may record Events (in its namespace).
    pub events: bool,
    /// Cluster-scoped kinds a team plugin may read (`Kind` or
    /// `apiVersion/Kind`); never written. Others are not seen.
    pub cluster_reads: Vec<String>,
    /// The most a team plugin's writes may go at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// `audit`: every team plugin's writes are dry runs, whatever it asks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// Caps of every team plugin, tighter than the daemon's (the stricter
    /// of the two applies; the CPU share is one per team).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<super::PluginLimits>,
    /// Reference prefixes components must come from (an OCI reference or
    /// https URL starting with one of them at a path boundary); empty:
    /// none is allowed.
    pub registries: Vec<String>,
    /// Cosign public keys (PEM); when given, a team plugin's component
    /// must be verified under one of them.
    pub cosign_keys: Vec<String>,
}

impl TeamPolicy {
    /// Check sizes and fields; `at` names the section in errors.
    pub fn check(&self) -> Result<(), String> {
        for (field, len) in [
            ("namespaces", self.namespaces.len()),
            ("writes", self.writes.len()),
            ("clusterReads", self.cluster_reads.len()),
            ("registries", self.registries.len()),
            ("cosignKeys", self.cosign_keys.len()),
        ] {
            if len > MAX_TEAM_ITEMS {
                return Err(format!("teams.{field}: {len} items (at most {MAX_TEAM_ITEMS})"));
            }
        }
        if let Some(s) = &self.namespace_selector {
            s.check("teams.namespaceSelector")?;
        }
        if self.writes.iter().any(|w| w.namespaces.is_some()) {
            return Err(
                "teams.writes: no namespaces (a team plugin writes in its own namespace only)".into(),
            );
        }
        if self.registries.iter().any(|r| r.is_empty()) {
            return Err("teams.registries: an empty prefix would allow every registry".into());
        }
        if let Some(l) = &self.limits {
            l.caps("teams.limits")?;
        }
        Ok(())
    }

    /// The most team plugins one namespace runs (`teams.limits.plugins`);
    /// none: no cap of its own (the controller's, `MAX_WINKPLUGINS`, is
    /// the only one).
    pub fn plugins_cap(&self) -> Option<usize> {
        self.limits.as_ref().and_then(|l| l.plugins)
    }

    /// Whether `namespace`, labelled `labels`, may run team plugins: it is
    /// named in `namespaces` (or `*` is), or its labels match
    /// `namespaceSelector` (its name label, `kubernetes.io/metadata.name`,
    /// always read as its name). Neither given: none may.
    pub fn allows_namespace(&self, namespace: &str, labels: &BTreeMap<String, String>) -> bool {
        self.namespaces.iter().any(|n| n == namespace || n == "*")
            || self.namespace_selector.as_ref().is_some_and(|s| {
                s.matches(|k| match k {
                    NAME_LABEL => Some(namespace),
                    k => labels.get(k).map(String::as_str),
                })
            })
    }

    /// Whether the namespace labels decide which namespaces may run team
    /// plugins (a `namespaceSelector` is given).
    pub fn reads_namespace_labels(&self) -> bool {
        self.namespace_selector.is_some()
    }

    /// Whether a component from `source` (an OCI reference or https URL)
    /// comes from an allowed registry: a prefix followed by nothing, `/`,
    /// `:` or `@` (so `reg/team-a` does not allow `reg/team-ab`).
    pub fn allows_source(&self, source: &str) -> bool {
        self.registries.iter().any(|prefix| {
            source.strip_prefix(prefix.as_str()).is_some_and(|rest| {
                prefix.ends_with('/') || rest.is_empty() || rest.starts_with(['/', ':', '@'])
            })
        })
    }

    /// The grant of a team plugin in `namespace` (labelled `labels`) that
    /// declares `declared` (its spec's grant and scope): what both allow,
    /// confined to `namespace`. An error says why it may not run at all.
    pub fn grant(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
        declared: &PluginGrant,
    ) -> Result<PluginGrant, String> {
        if !self.allows_namespace(namespace, labels) {
            return Err(format!(
                "the namespace {namespace} may not run team plugins (the operator's teams.namespaces and teams.namespaceSelector)"
            ));
        }
        if declared.secrets {
            return Err("a team plugin may not be granted Secrets".into());
        }
        if declared.writes.iter().any(|w| w.namespaces.is_some()) {
            return Err(
                "spec.grant.writes: no namespaces (a team plugin writes in its own namespace only)".into(),
            );
        }
        for (at, s) in [("match", &declared.match_), ("exclude", &declared.exclude)] {
            if let Some(s) = s
                && (s.namespaces.is_some() || s.namespace_selector.is_some())
            {
                return Err(format!(
                    "spec.{at}: no namespaces or namespaceSelector (a team plugin is confined to its namespace)"
                ));
            }
        }
        let mut writes = Vec::new();
        for d in &declared.writes {
            for p in self.writes.iter().filter(|p| p.is_for(&d.api_version, &d.kind)) {
                let verbs: Vec<_> = d.verbs.iter().copied().filter(|v| p.verbs.contains(v)).collect();
                if !verbs.is_empty() {
                    writes.push(WriteGrant {
                        api_version: d.api_version.clone(),
                        kind: d.kind.clone(),
                        verbs,
                        namespaces: Some(vec![namespace.to_string()]),
                    });
                }
            }
        }
        let cap = self.rate.unwrap_or(super::PLUGIN_RATE);
        let rate = match declared.rate {
            None => cap,
            Some(r) => Rate {
                qps: r.qps.min(cap.qps),
                burst: r.burst.min(cap.burst),
            },
        };
        let mode = match self.mode {
            Some(Mode::Audit) => Mode::Audit,
            _ => declared.mode,
        };
        if declared.limits.as_ref().is_some_and(|l| l.plugins.is_some()) {
            return Err(
                "spec.grant.limits.plugins: the operator's cap of a team (teams.limits.plugins)".into(),
            );
        }
        // `plugins` caps the team, not the plugin: not in its grant.
        let policy_limits = self
            .limits
            .clone()
            .map(|l| super::PluginLimits { plugins: None, ..l });
        let limits = match (&policy_limits, &declared.limits) {
            (Some(p), Some(d)) => Some(
                p.stricter(d)
                    .map_err(|e| format!("spec.grant.limits{}", e.trim_start_matches("limits")))?,
            ),
            (p, d) => p.clone().or_else(|| d.clone()),
        };
        if let Some(l) = &limits {
            l.caps("spec.grant.limits")?;
        }
        let match_ = Selection {
            namespaces: Some(vec![namespace.to_string()]),
            namespace_selector: None,
            ..declared.match_.clone().unwrap_or_default()
        };
        Ok(PluginGrant {
            mode,
            events: declared.events && self.events,
            secrets: false,
            writes,
            rate: Some(rate),
            match_: Some(match_),
            exclude: declared.exclude.clone(),
            cluster_reads: Some(self.cluster_reads.clone()),
            limits,
            team: Some(namespace.to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grants::{Grants, Verb};

    const NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

    fn policy() -> TeamPolicy {
        let g = Grants::parse(
            br#"
teams:
  namespaces: [team-a, team-b]
  writes:
    - {apiVersion: v1, kind: ConfigMap, verbs: [create, patch]}
  events: true
  clusterReads: [Namespace]
  rate: {qps: 2, burst: 4}
  mode: audit
  limits: {memory: 32Mi, callDeadline: 200ms, queue: 100, cpu: 0.25, fuel: 5000000, plugins: 3}
  registries: [reg.example/teams, "localhost:5000/wink/"]
"#,
        )
        .unwrap();
        g.teams.unwrap()
    }

    fn declared(yaml: &str) -> PluginGrant {
        serde_norway::from_str(yaml).unwrap()
    }

    #[test]
    fn the_grant_is_the_intersection_confined_to_the_namespace() {
        let d = declared(
            "{events: true, rate: {qps: 5, burst: 1}, writes: [{apiVersion: v1, kind: ConfigMap, verbs: [create, delete]}, {apiVersion: v1, kind: Pod, verbs: [patch]}, {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, verbs: [create]}], match: {kinds: [Pod]}}",
        );
        let g = policy().grant("team-a", &NO_LABELS, &d).unwrap();
        assert_eq!(g.writes.len(), 1, "{:?}", g.writes);
        assert_eq!(g.writes[0].kind, "ConfigMap");
        assert_eq!(g.writes[0].verbs, [Verb::Create]);
        assert!(g.writes[0].allows("v1", "ConfigMap", Verb::Create, Some("team-a")));
        assert!(!g.writes[0].allows("v1", "ConfigMap", Verb::Create, Some("team-b")));
        assert!(!g.writes[0].allows("v1", "ConfigMap", Verb::Create, None));
        assert!(g.events);
        assert_eq!(g.mode, Mode::Audit, "audit forced");
        assert_eq!(g.rate, Some(Rate { qps: 2.0, burst: 1 }));
        let m = g.match_.clone().unwrap();
        assert_eq!(m.namespaces.unwrap(), ["team-a"]);
        assert_eq!(m.kinds.unwrap(), ["Pod"], "the team's own narrowing is kept");
        let scope = g.scope().unwrap().unwrap();
        assert!(scope.admits_parts("v1", "Pod", Some("team-a"), |_| None));
        assert!(!scope.admits_parts("v1", "Pod", Some("team-b"), |_| None));
    }

    #[test]
    fn the_policys_caps_apply_and_a_team_may_only_tighten_them() {
        let g = policy().grant("team-a", &NO_LABELS, &declared("{}")).unwrap();
        let c = g.caps().unwrap();
        assert_eq!(c.memory_bytes, Some(32 << 20));
        assert_eq!(c.call_deadline, Some(std::time::Duration::from_millis(200)));
        assert_eq!(c.queue_keys, Some(100));
        assert_eq!(c.fuel, Some(5_000_000));
        assert_eq!(c.cpu, Some(0.25));
        assert_eq!(g.team.as_deref(), Some("team-a"));
        assert_eq!(policy().plugins_cap(), Some(3));
        assert_eq!(
            g.limits.as_ref().unwrap().plugins,
            None,
            "the team's cap is not a plugin's"
        );
        let e = policy()
            .grant("team-a", &NO_LABELS, &declared("{limits: {plugins: 100}}"))
            .unwrap_err();
        assert!(e.contains("spec.grant.limits.plugins"), "{e}");
        let other = declared("{team: team-b}");
        let g = policy().grant("team-a", &NO_LABELS, &other).unwrap();
        assert_eq!(
            g.team.as_deref(),
            Some("team-a"),
            "a team is its namespace, whatever it says"
        );
        let tighter = declared("{limits: {memory: 1Gi, cpu: 0.1, queue: 5000, fuel: 900000}}");
        let c = policy()
            .grant("team-a", &NO_LABELS, &tighter)
            .unwrap()
            .caps()
            .unwrap();
        assert_eq!(
            c.memory_bytes,
            Some(32 << 20),
            "a team asking more gets the policy's"
        );
        assert_eq!(c.queue_keys, Some(100));
        assert_eq!(c.fuel, Some(900_000), "a team asking less fuel gets less");
        assert_eq!(c.cpu, Some(0.1), "a team asking less gets less");
        let more = declared("{limits: {fuel: 10000000000}}");
        let c = policy()
            .grant("team-a", &NO_LABELS, &more)
            .unwrap()
            .caps()
            .unwrap();
        assert_eq!(
            c.fuel,
            Some(5_000_000),
            "a team asking more fuel gets the policy's"
        );
        let e = policy()
            .grant("team-a", &NO_LABELS, &declared("{limits: {cpu: 100}}"))
            .unwrap_err();
        assert!(e.contains("spec.grant.limits.cpu"), "{e}");
        let mut open = policy();
        open.limits = None;
        let g = open.grant("team-a", &NO_LABELS, &declared("{}")).unwrap();
        assert_eq!(
            g.caps().unwrap(),
            crate::grants::Caps::default(),
            "none: the daemon's"
        );
    }

    #[test]
    fn cluster_scoped_kinds_are_seen_only_where_the_policy_allows() {
        let g = policy().grant("team-a", &NO_LABELS, &declared("{}")).unwrap();
        let scope = g.scope().unwrap().unwrap();
        assert!(!scope.admits_parts("v1", "Node", None, |_| None));
        assert!(!scope.admits_parts("rbac.authorization.k8s.io/v1", "ClusterRole", None, |_| None));
        let own = |k: &str| (k == crate::scope::NAME_LABEL).then_some("team-a");
        let other = |k: &str| (k == crate::scope::NAME_LABEL).then_some("team-b");
        assert!(scope.admits_parts("v1", "Namespace", None, own));
        assert!(!scope.admits_parts("v1", "Namespace", None, other));
        let mut p = policy();
        p.cluster_reads = vec!["Node".into()];
        let scope = p
            .grant("team-a", &NO_LABELS, &declared("{}"))
            .unwrap()
            .scope()
            .unwrap()
            .unwrap();
        assert!(scope.admits_parts("v1", "Node", None, |_| None));
    }

    #[test]
    fn what_the_policy_refuses_is_said() {
        let p = policy();
        let e = p.grant("team-c", &NO_LABELS, &declared("{}")).unwrap_err();
        assert!(e.contains("team-c may not run team plugins"), "{e}");
        let e = p
            .grant("team-a", &NO_LABELS, &declared("{secrets: true}"))
            .unwrap_err();
        assert!(e.contains("Secrets"), "{e}");
        let e = p
            .grant("team-a", &NO_LABELS, &declared("{match: {namespaces: [team-b]}}"))
            .unwrap_err();
        assert!(e.contains("confined to its namespace"), "{e}");
        let e = p
            .grant(
                "team-a",
                &NO_LABELS,
                &declared("{writes: [{apiVersion: v1, kind: Pod, verbs: [patch], namespaces: [team-b]}]}"),
            )
            .unwrap_err();
        assert!(e.contains("own namespace"), "{e}");
    }

    #[test]
    fn the_manuals_team_policy_parses() {
        let page = include_str!("../../../../docs/src/running/team-plugins.md");
        let (_, rest) = page.split_once("```yaml,grants\n").unwrap();
        let (yaml, _) = rest.split_once("```").unwrap();
        let p = Grants::parse(yaml.as_bytes()).unwrap().teams.unwrap();
        assert_eq!(p.namespaces, ["team-a", "team-b"]);
        let team = [("wink.dev/team".to_string(), "true".to_string())].into();
        assert!(p.allows_namespace("team-c", &team), "the manual's selector");
        assert!(!p.allows_namespace("team-c", &NO_LABELS));
        assert_eq!(p.mode, Some(Mode::Audit));
        assert!(p.allows_source("registry.example.com/teams/probe:1.0"));
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_namespace_named_or_labelled_may_run_team_plugins() {
        let only = |yaml: &str| Grants::parse(yaml.as_bytes()).unwrap().teams.unwrap();
        let team = labels(&[("wink.dev/team", "true")]);
        // Only the selector: the labels decide.
        let p = only("teams: {namespaceSelector: {matchLabels: {wink.dev/team: 'true'}}}");
        assert!(p.reads_namespace_labels());
        assert!(p.allows_namespace("team-x", &team));
        assert!(!p.allows_namespace("team-x", &NO_LABELS));
        assert!(!p.allows_namespace("team-x", &labels(&[("wink.dev/team", "false")])));
        let e = p.grant("team-x", &NO_LABELS, &declared("{}")).unwrap_err();
        assert!(e.contains("team-x may not run team plugins"), "{e}");
        assert!(e.contains("teams.namespaceSelector"), "{e}");
        assert_eq!(
            p.grant("team-x", &team, &declared("{}")).unwrap().team.as_deref(),
            Some("team-x")
        );
        // Names or labels: either lets a namespace run them.
        let p = only(
            "teams: {namespaces: [team-a], namespaceSelector: {matchExpressions: [{key: tier, operator: In, values: [gold, silver]}]}}",
        );
        assert!(p.allows_namespace("team-a", &NO_LABELS));
        assert!(p.allows_namespace("team-b", &labels(&[("tier", "silver")])));
        assert!(!p.allows_namespace("team-b", &labels(&[("tier", "bronze")])));
        // Only names: labels change nothing.
        let p = only("teams: {namespaces: [team-a]}");
        assert!(!p.reads_namespace_labels());
        assert!(!p.allows_namespace("team-b", &team));
        // Neither: none may.
        assert!(!only("teams: {}").allows_namespace("team-a", &team));
        // The name label is the namespace's name, whatever the labels say.
        let p = only("teams: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: team-a}}}");
        assert!(p.allows_namespace("team-a", &NO_LABELS));
        assert!(!p.allows_namespace("team-b", &labels(&[("kubernetes.io/metadata.name", "team-a")])));
        // An empty selector selects every namespace, as in Kubernetes.
        assert!(only("teams: {namespaceSelector: {}}").allows_namespace("any", &NO_LABELS));
    }

    #[test]
    fn a_namespace_selector_that_does_not_check_is_an_error() {
        for (yaml, said) in [
            (
                "teams: {namespaceSelector: {matchLabel: {a: b}}}",
                "unknown field",
            ),
            (
                "teams: {namespaceSelector: {matchExpressions: [{key: a, operator: In}]}}",
                "teams.namespaceSelector.matchExpressions[0]: In needs values",
            ),
            (
                "teams: {namespaceSelector: {matchExpressions: [{key: a, operator: Exists, values: [b]}]}}",
                "Exists takes no values",
            ),
            (
                "teams: {namespaceSelector: {matchLabels: {'': b}}}",
                "teams.namespaceSelector.matchLabels key",
            ),
            (
                "teams: {namespaceSelector: {matchExpressions: [{key: a, operator: Near}]}}",
                "unknown variant",
            ),
        ] {
            let e = Grants::parse(yaml.as_bytes()).unwrap_err();
            assert!(format!("{e:#}").contains(said), "{yaml}: {e:#}");
        }
        let many: Vec<String> = (0..257).map(|i| format!("k{i}: v")).collect();
        let yaml = format!(
            "teams: {{namespaceSelector: {{matchLabels: {{{}}}}}}}",
            many.join(", ")
        );
        let e = Grants::parse(yaml.as_bytes()).unwrap_err();
        assert!(
            format!("{e:#}").contains("teams.namespaceSelector: 257 requirements"),
            "{e:#}"
        );
    }

    #[test]
    fn registries_match_at_a_path_boundary() {
        let p = policy();
        assert!(p.allows_source("reg.example/teams/probe:v1"));
        assert!(p.allows_source("reg.example/teams@sha256:00"));
        assert!(!p.allows_source("reg.example/teams-evil/probe:v1"));
        assert!(!p.allows_source("other.example/teams/probe:v1"));
        assert!(p.allows_source("localhost:5000/wink/probe:v1"));
        assert!(!TeamPolicy::default().allows_source("reg.example/teams/probe:v1"));
    }

    #[test]
    fn a_policy_that_does_not_check_is_an_error_and_absent_means_off() {
        assert!(Grants::parse(b"plugins: {}").unwrap().teams.is_none());
        let e =
            Grants::parse(b"teams: {writes: [{apiVersion: v1, kind: Pod, verbs: [patch], namespaces: [a]}]}")
                .unwrap_err();
        assert!(format!("{e:#}").contains("teams.writes"), "{e:#}");
        let e = Grants::parse(b"teams: {limits: {memory: 64MB}}").unwrap_err();
        assert!(format!("{e:#}").contains("teams.limits.memory: unit"), "{e:#}");
        let e = Grants::parse(b"plugins: {p: {limits: {queue: 0}}}").unwrap_err();
        assert!(
            format!("{e:#}").contains("the grant of plugin p: limits.queue"),
            "{e:#}"
        );
        let e = Grants::parse(b"teams: {limits: {plugins: 0}}").unwrap_err();
        assert!(
            format!("{e:#}").contains("teams.limits.plugins: 0 plugins (from 1 to 1024)"),
            "{e:#}"
        );
        let e = Grants::parse(b"teams: {limits: {plugins: 1025}}").unwrap_err();
        assert!(
            format!("{e:#}").contains("teams.limits.plugins: 1025 plugins"),
            "{e:#}"
        );
        assert_eq!(
            Grants::parse(b"teams: {limits: {plugins: 1024}}")
                .unwrap()
                .teams
                .unwrap()
                .plugins_cap(),
            Some(1024)
        );
        assert_eq!(
            Grants::parse(b"teams: {}").unwrap().teams.unwrap().plugins_cap(),
            None
        );
        let e = Grants::parse(b"plugins: {p: {limits: {plugins: 3}}}").unwrap_err();
        assert!(
            format!("{e:#}").contains("the grant of plugin p: limits.plugins: a cap of a team's plugins"),
            "{e:#}"
        );
        let e = Grants::parse(b"teams: {namespace: [a]}").unwrap_err();
        assert!(format!("{e:#}").contains("unknown field"), "{e:#}");
    }
}
