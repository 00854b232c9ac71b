//! Dry runs and field managers, judged by an unmodified `kube` client: a
//! `dryRun=All` write is validated and answered as a real one, and nothing
//! is persisted (no new resourceVersion, no watch event); a `fieldManager`
//! is recorded in `metadata.managedFields`.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use wink_sim::{Sim, SimConfig};

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default"}, "data": {"a": "1"}}))
        .unwrap()
}

#[tokio::test]
async fn dry_runs_validate_and_persist_nothing() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let rv_before = sim.current_resource_version();
    let answer = api.create(&dry, &cm("ghost")).await.unwrap();
    assert_eq!(answer.name_any(), "ghost");
    assert!(answer.metadata.uid.is_some(), "answered as a real create");
    assert!(
        answer.resource_version().is_none(),
        "no resourceVersion: {answer:?}"
    );
    assert!(api.get_opt("ghost").await.unwrap().is_none(), "not persisted");
    assert_eq!(sim.current_resource_version(), rv_before, "no version consumed");

    let real = api.create(&PostParams::default(), &cm("real")).await.unwrap();
    // Validation still applies: a dry-run create of an existing name fails.
    let err = api.create(&dry, &cm("real")).await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 409));
    let patch = Patch::Merge(json!({"data": {"a": "2"}}));
    let patched = api
        .patch("real", &PatchParams::default().dry_run(), &patch)
        .await
        .unwrap();
    assert_eq!(patched.data.unwrap()["a"], "2", "the answer shows the change");
    let stored = api.get("real").await.unwrap();
    assert_eq!(stored.data.as_ref().unwrap()["a"], "1", "the store does not");
    assert_eq!(stored.resource_version(), real.resource_version());
    api.delete(
        "real",
        &DeleteParams {
            dry_run: true,
            ..DeleteParams::default()
        },
    )
    .await
    .unwrap();
    assert!(
        api.get_opt("real").await.unwrap().is_some(),
        "a dry-run delete deletes nothing"
    );
}

#[tokio::test]
async fn field_managers_are_recorded() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    let pp = PostParams {
        field_manager: Some("creator".into()),
        ..PostParams::default()
    };
    api.create(&pp, &cm("m")).await.unwrap();
    let patch = Patch::Merge(json!({"data": {"b": "2"}}));
    let patched = api
        .patch(
            "m",
            &PatchParams {
                field_manager: Some("patcher".into()),
                ..PatchParams::default()
            },
            &patch,
        )
        .await
        .unwrap();
    let managers: Vec<(String, String)> = patched
        .managed_fields()
        .iter()
        .map(|m| {
            (
                m.manager.clone().unwrap_or_default(),
                m.operation.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        managers,
        [
            ("creator".to_string(), "Update".to_string()),
            ("patcher".to_string(), "Update".to_string())
        ]
    );
}
