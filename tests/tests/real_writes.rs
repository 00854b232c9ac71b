//! On the real kube-apiserver (see `envtest`): a plugin's writes and
//! Events as the API server stores them. `require-labels` patches a
//! Deployment under the plugin's own field manager and records an
//! events.k8s.io Event, which core/v1 also serves; in audit mode its patch
//! goes as a dry run (the Deployment's resourceVersion stays) and its Event
//! is marked.

use crate::cache_support::{REQUIRE_LABELS_GRANT, Setup, WAIT, deployment, labeled_by_require_labels};
use crate::envtest;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Event as CoreEvent;
use k8s_openapi::api::events::v1::Event;
use kube::ResourceExt;
use kube::api::{Api, ListParams, PostParams};
use std::time::{Duration, Instant};

/// The Events of `namespace` about `name` once there is one (waited for).
async fn events_about(client: &kube::Client, namespace: &str, name: &str) -> Vec<Event> {
    let api: Api<Event> = Api::namespaced(client.clone(), namespace);
    let deadline = Instant::now() + WAIT;
    loop {
        let events: Vec<Event> = api
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
            .collect();
        if !events.is_empty() {
            return events;
        }
        assert!(Instant::now() < deadline, "no Event about {namespace}/{name}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_labels_patches_under_its_field_manager_and_records_events_in_both_groups() {
    let Some(cp) = envtest::shared() else { return };
    let client = cp.client().await;

    // Enforce: the patch is stored, attributed to the plugin.
    let ns = cp.namespace("writes").await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    deployments
        .create(&PostParams::default(), &deployment(&ns, "web", 1))
        .await
        .unwrap();
    let s = Setup::with_kubeconfig("real_writes", &cp.kubeconfig);
    s.install("require_labels", "require-labels", None);
    let grants = s.plugins.parent().unwrap().join("grants.yaml");
    std::fs::write(&grants, REQUIRE_LABELS_GRANT).unwrap();
    let mut wink = s.run(&["--grants", grants.to_str().unwrap()]);
    labeled_by_require_labels(&deployments, "web").await;
    let events = events_about(&client, &ns, "web").await;
    assert_eq!(events[0].reason.as_deref(), Some("MissingLabel"), "{events:#?}");
    assert_eq!(events[0].type_.as_deref(), Some("Warning"));
    assert!(events[0].note.as_deref().unwrap_or_default().contains("team"));
    // The same Event through core/v1, as `kubectl get events` reads it.
    let core: Api<CoreEvent> = Api::namespaced(client.clone(), &ns);
    let listed = core.list(&ListParams::default()).await.unwrap().items;
    assert!(
        listed
            .iter()
            .any(|e| e.involved_object.name.as_deref() == Some("web")
                && e.reason.as_deref() == Some("MissingLabel")),
        "{listed:#?}"
    );
    wink.terminate(Duration::from_secs(20));

    // Audit: the patch is a dry run; the Event says what would have been done.
    let ns = cp.namespace("writes-audit").await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let created = deployments
        .create(&PostParams::default(), &deployment(&ns, "api", 1))
        .await
        .unwrap();
    std::fs::write(
        &grants,
        REQUIRE_LABELS_GRANT.replace("    events: true", "    events: true\n    mode: audit"),
    )
    .unwrap();
    let wink = s.run(&["--grants", grants.to_str().unwrap()]);
    let events = events_about(&client, &ns, "api").await;
    assert_eq!(events[0].action.as_deref(), Some("WouldLabel"), "{events:#?}");
    assert!(
        events[0]
            .note
            .as_deref()
            .unwrap_or_default()
            .starts_with("[audit] ")
    );
    wink.wait_for_line(&format!("require-labels: {ns}/api: missing label team"), WAIT);
    let after = deployments.get("api").await.unwrap();
    assert_eq!(
        after.resource_version(),
        created.resource_version(),
        "nothing stored"
    );
    assert!(after.labels().get("team").is_none());
    assert!(
        !wink
            .lines()
            .iter()
            .any(|l| l.contains("forbidden") || l.contains(" 403")),
        "{:#?}",
        wink.lines()
    );
}
