//! End-to-end: an exception limited to one webhook of a plugin that has
//! two. `admit-probe` (as `probe`) refuses a Pod labelled `deny` at its
//! validating webhook and labels every Pod `probed: "yes"` at its mutating
//! one. A WinkException naming only `validate` lets a `deny` Pod in with
//! the exception's warning, and the mutate still patches it; the same
//! exception moved to `mutate` leaves the Pod unpatched and the validate
//! refusing again: on the simulated API server here, on a real one in
//! `real_exceptions.rs`.

use crate::cache_support::*;
use crate::exceptions::{EXCEPTIONS, apply, kubectl, wink_args};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// The plugin's name.
pub const PROBE: &str = "probe";

/// The exception: `probe`'s `webhook` alone, for `team`'s Pods labelled `legacy`.
pub fn one_webhook(ns: &str, team: &str, webhook: &str) -> Value {
    json!({
        "apiVersion": "wink.dev/v1alpha1",
        "kind": "WinkException",
        "metadata": {"name": "legacy-probe", "namespace": ns},
        "spec": {
            "plugins": [{"name": PROBE, "webhooks": [webhook]}],
            "match": {"namespaces": [team], "kinds": ["Pod"],
                      "objectSelector": {"matchLabels": {"legacy": "yes"}}},
            "reason": "legacy Pods keep their labels"
        }
    })
}

/// What became of a Pod `kubectl create` was asked for.
#[derive(Debug)]
pub enum Created {
    /// Refused: what kubectl said.
    Refused(String),
    /// Stored: kubectl's warnings and the Pod's labels as stored.
    Stored(String, Value),
}

/// `kubectl create` of a Pod `name` in `ns` with `labels` (deleted again
/// when stored).
pub fn create(kubeconfig: &Path, ns: &str, name: &str, labels: Value) -> Created {
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]}});
    let (ok, out, err) = kubectl(
        kubeconfig,
        &["create", "--validate=false", "-o", "json", "-f", "-"],
        Some(&pod.to_string()),
    );
    if !ok {
        return Created::Refused(format!("{out}{err}"));
    }
    let stored: Value = serde_json::from_str(&out).unwrap();
    let (deleted, _, why) = kubectl(
        kubeconfig,
        &["-n", ns, "delete", "pod", name, "--wait=false"],
        None,
    );
    assert!(deleted, "{why}");
    Created::Stored(err, stored["metadata"]["labels"].clone())
}

/// Create Pods (`prefix-N`, labelled `labels`) until `done` holds for
/// what became of one; that one.
pub fn until_created(
    kubeconfig: &Path,
    ns: &str,
    prefix: &str,
    labels: &Value,
    done: impl Fn(&Created) -> bool,
) -> Created {
    let deadline = Instant::now() + WAIT;
    let mut n = 0;
    loop {
        n += 1;
        let got = create(kubeconfig, ns, &format!("{prefix}-{n}"), labels.clone());
        if done(&got) {
            return got;
        }
        assert!(Instant::now() < deadline, "{prefix} in {ns}: still {got:?}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The exception at one webhook, then the other, on the cluster of
/// `kubeconfig` where wink runs `probe` reading exceptions in `exceptions`.
pub fn one_webhook_excepted(kubeconfig: &Path, exceptions: &str, team: &str) {
    let legacy = json!({"legacy": "yes", "deny": "yes"});
    let warning = format!("Warning: excepted by WinkException {exceptions}/legacy-probe: legacy Pods");
    // No exception: the validate refuses it.
    let refused = |c: &Created| matches!(c, Created::Refused(why) if why.contains("is labelled deny"));
    until_created(kubeconfig, team, "before", &legacy, refused);

    // Excepted from the validate alone: let in with the warning, and the
    // mutate still labels it.
    apply(kubeconfig, &one_webhook(exceptions, team, "validate"));
    let stored = |c: &Created| matches!(c, Created::Stored(..));
    let Created::Stored(said, labels) = until_created(kubeconfig, team, "validate", &legacy, stored) else {
        unreachable!()
    };
    assert!(said.contains(&warning), "{said}");
    assert_eq!(labels["probed"], "yes", "the mutate patched it: {labels}");
    assert_eq!(labels["deny"], "yes", "{labels}");

    // Moved to the mutate: the validate refuses it again.
    apply(kubeconfig, &one_webhook(exceptions, team, "mutate"));
    let why = match until_created(kubeconfig, team, "mutate", &legacy, refused) {
        Created::Refused(why) => why,
        other => panic!("{other:?}"),
    };
    assert!(why.contains("admit-probe: pod mutate-"), "{why}");
    // And a Pod it lets in is not patched, with the exception's warning
    // (the mutate's) and the validate's own.
    let plain = json!({"legacy": "yes"});
    let Created::Stored(said, labels) = until_created(kubeconfig, team, "plain", &plain, stored) else {
        unreachable!()
    };
    assert!(said.contains(&warning), "{said}");
    assert!(said.contains("admit-probe: checked plain-"), "{said}");
    assert_eq!(labels, json!({"legacy": "yes"}), "the mutate was not asked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exception_at_the_validate_alone_lets_the_mutate_patch() {
    let sim = wink_sim::Sim::start(wink_sim::SimConfig::default())
        .await
        .unwrap();
    for ns in ["team", EXCEPTIONS] {
        namespace(&sim, ns).await;
    }
    let s = Setup::new("exceptions_webhooks", &sim);
    s.install("admit_probe", PROBE, None);
    let args = wink_args(free_port(), EXCEPTIONS);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let wink = s.run(&args);
    wait_synced(&wink, PROBE);
    let kubeconfig = s.kubeconfig.clone();
    let played =
        tokio::task::spawn_blocking(move || one_webhook_excepted(&kubeconfig, EXCEPTIONS, "team")).await;
    let lines = wink.lines();
    assert!(played.is_ok(), "{played:?}\n{lines:#?}");
}
