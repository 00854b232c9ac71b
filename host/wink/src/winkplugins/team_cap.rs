//! The cap of a team's plugins: the team policy's `teams.limits.plugins`,
//! the most NamespacedWinkPlugins one namespace runs. Past it, the newest
//! wait, `Loaded=False` with the reason [`REASON`]; which ones is decided
//! as a quota would: a plugin that runs is kept before one that waits (a
//! new object never evicts a running one), then the oldest by
//! `creationTimestamp`, then by name. A deletion passes the waiting ones
//! over again, and so does a change of the policy (a raised cap).
//!
//! Owns the ranking ([`over_cap`]) and the controller's reading of a
//! namespace's objects for it; the refusal is made a status as every
//! other ([`super::namespaced::Refused`]).

use super::Controller;
use super::namespaced::{Refused, plugin_name};
use serde::Deserialize;
use serde_json::Value;
use std::time::Instant;

/// The condition reason of a plugin past its team's cap.
pub const REASON: &str = "TooManyPlugins";

/// One NamespacedWinkPlugin of a namespace, as the cap ranks it.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub name: String,
    /// `metadata.creationTimestamp` (RFC 3339 in UTC, which sorts as text).
    pub created: String,
    /// Whether its plugin runs now.
    pub running: bool,
}

impl Member {
    fn rank(&self) -> (bool, &str, &str) {
        (!self.running, &self.created, &self.name)
    }
}

/// Why `name`, one of `members` (the objects of `namespace`), may not run
/// under the cap `cap`: `cap` others rank before it.
pub fn over_cap(name: &str, namespace: &str, members: &[Member], cap: usize) -> Option<Refused> {
    let me = members.iter().find(|m| m.name == name)?;
    let before = members.iter().filter(|m| m.rank() < me.rank()).count();
    (before >= cap).then(|| Refused {
        reason: REASON,
        message: format!(
            "{namespace} has {} NamespacedWinkPlugins, more than the {cap} the operator lets one namespace run (teams.limits.plugins: {cap}); this one waits until one is deleted or the cap is raised (the running ones, then the oldest, are kept)",
            members.len()
        ),
    })
}

#[derive(Deserialize)]
struct Created {
    metadata: CreatedMeta,
}

#[derive(Deserialize)]
struct CreatedMeta {
    #[serde(rename = "creationTimestamp", default)]
    created: String,
}

impl Controller {
    /// Why the NamespacedWinkPlugin `object` may not run under the cap
    /// `cap` of its namespace's plugins; none when it may.
    pub(super) fn over_cap(&self, object: &Value, cap: usize) -> Option<Refused> {
        let namespace = object["metadata"]["namespace"].as_str()?;
        let name = object["metadata"]["name"].as_str()?;
        let objects = self.informer.store().list(Some(namespace), None);
        if objects.len() <= cap {
            return None;
        }
        let members: Vec<Member> = objects
            .iter()
            .map(|o| Member {
                name: o.name().to_string(),
                created: serde_json::from_str::<Created>(&o.json())
                    .map(|c| c.metadata.created)
                    .unwrap_or_default(),
                running: self
                    .entries
                    .get(&plugin_name(o.name(), namespace))
                    .is_some_and(|e| e.applied),
            })
            .collect();
        over_cap(name, namespace, &members, cap)
    }

    /// A team plugin was deleted: those waiting for room under their
    /// team's cap are passed over again at once.
    pub(super) fn room_made(&mut self) {
        for e in self.entries.values_mut() {
            let waits = e.outcome.conditions.iter().any(|c| c.reason == REASON);
            if waits {
                e.retry_at = Some(Instant::now());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(name: &str, created: &str, running: bool) -> Member {
        Member {
            name: name.into(),
            created: created.into(),
            running,
        }
    }

    fn waiting(members: &[Member], cap: usize) -> Vec<&str> {
        let mut out: Vec<&str> = members
            .iter()
            .filter(|m| over_cap(&m.name, "team-a", members, cap).is_some())
            .map(|m| m.name.as_str())
            .collect();
        out.sort();
        out
    }

    #[test]
    fn the_oldest_are_kept_then_by_name() {
        let members = [
            member("d", "2026-01-01T00:00:03Z", false),
            member("c", "2026-01-01T00:00:02Z", false),
            member("b", "2026-01-01T00:00:01Z", false),
            member("a", "2026-01-01T00:00:02Z", false),
        ];
        assert_eq!(
            waiting(&members, 2),
            ["c", "d"],
            "b, then a before c (same second)"
        );
        assert_eq!(waiting(&members, 3), ["d"]);
        assert!(waiting(&members, 4).is_empty());
        assert_eq!(waiting(&members, 1), ["a", "c", "d"]);
    }

    #[test]
    fn a_running_plugin_is_never_evicted_by_a_new_one() {
        // Made in the same second as the running `z`, `a` sorts first by
        // name, yet waits.
        let members = [
            member("z", "2026-01-01T00:00:00Z", true),
            member("a", "2026-01-01T00:00:00Z", false),
        ];
        assert_eq!(waiting(&members, 1), ["a"]);
        // A lowered cap keeps the oldest of the running ones.
        let members = [
            member("x", "2026-01-01T00:00:01Z", true),
            member("y", "2026-01-01T00:00:00Z", true),
            member("w", "2025-01-01T00:00:00Z", false),
        ];
        assert_eq!(waiting(&members, 1), ["w", "x"]);
    }

    #[test]
    fn the_largest_cap_is_what_the_controller_runs() {
        assert_eq!(
            wink_runtime::grants::limits::MAX_PLUGINS,
            super::super::MAX_WINKPLUGINS
        );
    }

    #[test]
    fn the_refusal_names_the_cap() {
        let members = [
            member("a", "2026-01-01T00:00:00Z", false),
            member("b", "2026-01-01T00:00:01Z", false),
        ];
        let r = over_cap("b", "team-a", &members, 1).unwrap();
        assert_eq!(r.reason, "TooManyPlugins");
        assert!(
            r.message
                .starts_with("team-a has 2 NamespacedWinkPlugins, more than the 1 the operator lets one namespace run (teams.limits.plugins: 1)"),
            "{}",
            r.message
        );
        assert!(over_cap("a", "team-a", &members, 1).is_none());
        assert!(over_cap("gone", "team-a", &members, 1).is_none());
    }
}
