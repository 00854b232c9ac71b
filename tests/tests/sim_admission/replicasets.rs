//! The control plane's ReplicaSet controller creates its Pods through
//! admission, as kube-controller-manager creates them through the API: a
//! Fail webhook that is down holds a Deployment's Pods back (a FailedCreate
//! Warning Event and the ReplicaFailure condition on its ReplicaSet) until
//! the webhook is back and the retry creates them; a webhook whose
//! namespaceSelector leaves a namespace out holds nothing back there; a
//! mutating webhook's patch shows on the Pods. Through real `kubectl`.

use super::support::{Setup, hook, setup_with};
use crate::kubectl_support::have_kubectl;
use serde_json::{Value, json};
use std::time::Duration;
use wink_sim::SimConfig;

const USER: &str = "system:serviceaccount:kube-system:replicaset-controller";

async fn control(name: &str) -> Setup {
    let config = SimConfig {
        control_plane: true,
        ..Default::default()
    };
    setup_with(name, config).await
}

/// A webhook on Pod CREATE calling `client_config`, with `extra` fields.
fn pods_hook(name: &str, client_config: Value, extra: Value) -> Value {
    let rules =
        json!([{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]);
    let mut h = hook(name, "", "", json!({"rules": rules}));
    h["clientConfig"] = client_config;
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        h[k] = v;
    }
    h
}

fn replica_failure(rs: &Value) -> Option<&Value> {
    rs.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == "ReplicaFailure")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fail_webhook_that_is_down_holds_back_a_replicasets_pods_until_it_is_back() {
    if !have_kubectl() {
        return;
    }
    let s = control("rs-down").await;
    // The webhook's service is routed to a port nobody listens on.
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    s.env.sim.route_service("webhooks", "hook", 443, dead);
    let service = json!({"service": {"namespace": "webhooks", "name": "hook", "path": "/allow"},
        "caBundle": s.certs.ca_bundle()});
    let not_free = json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name",
        "operator": "NotIn", "values": ["free"]}]});
    s.configure(
        "ValidatingWebhookConfiguration",
        "pods-guard",
        vec![pods_hook(
            "pods.wink.test",
            service,
            json!({"failurePolicy": "Fail", "namespaceSelector": not_free}),
        )],
    )
    .await;
    s.env.ok(&["create", "namespace", "free"]).await;
    for ns in ["default", "free"] {
        s.env
            .ok(&[
                "create",
                "deployment",
                "web",
                "--image=nginx",
                "--replicas=2",
                "-n",
                ns,
            ])
            .await;
    }

    // The namespace the selector leaves out gets its Pods.
    s.env
        .until("the Pods in free", &["get", "pods", "-n", "free"], |p| {
            p.len() == 2
        })
        .await;

    // The other one: a FailedCreate Event on the ReplicaSet, and its condition.
    let events = s
        .env
        .until(
            "a FailedCreate Event",
            &["get", "events", "--field-selector", "reason=FailedCreate"],
            |e| !e.is_empty(),
        )
        .await;
    let e = &events[0];
    assert_eq!(e["type"], "Warning", "{e}");
    assert_eq!(e["involvedObject"]["kind"], "ReplicaSet", "{e}");
    assert!(
        e["involvedObject"]["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("web-")),
        "{e}"
    );
    let message = e["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with("Error creating: ")
            && message.contains(r#"failed calling webhook "pods.wink.test""#)
            && message.contains("connection refused"),
        "{e}"
    );
    let rss = s
        .env
        .until("the ReplicaFailure condition", &["get", "replicasets"], |r| {
            r.iter().any(|rs| replica_failure(rs).is_some())
        })
        .await;
    let cond = replica_failure(&rss[0]).unwrap();
    assert_eq!(
        (cond["status"].as_str(), cond["reason"].as_str()),
        (Some("True"), Some("FailedCreate")),
        "{cond}"
    );
    assert!(
        cond["message"]
            .as_str()
            .is_some_and(|m| m.contains("failed calling webhook")),
        "{cond}"
    );
    assert!(
        s.env.items(&["get", "pods"]).await.is_empty(),
        "no Pod without admission"
    );
    // It keeps trying while the webhook is down.
    let tried = s.env.sim.webhook_calls("pods.wink.test");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while s.env.sim.webhook_calls("pods.wink.test") <= tried {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no retry after {tried} calls"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The webhook is back: a retry creates the Pods, and the condition goes.
    s.env.sim.route_service("webhooks", "hook", 443, s.server.addr());
    s.env
        .until("the Pods in default", &["get", "pods"], |p| p.len() == 2)
        .await;
    s.env
        .until(
            "the ReplicaSet without ReplicaFailure",
            &["get", "replicasets"],
            |r| r.len() == 1 && replica_failure(&r[0]).is_none() && r[0]["status"]["replicas"] == 2,
        )
        .await;
    let reviews: Vec<Value> = s.seen.lock().unwrap().iter().map(|(_, r)| r.clone()).collect();
    assert!(!reviews.is_empty());
    for r in &reviews {
        let req = &r["request"];
        assert_eq!(req["namespace"], "default", "free is never sent: {req}");
        assert_eq!(req["kind"]["kind"], "Pod");
        assert_eq!(req["operation"], "CREATE");
        assert_eq!(req["userInfo"]["username"], USER);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mutating_webhooks_patch_shows_on_a_replicasets_pod() {
    if !have_kubectl() {
        return;
    }
    let s = control("rs-mutate").await;
    let url = json!({"url": s.server.url("/mutate"), "caBundle": s.certs.ca_bundle()});
    s.configure(
        "MutatingWebhookConfiguration",
        "label-pods",
        vec![pods_hook("mutate-pods.wink.test", url, json!({}))],
    )
    .await;
    s.env
        .ok(&["create", "deployment", "api", "--image=nginx", "--replicas=2"])
        .await;
    let pods = s.env.until("the Pods", &["get", "pods"], |p| p.len() == 2).await;
    for p in &pods {
        let labels = &p["metadata"]["labels"];
        assert_eq!(labels["mutated"], "yes", "{p}");
        assert_eq!(labels["app"], "api", "{p}");
        assert!(labels["pod-template-hash"].is_string(), "{p}");
        assert_eq!(p["metadata"]["ownerReferences"][0]["kind"], "ReplicaSet");
    }
    let reviews: Vec<Value> = s.seen.lock().unwrap().iter().map(|(_, r)| r.clone()).collect();
    assert_eq!(reviews.len(), 2, "one review per Pod");
    for r in &reviews {
        assert_eq!(r["request"]["userInfo"]["username"], USER);
        assert_eq!(
            r["request"]["object"]["metadata"]["generateName"]
                .as_str()
                .map(|g| g.starts_with("api-")),
            Some(true)
        );
    }
    // Running, as any Pod of a Deployment.
    s.env
        .until("the rollout", &["get", "deployments"], |d| {
            d.len() == 1 && d[0]["status"]["availableReplicas"] == 2
        })
        .await;
}
