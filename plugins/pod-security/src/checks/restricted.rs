//! Restricted checks: volume types, privilege escalation, running as
//! non-root and not as UID 0, required seccomp profiles, dropped
//! capabilities and default `/proc` mounts. From v1.25 a Windows Pod
//! (`spec.os.name: windows`) is exempt from the Linux-only ones; from v1.35
//! a Pod in a user namespace (`hostUsers: false`) from the UID ones.

use super::baseline::{proc_mount, valid_seccomp};
use super::{Check, Forbidden, containers, forbid, join_quote, pluralize, sorted};
use crate::pod::{Container, Pod};
use crate::version::Level;

pub const RESTRICTED_VOLUMES: Check = Check {
    id: "restrictedVolumes",
    level: Level::Restricted,
    versions: &[(0, restricted_volumes)],
    overrides: &["hostPathVolumes"],
};

/// The volume sources a Restricted Pod may use.
const ALLOWED_VOLUMES: [&str; 9] = [
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "image",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

fn restricted_volumes(pod: &Pod) -> Option<Forbidden> {
    let mut names = Vec::new();
    let mut types = Vec::new();
    for v in &pod.spec.volumes {
        // A volume without a source is an emptyDir: the API server's
        // defaulting makes it one before admission.
        let source = v.source.iter().find(|(_, value)| !value.is_null());
        let Some((kind, _)) = source else { continue };
        if ALLOWED_VOLUMES.iter().any(|t| v.has(t)) {
            continue;
        }
        names.push(v.name.clone());
        types.push(kind.clone());
    }
    if names.is_empty() {
        return None;
    }
    let types = sorted(types);
    forbid(
        "restricted volume types",
        format!(
            "{} {} {} {} {}",
            pluralize("volume", "volumes", names.len()),
            join_quote(&names),
            pluralize("uses", "use", names.len()),
            pluralize("restricted volume type", "restricted volume types", types.len()),
            join_quote(&types)
        ),
    )
}

pub const ALLOW_PRIVILEGE_ESCALATION: Check = Check {
    id: "allowPrivilegeEscalation",
    level: Level::Restricted,
    versions: &[
        (8, allow_privilege_escalation),
        (25, allow_privilege_escalation_1_25),
    ],
    overrides: &[],
};

fn allow_privilege_escalation(pod: &Pod) -> Option<Forbidden> {
    let bad: Vec<&str> = pod
        .spec
        .containers()
        .filter(|c| {
            c.security_context
                .as_ref()
                .and_then(|s| s.allow_privilege_escalation)
                != Some(false)
        })
        .map(|c| c.name.as_str())
        .collect();
    if bad.is_empty() {
        return None;
    }
    forbid(
        "allowPrivilegeEscalation != false",
        format!(
            "{} must set securityContext.allowPrivilegeEscalation=false",
            containers(&bad)
        ),
    )
}

fn allow_privilege_escalation_1_25(pod: &Pod) -> Option<Forbidden> {
    match pod.spec.is_windows() {
        true => None,
        false => allow_privilege_escalation(pod),
    }
}

pub const RUN_AS_NON_ROOT: Check = Check {
    id: "runAsNonRoot",
    level: Level::Restricted,
    versions: &[(0, run_as_non_root), (35, run_as_non_root_1_35)],
    overrides: &[],
};

fn run_as_non_root(pod: &Pod) -> Option<Forbidden> {
    let mut setters = Vec::new();
    let pod_value = pod.spec.security_context.as_ref().and_then(|s| s.run_as_non_root);
    if pod_value == Some(false) {
        setters.push("pod".to_string());
    }
    let (mut explicit, mut implicit) = (Vec::new(), Vec::new());
    for c in pod.spec.containers() {
        match c.security_context.as_ref().and_then(|s| s.run_as_non_root) {
            Some(false) => explicit.push(c.name.as_str()),
            Some(true) => {}
            None if pod_value != Some(true) => implicit.push(c.name.as_str()),
            None => {}
        }
    }
    if !explicit.is_empty() {
        setters.push(containers(&explicit));
    }
    if !setters.is_empty() {
        return forbid(
            "runAsNonRoot != true",
            format!(
                "{} must not set securityContext.runAsNonRoot=false",
                setters.join(" and ")
            ),
        );
    }
    if implicit.is_empty() {
        return None;
    }
    forbid(
        "runAsNonRoot != true",
        format!(
            "pod or {} must set securityContext.runAsNonRoot=true",
            containers(&implicit)
        ),
    )
}

fn run_as_non_root_1_35(pod: &Pod) -> Option<Forbidden> {
    match pod.spec.in_user_namespace() {
        true => None,
        false => run_as_non_root(pod),
    }
}

pub const RUN_AS_USER: Check = Check {
    id: "runAsUser",
    level: Level::Restricted,
    versions: &[(23, run_as_user), (35, run_as_user_1_35)],
    overrides: &[],
};

fn run_as_user(pod: &Pod) -> Option<Forbidden> {
    let mut setters = Vec::new();
    if pod.spec.security_context.as_ref().and_then(|s| s.run_as_user) == Some(0) {
        setters.push("pod".to_string());
    }
    let bad: Vec<&str> = pod
        .spec
        .containers()
        .filter(|c| c.security_context.as_ref().and_then(|s| s.run_as_user) == Some(0))
        .map(|c| c.name.as_str())
        .collect();
    if !bad.is_empty() {
        setters.push(containers(&bad));
    }
    if setters.is_empty() {
        return None;
    }
    forbid(
        "runAsUser=0",
        format!("{} must not set runAsUser=0", setters.join(" and ")),
    )
}

fn run_as_user_1_35(pod: &Pod) -> Option<Forbidden> {
    match pod.spec.in_user_namespace() {
        true => None,
        false => run_as_user(pod),
    }
}

pub const SECCOMP_PROFILE_RESTRICTED: Check = Check {
    id: "seccompProfile_restricted",
    level: Level::Restricted,
    versions: &[(19, seccomp_restricted), (25, seccomp_restricted_1_25)],
    overrides: &["seccompProfile_baseline"],
};

fn seccomp_type(c: &Container) -> Option<&str> {
    let profile = c.security_context.as_ref()?.seccomp_profile.as_ref()?;
    Some(profile.type_.as_str())
}

fn seccomp_restricted(pod: &Pod) -> Option<Forbidden> {
    let mut setters = Vec::new();
    let mut values = Vec::new();
    let mut pod_set = false;
    let pod_profile = pod
        .spec
        .security_context
        .as_ref()
        .and_then(|s| s.seccomp_profile.as_ref());
    if let Some(p) = pod_profile {
        match valid_seccomp(&p.type_) {
            true => pod_set = true,
            false => {
                setters.push("pod".to_string());
                values.push(p.type_.clone());
            }
        }
    }
    let (mut explicit, mut implicit) = (Vec::new(), Vec::new());
    for c in pod.spec.containers() {
        match seccomp_type(c) {
            Some(t) if !valid_seccomp(t) => {
                explicit.push(c.name.as_str());
                values.push(t.to_string());
            }
            Some(_) => {}
            None if !pod_set => implicit.push(c.name.as_str()),
            None => {}
        }
    }
    if !explicit.is_empty() {
        setters.push(containers(&explicit));
    }
    if !setters.is_empty() {
        return forbid(
            "seccompProfile",
            format!(
                "{} must not set securityContext.seccompProfile.type to {}",
                setters.join(" and "),
                join_quote(&sorted(values))
            ),
        );
    }
    if implicit.is_empty() {
        return None;
    }
    forbid(
        "seccompProfile",
        format!(
            "pod or {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"",
            containers(&implicit)
        ),
    )
}

fn seccomp_restricted_1_25(pod: &Pod) -> Option<Forbidden> {
    match pod.spec.is_windows() {
        true => None,
        false => seccomp_restricted(pod),
    }
}

pub const CAPABILITIES_RESTRICTED: Check = Check {
    id: "capabilities_restricted",
    level: Level::Restricted,
    versions: &[(22, capabilities_restricted), (25, capabilities_restricted_1_25)],
    overrides: &["capabilities_baseline"],
};

fn capabilities_restricted(pod: &Pod) -> Option<Forbidden> {
    let (mut missing_drop, mut adding) = (Vec::new(), Vec::new());
    let mut caps = Vec::new();
    for c in pod.spec.containers() {
        let Some(capabilities) = c.security_context.as_ref().and_then(|s| s.capabilities.as_ref()) else {
            missing_drop.push(c.name.as_str());
            continue;
        };
        if !capabilities.drop.iter().any(|d| d == "ALL") {
            missing_drop.push(c.name.as_str());
        }
        let beyond: Vec<String> = capabilities
            .add
            .iter()
            .filter(|a| *a != "NET_BIND_SERVICE")
            .cloned()
            .collect();
        if !beyond.is_empty() {
            adding.push(c.name.as_str());
            caps.extend(beyond);
        }
    }
    let mut details = Vec::new();
    if !missing_drop.is_empty() {
        details.push(format!(
            "{} must set securityContext.capabilities.drop=[\"ALL\"]",
            containers(&missing_drop)
        ));
    }
    if !adding.is_empty() {
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers(&adding),
            join_quote(&sorted(caps))
        ));
    }
    if details.is_empty() {
        return None;
    }
    forbid("unrestricted capabilities", details.join("; "))
}

fn capabilities_restricted_1_25(pod: &Pod) -> Option<Forbidden> {
    match pod.spec.is_windows() {
        true => None,
        false => capabilities_restricted(pod),
    }
}

pub const PROC_MOUNT_RESTRICTED: Check = Check {
    id: "procMount_restricted",
    level: Level::Restricted,
    versions: &[(35, proc_mount)],
    overrides: &["procMount"],
};
