//! The registry's version and override rules, and each family's messages.

use super::*;
use crate::version::{Level, LevelVersion, Version};
use wink_sdk::serde_json::{self, json};

fn lv(level: Level, minor: Option<u32>) -> LevelVersion {
    LevelVersion {
        level,
        version: minor.map_or(Version::Latest, Version::Minor),
    }
}

fn ids(level: Level, minor: Option<u32>) -> Vec<&'static str> {
    applicable(lv(level, minor)).iter().map(|(c, _)| c.id).collect()
}

fn failed(level: Level, minor: Option<u32>, pod: serde_json::Value) -> Vec<(&'static str, String)> {
    let pod: Pod = serde_json::from_value(pod).expect("a pod");
    evaluate(lv(level, minor), &pod)
        .into_iter()
        .filter_map(|o| {
            o.forbidden
                .map(|f| (o.id, format!("{} ({})", f.reason, f.detail)))
        })
        .collect()
}

#[test]
fn checks_come_and_go_with_versions_and_overrides() {
    assert!(ids(Level::Privileged, None).is_empty());
    let baseline = ids(Level::Baseline, None);
    assert_eq!(baseline.len(), 12, "{baseline:?}");
    assert!(baseline.contains(&"hostProbesAndHostLifecycle"));
    assert!(!ids(Level::Baseline, Some(33)).contains(&"hostProbesAndHostLifecycle"));
    let restricted = ids(Level::Restricted, None);
    for gone in [
        "capabilities_baseline",
        "hostPathVolumes",
        "seccompProfile_baseline",
        "procMount",
    ] {
        assert!(
            !restricted.contains(&gone),
            "{gone} is overridden: {restricted:?}"
        );
    }
    assert_eq!(restricted.len(), 15, "{restricted:?}");
    // Before a Restricted check exists, the Baseline one it overrides runs.
    let old = ids(Level::Restricted, Some(7));
    for kept in ["capabilities_baseline", "seccompProfile_baseline", "procMount"] {
        assert!(old.contains(&kept), "{kept}: {old:?}");
    }
    assert!(!old.contains(&"allowPrivilegeEscalation") && !old.contains(&"runAsUser"));
    assert!(ids(Level::Restricted, Some(8)).contains(&"allowPrivilegeEscalation"));
    // A version newer than any check knows is the newest.
    assert_eq!(ids(Level::Restricted, Some(99)), restricted);
}

#[test]
fn a_privileged_pod_fails_with_podsecuritys_words() {
    let got = failed(
        Level::Baseline,
        None,
        json!({"spec": {"hostNetwork": true, "containers": [
            {"name": "a", "securityContext": {"privileged": true, "capabilities": {"add": ["NET_RAW", "CHOWN"]}},
             "ports": [{"containerPort": 80, "hostPort": 80}]}]}}),
    );
    assert_eq!(
        got,
        [
            (
                "capabilities_baseline",
                r#"non-default capabilities (container "a" must not include "NET_RAW" in securityContext.capabilities.add)"#.to_string()
            ),
            ("hostNamespaces", "host namespaces (hostNetwork=true)".to_string()),
            ("hostPorts", r#"hostPort (container "a" uses hostPort 80)"#.to_string()),
            (
                "privileged",
                r#"privileged (container "a" must not set securityContext.privileged=true)"#.to_string()
            ),
        ]
    );
}

#[test]
fn sysctls_and_selinux_types_widen_with_versions() {
    let pod = json!({"spec": {"securityContext": {"sysctls": [{"name": "net.ipv4.tcp_rmem"}]}}});
    assert_eq!(failed(Level::Baseline, Some(31), pod.clone()).len(), 1);
    assert!(failed(Level::Baseline, Some(32), pod).is_empty());
    let pod = json!({"spec": {"securityContext": {"seLinuxOptions": {"type": "container_engine_t"}}}});
    assert_eq!(
        failed(Level::Baseline, Some(30), pod.clone())[0].0,
        "seLinuxOptions"
    );
    assert!(failed(Level::Baseline, Some(31), pod).is_empty());
}

#[test]
fn a_restricted_pod_passes_and_its_gaps_are_named() {
    let good = json!({"spec": {"securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "a", "securityContext": {"allowPrivilegeEscalation": false,
            "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}}],
        "volumes": [{"name": "d", "emptyDir": {}}, {"name": "i", "image": {"reference": "x"}}]}});
    assert!(failed(Level::Restricted, None, good).is_empty());
    let bare = json!({"spec": {"containers": [{"name": "a"}], "volumes": [{"name": "h", "hostPath": {"path": "/"}}]}});
    let got: Vec<&str> = failed(Level::Restricted, None, bare.clone())
        .iter()
        .map(|(id, _)| *id)
        .collect();
    assert_eq!(
        got,
        [
            "allowPrivilegeEscalation",
            "capabilities_restricted",
            "restrictedVolumes",
            "runAsNonRoot",
            "seccompProfile_restricted"
        ]
    );
    let got = failed(Level::Restricted, None, bare);
    assert_eq!(
        got[2].1,
        r#"restricted volume types (volume "h" uses restricted volume type "hostPath")"#
    );
    // Windows Pods are exempt from the Linux-only checks from v1.25.
    let windows = json!({"spec": {"os": {"name": "windows"}, "securityContext": {"runAsNonRoot": true},
        "containers": [{"name": "a"}]}});
    assert!(failed(Level::Restricted, Some(25), windows.clone()).is_empty());
    assert_eq!(failed(Level::Restricted, Some(24), windows).len(), 3);
}

#[test]
fn user_namespaces_relax_uid_and_proc_mount_checks_from_v1_35() {
    let pod = json!({"spec": {"hostUsers": false, "securityContext": {"runAsUser": 0, "seccompProfile": {"type": "Localhost"}},
        "containers": [{"name": "a", "securityContext": {"procMount": "Unmasked", "allowPrivilegeEscalation": false,
            "capabilities": {"drop": ["ALL"]}}}]}});
    assert!(failed(Level::Baseline, None, pod.clone()).is_empty());
    assert_eq!(failed(Level::Baseline, Some(34), pod.clone())[0].0, "procMount");
    let restricted: Vec<&str> = failed(Level::Restricted, None, pod.clone())
        .iter()
        .map(|(id, _)| *id)
        .collect();
    assert_eq!(restricted, ["procMount_restricted"]);
    let older: Vec<&str> = failed(Level::Restricted, Some(34), pod)
        .iter()
        .map(|(id, _)| *id)
        .collect();
    assert_eq!(older, ["procMount", "runAsNonRoot", "runAsUser"]);
}
