//! Object semantics of the simulated API server through the unmodified
//! `kube` client: errors as Status objects, finalizers, generation, patches,
//! status subresource, selectors on lists and watches, CRDs.

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, VersionMatch, WatchEvent,
    WatchParams,
};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::Discovery;
use serde_json::json;
use std::collections::BTreeMap;
use wink_sim::{Sim, SimConfig};

fn cm(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    c
}

fn status(e: kube::Error) -> (u16, String, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.reason, s.message),
        e => panic!("expected a Status, got {e:?}"),
    }
}

async fn start() -> (Sim, Api<ConfigMap>) {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let api = Api::default_namespaced(sim.client());
    (sim, api)
}

#[tokio::test]
async fn errors_are_status_objects_with_real_codes() {
    let (sim, api) = start().await;
    let other: Api<ConfigMap> = Api::namespaced(sim.client(), "nope");
    let (code, reason, msg) = status(
        other
            .create(&PostParams::default(), &cm("a", &[]))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (code, reason.as_str(), msg.as_str()),
        (404, "NotFound", "namespaces \"nope\" not found")
    );
    let a = api.create(&PostParams::default(), &cm("a", &[])).await.unwrap();
    let (code, reason, msg) = status(
        api.create(&PostParams::default(), &cm("a", &[]))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (code, reason.as_str(), msg.as_str()),
        (409, "AlreadyExists", "configmaps \"a\" already exists")
    );
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "v"}})),
    )
    .await
    .unwrap();
    let (code, reason, _) = status(api.replace("a", &PostParams::default(), &a).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    let (code, reason, msg) = status(api.get("missing").await.unwrap_err());
    assert_eq!(
        (code, reason.as_str(), msg.as_str()),
        (404, "NotFound", "configmaps \"missing\" not found")
    );
    let (code, reason, _) = status(
        api.create(&PostParams::default(), &cm("Bad_Name", &[]))
            .await
            .unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    let deps: Api<Deployment> = Api::default_namespaced(sim.client());
    let (_, _, msg) = status(deps.get("x").await.unwrap_err());
    assert_eq!(msg, "deployments.apps \"x\" not found");
}

#[tokio::test]
async fn metadata_is_server_managed() {
    let (sim, api) = start().await;
    let mut g = cm("", &[]);
    g.metadata.name = None;
    g.metadata.generate_name = Some("gen-".into());
    let a = api.create(&PostParams::default(), &g).await.unwrap();
    let name = a.metadata.name.clone().unwrap();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
    assert!(a.metadata.uid.is_some() && a.metadata.creation_timestamp.is_some());
    let rv1: u64 = a.metadata.resource_version.unwrap().parse().unwrap();
    let b = api.create(&PostParams::default(), &cm("b", &[])).await.unwrap();
    let rv2: u64 = b.metadata.resource_version.unwrap().parse().unwrap();
    assert!(rv2 > rv1);
    assert_eq!(sim.current_resource_version(), rv2);

    let deps: Api<Deployment> = Api::default_namespaced(sim.client());
    let d: Deployment = serde_json::from_value(json!({"metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}))
    .unwrap();
    deps.create(&PostParams::default(), &d).await.unwrap();
    let pp = PatchParams::default();
    let d = deps
        .patch(
            "web",
            &pp,
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap();
    assert_eq!(d.metadata.generation, Some(1), "metadata changes keep generation");
    let d = deps
        .patch("web", &pp, &Patch::Strategic(json!({"spec": {"replicas": 4}})))
        .await
        .unwrap();
    assert_eq!(d.metadata.generation, Some(2), "spec changes bump generation");
    // A no-op patch writes nothing.
    let rv = sim.current_resource_version();
    deps.patch("web", &pp, &Patch::Merge(json!({"spec": {"replicas": 4}})))
        .await
        .unwrap();
    assert_eq!(sim.current_resource_version(), rv);
    // Status goes through the subresource only.
    let d = deps
        .patch("web", &pp, &Patch::Merge(json!({"status": {"replicas": 9}})))
        .await
        .unwrap();
    assert!(d.status.is_none_or(|s| s.replicas.is_none()));
    let d = deps
        .patch_status("web", &pp, &Patch::Merge(json!({"status": {"replicas": 9}})))
        .await
        .unwrap();
    assert_eq!(d.status.unwrap().replicas, Some(9));
    assert_eq!(d.metadata.generation, Some(2));
}

#[tokio::test]
async fn patches_json_and_strategic() {
    let (sim, _) = start().await;
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    let p: Pod = serde_json::from_value(json!({"metadata": {"name": "p", "labels": {"a": "1"}},
        "spec": {"containers": [{"name": "c1", "image": "i1"}, {"name": "c2", "image": "i2"}]}}))
    .unwrap();
    let created = pods.create(&PostParams::default(), &p).await.unwrap();
    assert_eq!(created.status.unwrap().phase.as_deref(), Some("Pending"));
    let pp = PatchParams::default();
    let jp = serde_json::from_value(json!([
        {"op": "replace", "path": "/metadata/labels/a", "value": "2"},
        {"op": "add", "path": "/metadata/annotations", "value": {"n": "x"}}
    ]))
    .unwrap();
    let got = pods.patch("p", &pp, &Patch::<()>::Json(jp)).await.unwrap();
    assert_eq!(got.metadata.labels.unwrap()["a"], "2");
    assert_eq!(got.metadata.annotations.unwrap()["n"], "x");
    let got = pods
        .patch(
            "p",
            &pp,
            &Patch::Strategic(json!({"spec": {"containers": [{"name": "c2", "image": "new"}]}})),
        )
        .await
        .unwrap();
    let images: Vec<_> = got
        .spec
        .unwrap()
        .containers
        .into_iter()
        .map(|c| c.image.unwrap())
        .collect();
    assert_eq!(images, ["i1", "new"], "containers merged by name");
}

#[tokio::test]
async fn finalizers_hold_deletion_until_emptied() {
    let (sim, api) = start().await;
    let mut c = cm("f", &[]);
    c.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &c).await.unwrap();
    let rv = sim.current_resource_version().to_string();
    let mut w = api.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    let res = api.delete("f", &DeleteParams::default()).await.unwrap();
    assert!(res.is_left(), "still there: the object comes back");
    let held = api.get("f").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());
    api.patch(
        "f",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(api.get_opt("f").await.unwrap().is_none());
    let mut types = Vec::new();
    for _ in 0..2 {
        types.push(match w.next().await.unwrap().unwrap() {
            WatchEvent::Modified(o) => format!("MODIFIED {}", o.metadata.deletion_timestamp.is_some()),
            WatchEvent::Deleted(_) => "DELETED".to_string(),
            e => format!("{e:?}"),
        });
    }
    assert_eq!(types, ["MODIFIED true", "DELETED"]);
}

#[tokio::test]
async fn watch_selectors_turn_transitions_into_added_and_deleted() {
    let (sim, api) = start().await;
    let rv = sim.current_resource_version().to_string();
    let wp = WatchParams::default().labels("app=web");
    let mut w = api.watch(&wp, &rv).await.unwrap().boxed();
    api.create(&PostParams::default(), &cm("other", &[("app", "db")]))
        .await
        .unwrap();
    api.create(&PostParams::default(), &cm("a", &[("app", "web")]))
        .await
        .unwrap();
    let pp = PatchParams::default();
    api.patch(
        "a",
        &pp,
        &Patch::Merge(json!({"metadata": {"labels": {"app": "db"}}})),
    )
    .await
    .unwrap();
    api.patch(
        "a",
        &pp,
        &Patch::Merge(json!({"metadata": {"labels": {"app": "web"}}})),
    )
    .await
    .unwrap();
    api.patch("a", &pp, &Patch::Merge(json!({"data": {"k": "v"}})))
        .await
        .unwrap();
    api.delete("a", &DeleteParams::default()).await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..5 {
        seen.push(match w.next().await.unwrap().unwrap() {
            WatchEvent::Added(o) => format!("ADDED {}", o.metadata.name.unwrap()),
            WatchEvent::Modified(o) => format!("MODIFIED {}", o.metadata.name.unwrap()),
            WatchEvent::Deleted(o) => format!(
                "DELETED {} {}",
                o.metadata.name.unwrap(),
                o.metadata.labels.unwrap()["app"]
            ),
            e => format!("{e:?}"),
        });
    }
    assert_eq!(
        seen,
        [
            "ADDED a",
            "DELETED a web",
            "ADDED a",
            "MODIFIED a",
            "DELETED a web"
        ]
    );
    // Lists filter the same way; field selectors too.
    let l = api
        .list(&ListParams::default().labels("app in (db,api)"))
        .await
        .unwrap();
    assert_eq!(l.items.len(), 1);
    let l = api
        .list(&ListParams::default().fields("metadata.name!=other"))
        .await
        .unwrap();
    assert!(l.items.is_empty());
    let (code, _, msg) = status(
        api.list(&ListParams::default().fields("data.k=v"))
            .await
            .unwrap_err(),
    );
    assert_eq!((code, msg.as_str()), (400, "field label not supported: data.k"));
}

#[tokio::test]
async fn list_resource_version_semantics() {
    let (sim, api) = start().await;
    api.create(&PostParams::default(), &cm("a", &[])).await.unwrap();
    let at = sim.current_resource_version();
    api.create(&PostParams::default(), &cm("b", &[])).await.unwrap();
    let exact = ListParams::default()
        .at(&at.to_string())
        .matching(VersionMatch::Exact);
    let l = api.list(&exact).await.unwrap();
    assert_eq!(l.items.len(), 1, "the list as of the exact resourceVersion");
    assert_eq!(l.metadata.resource_version, Some(at.to_string()));
    let l = api.list(&ListParams::default().match_any()).await.unwrap();
    assert_eq!(l.items.len(), 2);
    assert_eq!(
        l.metadata.resource_version,
        Some(sim.current_resource_version().to_string())
    );
    let future = ListParams::default()
        .at("999999")
        .matching(VersionMatch::NotOlderThan);
    // kube retries 504s by itself; look at the first answer.
    let mut cfg = sim.kube_config();
    cfg.default_retry = false;
    let no_retry: Api<ConfigMap> = Api::default_namespaced(kube::Client::try_from(cfg).unwrap());
    let (code, _, msg) = status(no_retry.list(&future).await.unwrap_err());
    assert_eq!(code, 504);
    assert!(msg.contains("Too large resource version"), "{msg}");
    // deletecollection with a selector.
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"x": "1"}}})),
    )
    .await
    .unwrap();
    api.delete_collection(&DeleteParams::default(), &ListParams::default().labels("x=1"))
        .await
        .unwrap();
    let names: Vec<_> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|o| o.metadata.name.unwrap())
        .collect();
    assert_eq!(names, ["b"]);
}

#[tokio::test]
async fn crds_make_custom_resources_served_and_discoverable() {
    let (sim, _) = start().await;
    let client = sim.client();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for (plural, kind, scope) in [
        ("widgets", "Widget", "Namespaced"),
        ("clusterthings", "ClusterThing", "Cluster"),
    ] {
        let crd: CustomResourceDefinition = serde_json::from_value(json!({
            "metadata": {"name": format!("{plural}.example.com")},
            "spec": {"group": "example.com", "scope": scope,
                "names": {"plural": plural, "kind": kind, "singular": kind.to_lowercase()},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                    "subresources": {"status": {}}}]}}))
        .unwrap();
        let c = crds.create(&PostParams::default(), &crd).await.unwrap();
        let conds = c.status.unwrap().conditions.unwrap();
        assert!(
            conds
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        );
    }
    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    let group = discovery.get("example.com").expect("group discovered");
    let (ar, caps) = group.recommended_kind("Widget").unwrap();
    assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let mut w = DynamicObject::new("w1", &ar);
    w.data = json!({"spec": {"size": 3}});
    widgets.create(&PostParams::default(), &w).await.unwrap();
    let got = widgets.get("w1").await.unwrap();
    assert_eq!(got.data["spec"]["size"], 3);
    assert_eq!(got.metadata.generation, Some(1));
    let things_ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "ClusterThing"),
        "clusterthings",
    );
    let things: Api<DynamicObject> = Api::all_with(client.clone(), &things_ar);
    things
        .create(&PostParams::default(), &DynamicObject::new("t1", &things_ar))
        .await
        .unwrap();
    assert_eq!(things.list(&ListParams::default()).await.unwrap().items.len(), 1);
    // Deleting the CRD removes its objects and stops serving the type.
    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    let (code, _, _) = status(widgets.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(code, 404);
    let labels: BTreeMap<String, String> = BTreeMap::new();
    assert!(labels.is_empty());
}
