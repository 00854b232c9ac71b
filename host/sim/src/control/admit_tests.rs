use super::super::super::status::ApiError;
use super::super::Controllers;
use super::super::testing::*;
use super::{Admissions, Admitted, Create};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const CONFIGS: &str = "validatingwebhookconfigurations.admissionregistration.k8s.io";
const REFUSAL: &str = "Internal error occurred: failed calling webhook \"pods.wink.test\": failed to call webhook: Post \"https://127.0.0.1:1/?timeout=10s\": dial tcp 127.0.0.1:1: connect: connection refused";

fn rs(n: i64) -> Value {
    json!({"metadata": {"name": "web-1"}, "spec": {"replicas": n,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}})
}

/// A state with a webhook configuration and a ReplicaSet of `n` replicas,
/// the controllers settled: the creates they queued.
fn waiting(n: i64) -> (super::super::State, Controllers, Vec<Create>) {
    let mut st = state();
    let hook = json!({"metadata": {"name": "pods"}, "webhooks": [{"name": "pods.wink.test",
        "clientConfig": {"url": "https://127.0.0.1:1/"},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
        "sideEffects": "None", "admissionReviewVersions": ["v1"]}]});
    create(&mut st, CONFIGS, None, "admissionregistration.k8s.io/v1", hook);
    create(&mut st, "replicasets.apps", Some("default"), "apps/v1", rs(n));
    let mut c = Controllers::default();
    settle_with(&mut c, &mut st);
    let creates = c.admit.take();
    (st, c, creates)
}

fn refused(c: Create) -> Admitted {
    Admitted {
        create: c,
        result: Err(ApiError::new(500, "InternalError", REFUSAL)),
    }
}

fn admitted(c: Create) -> Admitted {
    let pod = c.pod.clone();
    Admitted {
        create: c,
        result: Ok(pod),
    }
}

fn conditions(st: &super::super::State) -> Value {
    all(st, "replicasets.apps")[0]["status"]["conditions"].clone()
}

#[test]
fn with_a_webhook_configured_pods_wait_for_admission() {
    let (mut st, mut c, creates) = waiting(2);
    assert_eq!(all(&st, "pods").len(), 0, "nothing written in the round");
    assert_eq!(creates.len(), 2);
    assert!(creates.iter().all(|c| &*c.rs == "default/web-1"));
    assert_eq!(creates[0].pod["metadata"]["generateName"], "web-1-");
    // Nothing more is queued while they are being admitted.
    let mut again = all(&st, "replicasets.apps")[0].clone();
    again["metadata"]["labels"] = json!({"touched": "yes"});
    let def = st.registry.get("replicasets.apps").cloned().unwrap();
    super::write::update(&mut st, &def, Some("default"), "web-1", again, false).unwrap();
    settle_with(&mut c, &mut st);
    assert!(c.admit.take().is_empty());

    // Admitted (a webhook's label added): stored as admitted, and reported.
    let mut landed: Vec<Admitted> = creates.into_iter().map(admitted).collect();
    landed[0].result.as_mut().unwrap()["metadata"]["labels"]["mutated"] = json!("yes");
    c.admitted(&mut st, landed, Instant::now());
    settle_with(&mut c, &mut st);
    let pods = all(&st, "pods");
    assert_eq!(pods.len(), 2);
    assert_eq!(
        pods.iter()
            .filter(|p| p["metadata"]["labels"]["mutated"] == "yes")
            .count(),
        1
    );
    assert_eq!(all(&st, "replicasets.apps")[0]["status"]["replicas"], 2);
    assert!(c.admit.take().is_empty());
}

#[test]
fn a_refusal_is_an_event_a_condition_and_a_retry_after_a_backoff() {
    let (mut st, mut c, creates) = waiting(2);
    let t0 = Instant::now();
    c.admitted(&mut st, creates.into_iter().map(refused).collect(), t0);
    settle_with(&mut c, &mut st);
    assert_eq!(all(&st, "pods").len(), 0);
    let events = all(&st, "events");
    assert_eq!(events.len(), 1, "one Event, counted twice: {events:?}");
    let e = &events[0];
    assert_eq!(
        (e["type"].as_str(), e["reason"].as_str(), e["count"].as_i64()),
        (Some("Warning"), Some("FailedCreate"), Some(2))
    );
    assert_eq!(e["message"], format!("Error creating: {REFUSAL}"));
    assert_eq!(e["involvedObject"]["kind"], "ReplicaSet");
    assert_eq!(e["involvedObject"]["name"], "web-1");
    assert_eq!(e["source"]["component"], "replicaset-controller");
    let cond = conditions(&st);
    assert_eq!(cond[0]["type"], "ReplicaFailure", "{cond}");
    assert_eq!(
        (
            cond[0]["status"].as_str(),
            cond[0]["reason"].as_str(),
            cond[0]["message"].as_str()
        ),
        (Some("True"), Some("FailedCreate"), Some(REFUSAL))
    );

    // Held back until the backoff ends, then tried again.
    assert!(c.admit.take().is_empty());
    assert_eq!(c.admit.next_wake(), Some(t0 + Duration::from_secs(1)));
    assert!(!c.step_at(&mut st, t0 + Duration::from_millis(900)));
    assert!(c.admit.take().is_empty());
    c.step_at(&mut st, t0 + Duration::from_secs(1));
    let retry = c.admit.take();
    assert_eq!(retry.len(), 2);
    assert_eq!(c.admit.next_wake(), None);

    // Admitted this time: the Pods are stored and the condition goes.
    c.admitted(&mut st, retry.into_iter().map(admitted).collect(), t0);
    settle_with(&mut c, &mut st);
    assert_eq!(all(&st, "pods").len(), 2);
    assert_eq!(conditions(&st), Value::Null);
    assert_eq!(all(&st, "replicasets.apps")[0]["status"]["replicas"], 2);
}

#[test]
fn the_backoff_doubles_up_to_thirty_seconds() {
    let mut a = Admissions::default();
    let rs: std::sync::Arc<str> = "default/web-1".into();
    let mut t = Instant::now();
    let mut delays = Vec::new();
    for _ in 0..7 {
        a.refused(&rs, t);
        // Another refusal of the same batch counts once.
        a.refused(&rs, t);
        let until = a.next_wake().unwrap();
        delays.push((until - t).as_secs());
        assert!(!a.may_create(&rs, t));
        assert!(a.may_create(&rs, until));
        t = until;
    }
    assert_eq!(delays, [1, 2, 4, 8, 16, 30, 30]);
    a.succeeded(&rs);
    a.refused(&rs, t);
    assert_eq!(
        a.next_wake(),
        Some(t + Duration::from_secs(1)),
        "a success starts over"
    );
}

#[test]
fn an_admitted_pod_no_longer_wanted_is_not_stored() {
    let (mut st, mut c, creates) = waiting(2);
    let mut scaled = all(&st, "replicasets.apps")[0].clone();
    scaled["spec"]["replicas"] = json!(1);
    let def = st.registry.get("replicasets.apps").cloned().unwrap();
    super::write::update(&mut st, &def, Some("default"), "web-1", scaled, false).unwrap();
    c.admitted(
        &mut st,
        creates.into_iter().map(admitted).collect(),
        Instant::now(),
    );
    settle_with(&mut c, &mut st);
    assert_eq!(all(&st, "pods").len(), 1);
    // Nor one whose ReplicaSet was replaced by another of the same name.
    let (mut st, mut c, creates) = waiting(1);
    let rs_def = st.registry.get("replicasets.apps").cloned().unwrap();
    super::write::delete(&mut st, &rs_def, Some("default"), "web-1", &Default::default()).unwrap();
    create(&mut st, "replicasets.apps", Some("default"), "apps/v1", rs(0));
    c.admitted(
        &mut st,
        creates.into_iter().map(admitted).collect(),
        Instant::now(),
    );
    settle_with(&mut c, &mut st);
    assert_eq!(all(&st, "pods").len(), 0);
}

#[test]
fn with_the_configuration_gone_the_retry_writes_the_pods() {
    let (mut st, mut c, creates) = waiting(2);
    let t0 = Instant::now();
    c.admitted(&mut st, creates.into_iter().map(refused).collect(), t0);
    settle_with(&mut c, &mut st);
    let def = st.registry.get(CONFIGS).cloned().unwrap();
    super::write::delete(&mut st, &def, None, "pods", &Default::default()).unwrap();
    settle_with(&mut c, &mut st);
    assert_eq!(
        all(&st, "pods").len(),
        0,
        "nothing syncs it before its backoff ends"
    );
    c.step_at(&mut st, t0 + Duration::from_secs(1));
    settle_with(&mut c, &mut st);
    assert!(c.admit.take().is_empty(), "nothing to admit");
    assert_eq!(all(&st, "pods").len(), 2);
    assert_eq!(conditions(&st), Value::Null);
}

#[test]
fn scaled_down_to_what_it_has_a_replicaset_reports_no_failure() {
    let (mut st, mut c, creates) = waiting(1);
    c.admitted(
        &mut st,
        creates.into_iter().map(refused).collect(),
        Instant::now(),
    );
    settle_with(&mut c, &mut st);
    assert_eq!(conditions(&st)[0]["type"], "ReplicaFailure");
    let mut scaled = all(&st, "replicasets.apps")[0].clone();
    scaled["spec"]["replicas"] = json!(0);
    let def = st.registry.get("replicasets.apps").cloned().unwrap();
    super::write::update(&mut st, &def, Some("default"), "web-1", scaled, false).unwrap();
    settle_with(&mut c, &mut st);
    assert_eq!(conditions(&st), Value::Null);
    assert_eq!(c.admit.next_wake(), None, "no retry left");
}
