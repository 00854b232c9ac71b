//! The unmodified `kube` client and `kube_runtime::watcher` against the
//! simulated API server: event order, both initial list strategies,
//! bookmarks moving the resume point, and relist after a compaction.

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, reflector};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::sync::mpsc;
use wink_sim::{Sim, SimConfig};

fn cm(name: &str, v: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c.data = Some(BTreeMap::from([("v".to_string(), v.to_string())]));
    c
}

/// Run a watcher in the background; its events arrive on the channel.
fn spawn_watcher(api: Api<ConfigMap>, cfg: watcher::Config) -> mpsc::UnboundedReceiver<Event<ConfigMap>> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut s = watcher::watcher(api, cfg).boxed();
        while let Some(ev) = s.next().await {
            if let Ok(ev) = ev
                && tx.send(ev).is_err()
            {
                return;
            }
        }
    });
    rx
}

async fn next(rx: &mut mpsc::UnboundedReceiver<Event<ConfigMap>>) -> Event<ConfigMap> {
    tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .expect("a watcher event in time")
        .expect("watcher running")
}

/// Collect the initial objects up to InitDone.
async fn initial(rx: &mut mpsc::UnboundedReceiver<Event<ConfigMap>>) -> Vec<String> {
    let mut names = Vec::new();
    loop {
        match next(rx).await {
            Event::Init => names.clear(),
            Event::InitApply(o) => names.push(o.metadata.name.unwrap()),
            Event::InitDone => return names,
            e => panic!("unexpected event before InitDone: {e:?}"),
        }
    }
}

fn describe(e: &Event<ConfigMap>) -> String {
    match e {
        Event::Apply(o) => format!(
            "apply {} {}",
            o.metadata.name.as_deref().unwrap(),
            o.data.as_ref().unwrap()["v"]
        ),
        Event::Delete(o) => format!("delete {}", o.metadata.name.as_deref().unwrap()),
        other => format!("{other:?}"),
    }
}

async fn crud_in_order(cfg: watcher::Config) -> Sim {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(sim.client());
    api.create(&PostParams::default(), &cm("pre", "0")).await.unwrap();
    let mut rx = spawn_watcher(api.clone(), cfg);
    assert_eq!(initial(&mut rx).await, vec!["pre"]);
    api.create(&PostParams::default(), &cm("a", "1")).await.unwrap();
    let mut a = api.get("a").await.unwrap();
    a.data = Some(BTreeMap::from([("v".to_string(), "2".to_string())]));
    api.replace("a", &PostParams::default(), &a).await.unwrap();
    api.delete("a", &DeleteParams::default()).await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(describe(&next(&mut rx).await));
    }
    assert_eq!(seen, vec!["apply a 1", "apply a 2", "delete a"]);
    sim
}

#[tokio::test]
async fn list_watch_sees_create_update_delete_in_order() {
    let sim = crud_in_order(watcher::Config::default()).await;
    assert!(sim.request_count("list", "configmaps") >= 1);
}

#[tokio::test]
async fn streaming_list_sees_create_update_delete_in_order() {
    let sim = crud_in_order(watcher::Config::default().streaming_lists()).await;
    // The initial state came from the watch (sendInitialEvents), not a list.
    assert_eq!(sim.request_count("list", "configmaps"), 0);
}

#[tokio::test]
async fn both_initial_strategies_sync_many_objects() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(sim.client());
    for i in 0..1200 {
        sim.insert(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{i:04}"), "namespace": "default"}}))
            .unwrap();
    }
    for cfg in [
        watcher::Config::default(),
        watcher::Config::default().streaming_lists(),
    ] {
        let mut rx = spawn_watcher(api.clone(), cfg);
        let mut names = initial(&mut rx).await;
        names.sort();
        assert_eq!(names.len(), 1200);
        names.dedup();
        assert_eq!(names.len(), 1200);
    }
    // The list-watch watcher paged (default page size 500).
    assert!(sim.request_count("list", "configmaps") >= 3);
}

#[tokio::test]
async fn bookmarks_advance_the_resume_point_while_idle() {
    let sim = Sim::start(SimConfig {
        bookmark_interval: Duration::from_millis(100),
        ..Default::default()
    })
    .await
    .unwrap();
    let client = sim.client();
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let mut rx = spawn_watcher(api.clone(), watcher::Config::default());
    initial(&mut rx).await;
    // Writes elsewhere move the global resourceVersion; configmaps stay idle.
    let secrets: Api<Secret> = Api::default_namespaced(client);
    for i in 0..5 {
        let mut s = Secret::default();
        s.metadata.name = Some(format!("s{i}"));
        secrets.create(&PostParams::default(), &s).await.unwrap();
    }
    let after = sim.current_resource_version();
    // Wait until a bookmark at or after `after` has certainly been sent.
    tokio::time::sleep(Duration::from_millis(500)).await;
    sim.faults().close_watches();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let resumed = loop {
        let rvs = sim.watch_request_rvs("configmaps");
        if rvs.len() >= 2 {
            break rvs[1].parse::<u64>().unwrap();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the watcher did not resume"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(
        resumed >= after,
        "resumed at {resumed}, bookmarks had reached {after}"
    );
    // And it did not relist.
    assert_eq!(sim.request_count("list", "configmaps"), 1);
}

#[tokio::test]
async fn compaction_and_dropped_watches_make_the_watcher_relist_to_server_state() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(sim.client());
    for i in 0..10 {
        api.create(&PostParams::default(), &cm(&format!("c{i}"), "0"))
            .await
            .unwrap();
    }
    let (reader, writer) = reflector::store::<ConfigMap>();
    let stream = reflector::reflector(writer, watcher::watcher(api.clone(), watcher::Config::default()))
        .default_backoff()
        .touched_objects();
    let task = tokio::spawn(async move {
        // Errors (the 410) are yielded and the watcher carries on.
        stream.for_each(|_| async {}).await;
    });
    reader.wait_until_ready().await.unwrap();
    assert_eq!(reader.state().len(), 10);
    assert_eq!(sim.request_count("list", "configmaps"), 1);

    sim.faults().compact();
    sim.faults().close_watches();
    // Changes the watcher can only learn about from a relist or new events.
    api.delete("c0", &DeleteParams::default()).await.unwrap();
    api.create(&PostParams::default(), &cm("new", "1")).await.unwrap();

    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut own_lists = 0;
    loop {
        own_lists += 1;
        let server: Vec<String> = {
            let mut v: Vec<String> = api
                .list(&Default::default())
                .await
                .unwrap()
                .items
                .into_iter()
                .map(|o| o.metadata.name.unwrap())
                .collect();
            v.sort();
            v
        };
        let mut local: Vec<String> = reader
            .state()
            .iter()
            .map(|o| o.metadata.name.clone().unwrap())
            .collect();
        local.sort();
        let watcher_lists = sim.request_count("list", "configmaps") - own_lists;
        if local == server && watcher_lists >= 2 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "watcher cache {local:?} != server {server:?}; watches at {:?}, lists {}, open {}",
            sim.watch_request_rvs("configmaps"),
            sim.request_count("list", "configmaps"),
            sim.open_watches("configmaps")
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The resume after the compaction was answered with 410 and caused the relist.
    assert!(sim.request_count("list", "configmaps") - own_lists >= 2);
    task.abort();
}
