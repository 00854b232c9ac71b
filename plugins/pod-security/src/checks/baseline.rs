//! Baseline checks on security settings: AppArmor, added capabilities,
//! `/proc` mounts, SELinux options, seccomp profiles and sysctls.

use super::{Check, Forbidden, containers, forbid, join_quote, pluralize, sorted};
use crate::pod::{Pod, Profile, SeLinuxOptions};
use crate::version::Level;

pub const APP_ARMOR_PROFILE: Check = Check {
    id: "appArmorProfile",
    level: Level::Baseline,
    versions: &[(0, app_armor_profile)],
    overrides: &[],
};

const APP_ARMOR_ANNOTATION: &str = "container.apparmor.security.beta.kubernetes.io/";

/// A profile type that is not `RuntimeDefault` or `Localhost`.
fn unconfined(profile: &Option<Profile>) -> Option<String> {
    let t = &profile.as_ref()?.type_;
    (t != "RuntimeDefault" && t != "Localhost").then(|| t.clone())
}

fn app_armor_profile(pod: &Pod) -> Option<Forbidden> {
    let mut forbidden = Vec::new();
    let pod_type = pod
        .spec
        .security_context
        .as_ref()
        .and_then(|s| unconfined(&s.app_armor_profile));
    if let Some(t) = pod_type {
        forbidden.push(format!(
            "pod must not set securityContext.appArmorProfile.type to {t:?}"
        ));
    }
    for c in pod.spec.containers() {
        if let Some(t) = c
            .security_context
            .as_ref()
            .and_then(|s| unconfined(&s.app_armor_profile))
        {
            forbidden.push(format!(
                "container {:?} must not set securityContext.appArmorProfile.type to {t:?}",
                c.name
            ));
        }
    }
    let mut annotations: Vec<String> = pod
        .metadata
        .annotations
        .iter()
        .filter(|(k, _)| k.starts_with(APP_ARMOR_ANNOTATION))
        .filter(|(_, v)| !(v.is_empty() || *v == "runtime/default" || v.starts_with("localhost/")))
        .map(|(k, v)| format!("{k}={v:?}"))
        .collect();
    annotations.sort();
    forbidden.extend(annotations);
    if forbidden.is_empty() {
        return None;
    }
    forbid(
        pluralize(
            "forbidden AppArmor profile",
            "forbidden AppArmor profiles",
            forbidden.len(),
        ),
        forbidden.join(", "),
    )
}

pub const CAPABILITIES_BASELINE: Check = Check {
    id: "capabilities_baseline",
    level: Level::Baseline,
    versions: &[(0, capabilities_baseline)],
    overrides: &[],
};

/// The capabilities a Baseline container may add.
const BASELINE_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// Baseline's rule on added capabilities (Restricted's before v1.22).
fn capabilities_baseline(pod: &Pod) -> Option<Forbidden> {
    let mut bad = Vec::new();
    let mut caps = Vec::new();
    for c in pod.spec.containers() {
        let Some(added) = c.security_context.as_ref().and_then(|s| s.capabilities.as_ref()) else {
            continue;
        };
        let beyond: Vec<String> = added
            .add
            .iter()
            .filter(|cap| !BASELINE_CAPABILITIES.contains(&cap.as_str()))
            .cloned()
            .collect();
        if !beyond.is_empty() {
            bad.push(c.name.as_str());
            caps.extend(beyond);
        }
    }
    if bad.is_empty() {
        return None;
    }
    forbid(
        "non-default capabilities",
        format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers(&bad),
            join_quote(&sorted(caps))
        ),
    )
}

pub const PROC_MOUNT: Check = Check {
    id: "procMount",
    level: Level::Baseline,
    versions: &[(0, proc_mount), (35, proc_mount_1_35)],
    overrides: &[],
};

/// Every container's `procMount` must be unset or `Default`.
pub(super) fn proc_mount(pod: &Pod) -> Option<Forbidden> {
    let mut bad = Vec::new();
    let mut types = Vec::new();
    for c in pod.spec.containers() {
        let set = c.security_context.as_ref().and_then(|s| s.proc_mount.as_ref());
        if let Some(t) = set.filter(|t| *t != "Default") {
            bad.push(c.name.as_str());
            types.push(t.clone());
        }
    }
    if bad.is_empty() {
        return None;
    }
    forbid(
        "procMount",
        format!(
            "{} must not set securityContext.procMount to {}",
            containers(&bad),
            join_quote(&sorted(types))
        ),
    )
}

/// From v1.35 a Pod in a user namespace may mount `/proc` as it likes.
fn proc_mount_1_35(pod: &Pod) -> Option<Forbidden> {
    match pod.spec.in_user_namespace() {
        true => None,
        false => proc_mount(pod),
    }
}

pub const SE_LINUX_OPTIONS: Check = Check {
    id: "seLinuxOptions",
    level: Level::Baseline,
    versions: &[(0, se_linux_options_1_0), (31, se_linux_options_1_31)],
    overrides: &[],
};

const SELINUX_TYPES_1_0: [&str; 4] = ["", "container_t", "container_init_t", "container_kvm_t"];
const SELINUX_TYPES_1_31: [&str; 5] = [
    "",
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

fn se_linux_options_1_0(pod: &Pod) -> Option<Forbidden> {
    se_linux_options(pod, &SELINUX_TYPES_1_0)
}

fn se_linux_options_1_31(pod: &Pod) -> Option<Forbidden> {
    se_linux_options(pod, &SELINUX_TYPES_1_31)
}

fn se_linux_options(pod: &Pod, allowed: &[&str]) -> Option<Forbidden> {
    let (mut types, mut user, mut role) = (Vec::new(), false, false);
    let mut valid = |o: &SeLinuxOptions| {
        let mut ok = true;
        if !allowed.contains(&o.type_.as_str()) {
            types.push(o.type_.clone());
            ok = false;
        }
        if !o.user.is_empty() {
            user = true;
            ok = false;
        }
        if !o.role.is_empty() {
            role = true;
            ok = false;
        }
        ok
    };
    let mut setters = Vec::new();
    let pod_options = pod
        .spec
        .security_context
        .as_ref()
        .and_then(|s| s.se_linux_options.as_ref());
    if pod_options.is_some_and(|o| !valid(o)) {
        setters.push("pod".to_string());
    }
    let bad: Vec<&str> = pod
        .spec
        .containers()
        .filter(|c| {
            c.security_context
                .as_ref()
                .and_then(|s| s.se_linux_options.as_ref())
                .is_some_and(|o| !valid(o))
        })
        .map(|c| c.name.as_str())
        .collect();
    if !bad.is_empty() {
        setters.push(containers(&bad));
    }
    if setters.is_empty() {
        return None;
    }
    let mut what = Vec::new();
    let types = sorted(types);
    if !types.is_empty() {
        what.push(format!(
            "{} {}",
            pluralize("type", "types", types.len()),
            join_quote(&types)
        ));
    }
    if user {
        what.push("user may not be set".to_string());
    }
    if role {
        what.push("role may not be set".to_string());
    }
    forbid(
        "seLinuxOptions",
        format!(
            "{} set forbidden securityContext.seLinuxOptions: {}",
            setters.join(" and "),
            what.join("; ")
        ),
    )
}

pub const SECCOMP_PROFILE_BASELINE: Check = Check {
    id: "seccompProfile_baseline",
    level: Level::Baseline,
    versions: &[(0, seccomp_annotations), (19, seccomp_fields_baseline)],
    overrides: &[],
};

const SECCOMP_POD: &str = "seccomp.security.alpha.kubernetes.io/pod";
const SECCOMP_CONTAINER: &str = "container.seccomp.security.alpha.kubernetes.io/";

/// Before v1.19 seccomp was set by annotations.
fn seccomp_annotations(pod: &Pod) -> Option<Forbidden> {
    let valid = |v: &str| v == "runtime/default" || v == "docker/default" || v.starts_with("localhost/");
    let notes = &pod.metadata.annotations;
    let mut bad = Vec::new();
    if let Some(v) = notes.get(SECCOMP_POD).filter(|v| !valid(v)) {
        bad.push(format!("{SECCOMP_POD}={v:?}"));
    }
    for c in pod.spec.containers() {
        let key = format!("{SECCOMP_CONTAINER}{}", c.name);
        if let Some(v) = notes.get(&key).filter(|v| !valid(v)) {
            bad.push(format!("{key}={v:?}"));
        }
    }
    if bad.is_empty() {
        return None;
    }
    let bad = sorted(bad);
    forbid(
        "seccompProfile",
        format!(
            "forbidden {} {}",
            pluralize("annotation", "annotations", bad.len()),
            bad.join(", ")
        ),
    )
}

/// `RuntimeDefault` or `Localhost`.
pub(super) fn valid_seccomp(t: &str) -> bool {
    t == "RuntimeDefault" || t == "Localhost"
}

/// From v1.19: a seccomp profile set anywhere must be an allowed one.
fn seccomp_fields_baseline(pod: &Pod) -> Option<Forbidden> {
    let mut setters = Vec::new();
    let mut values = Vec::new();
    let pod_profile = pod
        .spec
        .security_context
        .as_ref()
        .and_then(|s| s.seccomp_profile.as_ref());
    if let Some(p) = pod_profile.filter(|p| !valid_seccomp(&p.type_)) {
        setters.push("pod".to_string());
        values.push(p.type_.clone());
    }
    let mut bad = Vec::new();
    for c in pod.spec.containers() {
        let profile = c
            .security_context
            .as_ref()
            .and_then(|s| s.seccomp_profile.as_ref());
        if let Some(p) = profile.filter(|p| !valid_seccomp(&p.type_)) {
            bad.push(c.name.as_str());
            values.push(p.type_.clone());
        }
    }
    if !bad.is_empty() {
        setters.push(containers(&bad));
    }
    if setters.is_empty() {
        return None;
    }
    forbid(
        "seccompProfile",
        format!(
            "{} must not set securityContext.seccompProfile.type to {}",
            setters.join(" and "),
            join_quote(&sorted(values))
        ),
    )
}

pub const SYSCTLS: Check = Check {
    id: "sysctls",
    level: Level::Baseline,
    versions: &[
        (0, sysctls_1_0),
        (27, sysctls_1_27),
        (29, sysctls_1_29),
        (32, sysctls_1_32),
    ],
    overrides: &[],
};

/// The safe sysctls, each with the minor version from which it is safe.
const SAFE_SYSCTLS: [(&str, u32); 12] = [
    ("kernel.shm_rmid_forced", 0),
    ("net.ipv4.ip_local_port_range", 0),
    ("net.ipv4.tcp_syncookies", 0),
    ("net.ipv4.ping_group_range", 0),
    ("net.ipv4.ip_unprivileged_port_start", 0),
    ("net.ipv4.ip_local_reserved_ports", 27),
    ("net.ipv4.tcp_keepalive_time", 29),
    ("net.ipv4.tcp_fin_timeout", 29),
    ("net.ipv4.tcp_keepalive_intvl", 29),
    ("net.ipv4.tcp_keepalive_probes", 29),
    ("net.ipv4.tcp_rmem", 32),
    ("net.ipv4.tcp_wmem", 32),
];

fn sysctls_1_0(pod: &Pod) -> Option<Forbidden> {
    sysctls(pod, 0)
}

fn sysctls_1_27(pod: &Pod) -> Option<Forbidden> {
    sysctls(pod, 27)
}

fn sysctls_1_29(pod: &Pod) -> Option<Forbidden> {
    sysctls(pod, 29)
}

fn sysctls_1_32(pod: &Pod) -> Option<Forbidden> {
    sysctls(pod, 32)
}

fn sysctls(pod: &Pod, minor: u32) -> Option<Forbidden> {
    let safe = |name: &str| SAFE_SYSCTLS.iter().any(|(s, from)| *s == name && *from <= minor);
    let bad: Vec<&str> = pod
        .spec
        .security_context
        .iter()
        .flat_map(|s| &s.sysctls)
        .map(|s| s.name.as_str())
        .filter(|name| !safe(name))
        .collect();
    if bad.is_empty() {
        return None;
    }
    forbid("forbidden sysctls", bad.join(", "))
}
