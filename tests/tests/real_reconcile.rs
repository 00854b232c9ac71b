//! On the real kube-apiserver (see `envtest`; a pair of its own, as
//! `defaults-keeper` writes into every namespace): a reconciler through
//! client-go's work queue. Every namespace gets the ConfigMap
//! `wink-defaults`, created under the plugin's field manager; a deleted one
//! is restored through the ConfigMap watch's mapping to its namespace.

use crate::cache_support::{Setup, WAIT, wait_synced};
use crate::envtest::{ControlPlane, Options};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams};
use serde_json::json;
use std::time::{Duration, Instant};

async fn until_config_map(api: &Api<ConfigMap>) -> ConfigMap {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(cm) = api.get_opt("wink-defaults").await.unwrap() {
            return cm;
        }
        assert!(Instant::now() < deadline, "wink-defaults never came");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn defaults_keeper_creates_and_restores_its_config_map_in_every_namespace() {
    let Some(cp) = ControlPlane::start(&Options::default()) else {
        return;
    };
    let client = cp.client().await;
    let s = Setup::with_kubeconfig("real_reconcile", &cp.kubeconfig);
    s.install(
        "defaults_keeper",
        "defaults-keeper",
        Some(&json!({"data": {"owner": "platform"}})),
    );
    let grants = s.plugins.parent().unwrap().join("grants.yaml");
    std::fs::write(
        &grants,
        "plugins:\n  defaults-keeper:\n    writes: [{apiVersion: v1, kind: ConfigMap, verbs: [create]}]\n",
    )
    .unwrap();
    let wink = s.run(&["--grants", grants.to_str().unwrap()]);
    wait_synced(&wink, "defaults-keeper");

    let ns = cp.namespace("team").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let created = until_config_map(&api).await;
    assert_eq!(created.data.as_ref().unwrap()["owner"], "platform");
    assert!(
        created
            .managed_fields()
            .iter()
            .any(|m| m.manager.as_deref() == Some("wink-defaults-keeper")),
        "{:?}",
        created.managed_fields()
    );
    api.delete("wink-defaults", &DeleteParams::default())
        .await
        .unwrap();
    let restored = until_config_map(&api).await;
    assert_ne!(restored.uid(), created.uid(), "a new ConfigMap");
    assert!(
        !wink.lines().iter().any(|l| l.contains("reconcile failed")),
        "{:#?}",
        wink.lines()
    );
}
