//! Paged lists (`limit` + `continue`) against the simulated API server:
//! every object exactly once from one consistent snapshot, even while
//! writes happen between pages; expired continue tokens get 410 Expired.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use std::collections::BTreeMap;
use wink_sim::{Sim, SimConfig};

const N: usize = 10_000;

fn insert_many(sim: &Sim, n: usize) {
    for i in 0..n {
        sim.insert(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{i:05}"), "namespace": "default", "labels": {"parity": if i % 2 == 0 { "even" } else { "odd" }}},
            "data": {"i": i.to_string()}}))
            .unwrap();
    }
}

fn cm(name: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c
}

/// Page through with `limit`, calling `between` after every page.
async fn page_all(
    api: &Api<ConfigMap>,
    lp: ListParams,
    mut between: impl AsyncFnMut(usize),
) -> (Vec<ConfigMap>, Vec<String>) {
    let mut items = Vec::new();
    let mut rvs = Vec::new();
    let mut token: Option<String> = None;
    let mut page = 0;
    loop {
        let mut p = lp.clone();
        p.continue_token = token.clone();
        let list = api.list(&p).await.unwrap();
        assert!(list.items.len() <= lp.limit.unwrap() as usize);
        rvs.push(list.metadata.resource_version.clone().unwrap());
        items.extend(list.items);
        token = list.metadata.continue_.filter(|c| !c.is_empty());
        if token.is_none() {
            return (items, rvs);
        }
        between(page).await;
        page += 1;
    }
}

fn names(items: &[ConfigMap]) -> Vec<String> {
    items.iter().map(|o| o.metadata.name.clone().unwrap()).collect()
}

#[tokio::test]
async fn paging_10000_objects_returns_each_exactly_once() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    insert_many(&sim, N);
    let api: Api<ConfigMap> = Api::default_namespaced(sim.client());
    let (items, rvs) = page_all(&api, ListParams::default().limit(500), async |_| {}).await;
    assert_eq!(rvs.len(), N / 500);
    let mut n = names(&items);
    assert_eq!(n.len(), N);
    n.dedup();
    assert_eq!(n.len(), N, "duplicates across pages");
    assert!(
        rvs.iter().all(|rv| *rv == rvs[0]),
        "one snapshot resourceVersion: {rvs:?}"
    );
    assert_eq!(sim.request_count("list", "configmaps"), (N / 500) as u64);

    // With a label selector, pages are filled with matching objects only.
    let (odd, _) = page_all(
        &api,
        ListParams::default().labels("parity=odd").limit(500),
        async |_| {},
    )
    .await;
    assert_eq!(odd.len(), N / 2);
    assert!(
        odd.iter()
            .all(|o| o.metadata.labels.as_ref().unwrap()["parity"] == "odd")
    );
}

#[tokio::test]
async fn paging_is_a_consistent_snapshot_while_writes_happen() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    insert_many(&sim, N);
    let api: Api<ConfigMap> = Api::default_namespaced(sim.client());
    let before: BTreeMap<String, String> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|o| (o.metadata.name.unwrap(), o.metadata.resource_version.unwrap()))
        .collect();
    let writer = api.clone();
    let (items, rvs) = page_all(&api, ListParams::default().limit(500), async |page| {
        // Delete one not yet listed, create one before and one after the
        // cursor, and update one not yet listed.
        let ahead = format!("cm-{:05}", N - 1 - page);
        writer.delete(&ahead, &DeleteParams::default()).await.unwrap();
        writer
            .create(&PostParams::default(), &cm(&format!("aaa-{page}")))
            .await
            .unwrap();
        writer
            .create(&PostParams::default(), &cm(&format!("zzz-{page}")))
            .await
            .unwrap();
        let upd = format!("cm-{:05}", N - 100 - page);
        let mut o = writer.get(&upd).await.unwrap();
        o.data = Some(BTreeMap::from([("changed".to_string(), "yes".to_string())]));
        writer.replace(&upd, &PostParams::default(), &o).await.unwrap();
    })
    .await;
    assert!(rvs.iter().all(|rv| *rv == rvs[0]));
    let got: BTreeMap<String, String> = items
        .into_iter()
        .map(|o| (o.metadata.name.unwrap(), o.metadata.resource_version.unwrap()))
        .collect();
    assert_eq!(got.len(), N, "each object of the snapshot exactly once");
    assert_eq!(got, before, "objects as of the first page");
    // The writes really happened.
    let now = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(now.items.len(), N + (N / 500 - 1));
}

#[tokio::test]
async fn expired_continue_token_gets_410() {
    let sim = Sim::start(SimConfig {
        history: 100,
        ..Default::default()
    })
    .await
    .unwrap();
    insert_many(&sim, 1000);
    let api: Api<ConfigMap> = Api::default_namespaced(sim.client());
    let first = api.list(&ListParams::default().limit(100)).await.unwrap();
    let token = first.metadata.continue_.clone().unwrap();
    // A token still inside the history window works.
    let second = api
        .list(&ListParams::default().limit(100).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(second.items.len(), 100);
    // More writes than the history keeps: the snapshot can no longer be rebuilt.
    for i in 0..150 {
        api.create(&PostParams::default(), &cm(&format!("late-{i}")))
            .await
            .unwrap();
    }
    let err = api
        .list(&ListParams::default().limit(100).continue_token(&token))
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!((s.code, s.reason.as_str()), (410, "Expired"), "{s:?}");
            assert!(
                s.message
                    .starts_with("The provided continue parameter is too old"),
                "{}",
                s.message
            );
        }
        e => panic!("expected a 410 Status, got {e:?}"),
    }
    // Compaction expires tokens too.
    let fresh = api.list(&ListParams::default().limit(100)).await.unwrap();
    sim.faults().compact();
    let err = api
        .list(
            &ListParams::default()
                .limit(100)
                .continue_token(fresh.metadata.continue_.as_deref().unwrap()),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 410), "{err:?}");
}
