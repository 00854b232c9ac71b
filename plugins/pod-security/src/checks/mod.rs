//! The Pod Security Standards as PodSecurity admission's checks: each
//! check has PodSecurity's ID, a level, and one revision per policy version
//! at which its rule changed. At a level and version the checks that apply
//! are every Baseline check (and, for Restricted, every Restricted one) in
//! the revision of the newest version not after the one asked for; under
//! Restricted a Baseline check that a Restricted check in force overrides
//! (`capabilities_baseline`, `hostPathVolumes`, `seccompProfile_baseline`,
//! `procMount`) gives way to it. Pure: no SDK call here.
//!
//! The families live beside this file: [`host`] (what reaches the node),
//! [`baseline`] (the rest of Baseline's security context rules) and
//! [`restricted`].

mod baseline;
mod host;
mod restricted;

use crate::pod::Pod;
use crate::version::{Level, LevelVersion};
use std::collections::BTreeSet;

/// Why a check refuses a Pod: a short reason and the offenders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forbidden {
    pub reason: String,
    pub detail: String,
}

/// One revision of a check: `None` allows.
pub type CheckFn = fn(&Pod) -> Option<Forbidden>;

/// A check: its ID, level, revisions (by the minor version from which each
/// applies, oldest first) and the Baseline checks it overrides.
pub struct Check {
    pub id: &'static str,
    pub level: Level,
    pub versions: &'static [(u32, CheckFn)],
    pub overrides: &'static [&'static str],
}

/// Every check, Baseline first, each level in PodSecurity's order.
pub const CHECKS: [&Check; 19] = [
    &baseline::APP_ARMOR_PROFILE,
    &baseline::CAPABILITIES_BASELINE,
    &host::HOST_NAMESPACES,
    &host::HOST_PATH_VOLUMES,
    &host::HOST_PORTS,
    &host::HOST_PROBES_AND_HOST_LIFECYCLE,
    &host::PRIVILEGED,
    &baseline::PROC_MOUNT,
    &baseline::SE_LINUX_OPTIONS,
    &baseline::SECCOMP_PROFILE_BASELINE,
    &baseline::SYSCTLS,
    &host::WINDOWS_HOST_PROCESS,
    &restricted::ALLOW_PRIVILEGE_ESCALATION,
    &restricted::CAPABILITIES_RESTRICTED,
    &restricted::PROC_MOUNT_RESTRICTED,
    &restricted::RESTRICTED_VOLUMES,
    &restricted::RUN_AS_NON_ROOT,
    &restricted::RUN_AS_USER,
    &restricted::SECCOMP_PROFILE_RESTRICTED,
];

impl Check {
    /// The revision in force at `minor`, if the check exists yet.
    fn at(&self, minor: u32) -> Option<CheckFn> {
        self.versions
            .iter()
            .rev()
            .find(|(from, _)| *from <= minor)
            .map(|(_, f)| *f)
    }
}

/// The checks that apply at `lv`, with the revision of each, in order.
pub fn applicable(lv: LevelVersion) -> Vec<(&'static Check, CheckFn)> {
    if lv.level == Level::Privileged {
        return Vec::new();
    }
    let minor = lv.version.effective_minor();
    let in_force: Vec<(&'static Check, CheckFn)> = CHECKS
        .iter()
        .filter(|c| c.level <= lv.level)
        .filter_map(|c| c.at(minor).map(|f| (*c, f)))
        .collect();
    let overridden: BTreeSet<&str> = in_force
        .iter()
        .flat_map(|(c, _)| c.overrides.iter().copied())
        .collect();
    in_force
        .into_iter()
        .filter(|(c, _)| !overridden.contains(c.id))
        .collect()
}

/// One check's conclusion about one Pod.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub id: &'static str,
    pub level: Level,
    pub forbidden: Option<Forbidden>,
}

/// Every applicable check's conclusion about `pod` at `lv`, in order.
pub fn evaluate(lv: LevelVersion, pod: &Pod) -> Vec<Outcome> {
    applicable(lv)
        .into_iter()
        .map(|(check, f)| Outcome {
            id: check.id,
            level: check.level,
            forbidden: f(pod),
        })
        .collect()
}

/// The failures as PodSecurity words them: `reason (detail), reason`.
pub fn summary(outcomes: &[Outcome]) -> String {
    outcomes
        .iter()
        .filter_map(|o| o.forbidden.as_ref())
        .map(|f| match f.detail.is_empty() {
            true => f.reason.clone(),
            false => format!("{} ({})", f.reason, f.detail),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `singular` for one, `plural` otherwise.
pub(crate) fn pluralize(singular: &str, plural: &str, count: usize) -> String {
    match count {
        1 => singular.to_string(),
        _ => plural.to_string(),
    }
}

/// `"a", "b"`.
pub(crate) fn join_quote<S: AsRef<str>>(items: &[S]) -> String {
    items
        .iter()
        .map(|s| format!("{:?}", s.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `container "a"` or `containers "a", "b"`.
pub(crate) fn containers<S: AsRef<str>>(names: &[S]) -> String {
    format!(
        "{} {}",
        pluralize("container", "containers", names.len()),
        join_quote(names)
    )
}

/// A sorted, de-duplicated list.
pub(crate) fn sorted(items: impl IntoIterator<Item = String>) -> Vec<String> {
    items.into_iter().collect::<BTreeSet<_>>().into_iter().collect()
}

pub(crate) fn forbid(reason: impl Into<String>, detail: impl Into<String>) -> Option<Forbidden> {
    Some(Forbidden {
        reason: reason.into(),
        detail: detail.into(),
    })
}

#[cfg(test)]
mod tests;
