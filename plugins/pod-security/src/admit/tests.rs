//! The door's answers: denials and warnings in PodSecurity's words, labels
//! over defaults, templates only warned, exemptions and insignificant
//! updates.

use super::*;
use crate::config;
use wink_sdk::serde_json::{self, json};

fn pod(v: Value) -> Pod {
    serde_json::from_value(v).expect("a pod")
}

fn privileged() -> Value {
    json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "securityContext": {"privileged": true}}]}})
}

fn policy(labels: &[(&str, &str)]) -> NamespacePolicy {
    let config = config::parse(r#"{"defaults": {"warn": "restricted"}}"#).unwrap();
    NamespacePolicy::of(&config, |k| {
        labels.iter().find(|(key, _)| *key == k).map(|(_, v)| *v)
    })
}

#[test]
fn a_pod_failing_enforce_is_refused_in_podsecuritys_words() {
    let d = judge(&policy(&[]), &pod(privileged()), false);
    assert_eq!(
        d.denied.as_deref(),
        Some(
            r#"violates PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)"#
        )
    );
    assert!(d.warnings.is_empty(), "{d:?}");
    assert!(
        d.annotations
            .contains(&(FAILED_CHECKS.to_string(), "privileged".to_string()))
    );
    // The namespace's labels win over the config's defaults.
    let open = policy(&[("pod-security.kubernetes.io/enforce", "privileged")]);
    let d = judge(&open, &pod(privileged()), false);
    assert_eq!(d.denied, None);
    assert_eq!(d.warnings.len(), 1, "{d:?}");
    // Baseline's failures first, then Restricted's, as PodSecurity orders them.
    let warning = &d.warnings[0];
    assert!(
        warning.starts_with(r#"would violate PodSecurity "restricted:latest": privileged ("#)
            && warning.contains(r#"), allowPrivilegeEscalation != false (container "c" must set"#),
        "{warning}"
    );
}

#[test]
fn a_template_is_warned_never_refused() {
    let d = judge(&policy(&[]), &pod(privileged()), true);
    assert_eq!(d.denied, None);
    assert!(
        d.warnings[0].starts_with(r#"would violate PodSecurity "baseline:latest": privileged"#),
        "{d:?}"
    );
    assert!(
        d.warnings[1].starts_with(r#"would violate PodSecurity "restricted:latest""#),
        "{d:?}"
    );
    let deployment = json!({"spec": {"template": privileged()}});
    assert_eq!(template("Deployment", &deployment), Some(privileged()));
    let cron = json!({"spec": {"jobTemplate": {"spec": {"template": privileged()}}}});
    assert_eq!(template("CronJob", &cron), Some(privileged()));
    assert_eq!(template("ConfigMap", &deployment), None);
}

#[test]
fn bad_labels_warn_and_fall_back_to_restricted_latest() {
    let p = policy(&[
        ("pod-security.kubernetes.io/enforce", "strict"),
        ("pod-security.kubernetes.io/enforce-version", "1.2"),
    ]);
    assert_eq!(p.enforce.to_string(), "restricted:latest");
    let d = judge(&p, &pod(json!({"spec": {"containers": [{"name": "c"}]}})), false);
    assert!(d.denied.is_some());
    assert_eq!(d.warnings.len(), 2, "{d:?}");
}

#[test]
fn exemptions_name_what_exempts() {
    let c = config::parse(
        r#"{"exemptions": {"usernames": ["ci"], "runtimeClasses": ["kata"], "namespaces": ["kube-system"]}}"#,
    )
    .unwrap();
    let plain = pod(json!({"spec": {}}));
    let kata = pod(json!({"spec": {"runtimeClassName": "kata"}}));
    let asked = |username, namespace| Asked { username, namespace };
    assert_eq!(
        exempt(&c, &asked("dev", "kube-system"), &plain),
        Some("namespace")
    );
    assert_eq!(exempt(&c, &asked("ci", "team-a"), &plain), Some("user"));
    assert_eq!(exempt(&c, &asked("dev", "team-a"), &kata), Some("runtimeClass"));
    assert_eq!(exempt(&c, &asked("dev", "team-a"), &plain), None);
}

#[test]
fn only_updates_of_what_podsecurity_reads_are_significant() {
    let old =
        json!({"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}});
    let relabelled = json!({"metadata": {"labels": {"a": "2"}, "annotations": {"note": "x"}},
        "spec": {"containers": [{"name": "c", "image": "x:2"}]}});
    assert!(!significant(&old, &relabelled));
    let escalated = json!({"spec": {"containers": [{"name": "c", "image": "x:1", "securityContext": {"privileged": true}}]}});
    assert!(significant(&old, &escalated));
    let annotated = json!({"metadata": {"annotations": {"container.apparmor.security.beta.kubernetes.io/c": "unconfined"}},
        "spec": {"containers": [{"name": "c", "image": "x:1"}]}});
    assert!(significant(&old, &annotated));
}
