//! Which requests reach a webhook: rules (resources, operations, scope,
//! subresources), namespace and object selectors, service references,
//! the NamespaceLifecycle check before webhooks, and Equivalent matches.

use super::support::{hook, setup};
use crate::kubectl_support::have_kubectl;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_and_selectors_exclude_what_they_should() {
    if !have_kubectl() {
        return;
    }
    let s = setup("selectors").await;
    let ca = s.certs.ca_bundle();
    s.env.ok(&["create", "namespace", "quiet"]).await;
    s.env.ok(&["label", "namespace", "quiet", "webhooks=off"]).await;
    s.env.ok(&["create", "namespace", "loud"]).await;
    // Through a service reference, routed to the test server.
    s.env.sim.route_service("webhooks", "hook", 443, s.server.addr());
    let svc = json!({
        "name": "select.wink.test",
        "clientConfig": {"service": {"namespace": "webhooks", "name": "hook", "path": "/validate"}, "caBundle": ca},
        "rules": [{"operations": ["CREATE", "DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"], "scope": "Namespaced"}],
        "namespaceSelector": {"matchExpressions": [{"key": "webhooks", "operator": "NotIn", "values": ["off"]},
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["hushed"]}]},
        "objectSelector": {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["skipped"]}]},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    s.configure("ValidatingWebhookConfiguration", "select", vec![svc])
        .await;

    let excluded_ns = s.configmap("in-quiet", "quiet", json!({"forbidden": "x"}));
    s.env.ok(&["apply", "-f", &excluded_ns]).await;
    let excluded_obj = s.configmap("skipped", "loud", json!({"forbidden": "x"}));
    s.env.ok(&["apply", "-f", &excluded_obj]).await;
    assert!(
        s.reviews_of("in-quiet").is_empty(),
        "an excluded namespace's object is never sent"
    );
    // Namespaces carry kubernetes.io/metadata.name, as on a real server.
    s.env.ok(&["create", "namespace", "hushed"]).await;
    let by_name = s.configmap("in-hushed", "hushed", json!({"forbidden": "x"}));
    s.env.ok(&["apply", "-f", &by_name]).await;
    assert!(
        s.reviews_of("in-hushed").is_empty(),
        "a namespace excluded by name is never sent"
    );
    assert!(
        s.reviews_of("skipped").is_empty(),
        "an excluded object is never sent"
    );
    // Other resources and operations the rules leave out are never sent.
    s.env
        .ok(&[
            "create",
            "secret",
            "generic",
            "s",
            "-n",
            "loud",
            "--from-literal=forbidden=x",
        ])
        .await;
    assert!(s.reviews_of("s").is_empty());

    // A missing namespace is refused before any webhook is called.
    let lost = s.configmap("lost-ns", "missing", json!({"a": "1"}));
    let (ok, _, stderr) = s.env.run(&["apply", "-f", &lost]).await;
    assert!(!ok);
    assert!(stderr.contains("namespaces \"missing\" not found"), "{stderr}");
    assert!(s.reviews_of("lost-ns").is_empty());

    let sent = s.configmap("sent", "loud", json!({"forbidden": "x"}));
    let (ok, _, stderr) = s.env.run(&["apply", "-f", &sent]).await;
    assert!(!ok);
    assert!(
        stderr.contains("admission webhook \"select.wink.test\" denied the request"),
        "{stderr}"
    );
    assert_eq!(s.reviews_of("sent").len(), 1);
    assert_eq!(s.env.sim.webhook_calls("select.wink.test"), 1);

    // DELETE: the old object is sent, the object is null.
    let fine = s.configmap("fine", "loud", json!({"a": "1"}));
    s.env.ok(&["apply", "-f", &fine]).await;
    s.env.ok(&["delete", "configmap", "fine", "-n", "loud"]).await;
    let del = s
        .reviews_of("fine")
        .into_iter()
        .find(|r| r["request"]["operation"] == "DELETE")
        .expect("a DELETE review");
    assert_eq!(del["request"]["object"], Value::Null);
    assert_eq!(del["request"]["oldObject"]["data"]["a"], "1");
    assert_eq!(del["request"]["options"]["kind"], "DeleteOptions");

    // An unrouted service fails as an unknown host does.
    let unrouted = json!({
        "name": "nowhere.wink.test",
        "clientConfig": {"service": {"namespace": "webhooks", "name": "nowhere"}, "caBundle": ca},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    s.configure("ValidatingWebhookConfiguration", "nowhere", vec![unrouted])
        .await;
    let f = s.configmap("lost", "loud", json!({"a": "1"}));
    let (ok, _, stderr) = s.env.run(&["apply", "-f", &f]).await;
    assert!(!ok);
    assert!(
        stderr.contains(
            "failed calling webhook \"nowhere.wink.test\": failed to call webhook: Post \"https://nowhere.webhooks.svc:443/?timeout=10s\": dial tcp: lookup nowhere.webhooks.svc"
        ),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_subresource_rules_through_the_api() {
    if !have_kubectl() {
        return;
    }
    let s = setup("status").await;
    let ca = s.certs.ca_bundle();
    s.configure(
        "MutatingWebhookConfiguration",
        "status",
        vec![hook(
            "status.wink.test",
            &s.server.url("/mutate"),
            &ca,
            json!({"rules": [{"operations": ["UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments/status"]}]}),
        )],
    )
    .await;
    let dep = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}});
    let f = s.file("dep.json", &dep);
    s.env.ok(&["apply", "-f", &f]).await;
    assert!(
        s.reviews_of("web").is_empty(),
        "the main resource is not named by the rule"
    );
    s.env
        .ok(&[
            "patch",
            "deployment",
            "web",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"observedGeneration":1}}"#,
        ])
        .await;
    let reviews = s.reviews_of("web");
    assert_eq!(reviews.len(), 1);
    assert_eq!(reviews[0]["request"]["subResource"], "status");
    assert_eq!(reviews[0]["request"]["requestSubResource"], "status");
    assert_eq!(reviews[0]["request"]["kind"]["kind"], "Deployment");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn equivalent_events_are_sent_as_the_webhooks_version() {
    if !have_kubectl() {
        return;
    }
    let s = setup("equivalent").await;
    let rules = json!({"rules": [{"operations": ["CREATE"], "apiGroups": ["events.k8s.io"], "apiVersions": ["v1"], "resources": ["events"]}]});
    let h = hook(
        "events.wink.test",
        &s.server.url("/mutate"),
        &s.certs.ca_bundle(),
        rules,
    );
    s.configure("MutatingWebhookConfiguration", "events", vec![h])
        .await;
    let ev = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "ev", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}, "reason": "Tested",
        "message": "through core/v1", "type": "Normal"});
    let f = s.file("ev.json", &ev);
    s.env.ok(&["create", "-f", &f]).await;
    let reviews = s.reviews_of("ev");
    assert_eq!(reviews.len(), 1);
    let req = &reviews[0]["request"];
    assert_eq!(
        req["kind"],
        json!({"group": "events.k8s.io", "version": "v1", "kind": "Event"})
    );
    assert_eq!(
        req["requestKind"],
        json!({"group": "", "version": "v1", "kind": "Event"})
    );
    assert_eq!(req["object"]["apiVersion"], "events.k8s.io/v1");
    assert_eq!(req["object"]["note"], "through core/v1");
    let stored = s.env.json(&["get", "events.v1.", "ev", "-o", "json"]).await;
    assert_eq!(
        stored["metadata"]["labels"]["mutated"], "yes",
        "the patch lands in the stored Event"
    );
    assert_eq!(stored["message"], "through core/v1");
}
