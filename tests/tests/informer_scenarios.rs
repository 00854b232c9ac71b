//! Informer fidelity, scenario by scenario, against the simulated
//! API server through the real `kube` client and `kube_runtime::watcher`:
//! what listeners get while the watch runs: the initial list (paged too),
//! late join, store before callback, resync, index moves, a stuck handler,
//! informer sharing. What happens when the watch breaks (tombstones, changes
//! while down, timeouts, bookmarks, 410, errors, random drops) is in
//! `informer_watch.rs`. A native recording handler stands in for plugins
//! (the wasm side is tested elsewhere).
//!
//! Tests hold a recorder's `gate` (a std mutex its handler thread takes)
//! across awaits on purpose: that is how a handler is made to hang.
#![allow(clippy::await_holding_lock)]

use crate::informer_support;

use informer_support::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use wink::informer::WatchSpec;
use wink::informer::factory::FactoryOptions;
use wink::informer::index::IndexSpec;
use wink::informer::processor::Listener;

/// 1. N objects before start -> N x add(in-initial-list), synced only after
///    the N-th returned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s01_initial_list_is_n_initial_adds_then_synced() {
    let (sim, factory) = start(FactoryOptions::default()).await;
    for i in 0..40 {
        create(&sim, &format!("p{i:02}"), &[]);
    }
    let informer = factory.informer_for(&pods_spec()).await.unwrap();
    let rec = Rec::new();
    let stuck = rec.gate.lock().unwrap();
    let listener = informer.add_listener("a", rec.clone(), None);
    eventually("informer synced", || informer.has_synced()).await;
    // The handler is stuck inside its first add: the listener is not synced.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!listener.has_synced(), "synced before the handler returned");
    drop(stuck);
    eventually("listener synced", || listener.has_synced()).await;
    let events = rec.events();
    assert_eq!(events.len(), 41);
    assert!(
        events[..40]
            .iter()
            .all(|e| matches!(e, Ev::Add { initial: true, .. }))
    );
    assert_eq!(events[40], Ev::Synced);
}

/// 2. A paged initial list: never a partial set as synced; an expired
///    continue token mid-list still ends complete, with no duplicate adds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s02_paged_initial_list_with_an_expired_continue_token() {
    let options = FactoryOptions {
        page_size: Some(50),
        ..Default::default()
    };
    let (sim, factory) = start(options).await;
    for i in 0..600 {
        create(&sim, &format!("p{i:03}"), &[]);
    }
    // Slow pages, so the history can be compacted between two of them.
    sim.faults().delay(Some(Duration::from_millis(40)));
    let spec = pods_spec();
    let f = factory.clone();
    let starting = tokio::spawn(async move { f.informer_for(&spec).await.unwrap() });
    eventually("the third page", || sim.request_count("list", "pods") >= 3).await;
    sim.faults().compact();
    let informer = starting.await.unwrap();
    let rec = Rec::watching(informer.store());
    let listener = informer.add_listener("a", rec.clone(), None);
    eventually("informer synced", || informer.has_synced()).await;
    sim.faults().delay(None);
    eventually("listener synced", || listener.has_synced()).await;
    // The first list died on its expired token: more list requests than 12 pages.
    assert!(
        sim.request_count("list", "pods") > 12,
        "lists: {}",
        sim.request_count("list", "pods")
    );
    let events = rec.events();
    assert_eq!(adds(&events), 600, "one add per object");
    assert_eq!(events.last(), Some(&Ev::Synced));
    let mut keys: Vec<&str> = events.iter().filter_map(Ev::key).collect();
    keys.dedup();
    assert_eq!(keys.len(), 600, "no duplicate adds");
    assert_eq!(store_view(informer.store()), server_pods(&sim).await);
}

/// 3. A late plugin with M cached objects -> exactly M initial adds to it,
///    nothing extra to the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s03_late_join_replays_the_cache_to_the_newcomer_only() {
    let (sim, factory) = start(FactoryOptions::default()).await;
    for i in 0..25 {
        create(&sim, &format!("p{i:02}"), &[]);
    }
    let informer = factory.informer_for(&pods_spec()).await.unwrap();
    let early = Rec::new();
    let a = informer.add_listener("early", early.clone(), None);
    eventually("early synced", || a.has_synced()).await;
    let late = Rec::new();
    let b = informer.add_listener("late", late.clone(), None);
    eventually("late synced", || b.has_synced()).await;
    let le = late.events();
    assert_eq!(le.len(), 26);
    assert!(
        le[..25]
            .iter()
            .all(|e| matches!(e, Ev::Add { initial: true, .. }))
    );
    assert_eq!(le[25], Ev::Synced);
    assert_eq!(early.count(), 26, "nothing extra to the early handler");
    // Both get live events from here on.
    create(&sim, "after", &[]);
    eventually("both see the new pod", || {
        early.count() == 27 && late.count() == 27
    })
    .await;
    assert!(matches!(&late.events()[26], Ev::Add { initial: false, key, .. } if key == "default/after"));
}

/// 4. Add/update/delete: store and indexes updated before the callback; the
///    update carries the previous cached object as old.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s04_store_and_indexes_change_before_the_callback() {
    let (sim, factory) = start(FactoryOptions::default()).await;
    let informer = factory.informer_for(&pods_spec()).await.unwrap();
    informer
        .add_index("app", IndexSpec::Label("app".into()).func())
        .unwrap();
    let rec = Rec::watching(informer.store());
    let l = informer.add_listener("a", rec.clone(), None);
    eventually("synced", || l.has_synced()).await;

    // One write at a time, so the store at each callback is exactly the
    // event's state (it may legitimately be newer when writes race ahead).
    let v1 = create(&sim, "web", &[("app", "a")]);
    eventually("the add", || rec.count() == 2).await;
    let v2 = relabel(&sim, "web", "b");
    eventually("the update", || rec.count() == 3).await;
    sim.delete("pods", Some("default"), "web").unwrap();
    eventually("the delete", || rec.count() == 4).await;
    let events = rec.events();
    assert_eq!(
        events[1],
        Ev::Add {
            key: "default/web".into(),
            rv: rv_of(&v1),
            initial: false,
            store_rv: Some(rv_of(&v1)),
        }
    );
    let uid = v1["metadata"]["uid"].as_str().unwrap().to_string();
    assert_eq!(
        events[2],
        Ev::Update {
            key: "default/web".into(),
            old_rv: rv_of(&v1),
            new_rv: rv_of(&v2),
            old_uid: uid.clone(),
            new_uid: uid,
            store_rv: Some(rv_of(&v2)),
        }
    );
    // The DELETED event carries the object as of its deletion.
    let deleted_at = |rv: &str| rv.parse::<u64>().unwrap() > rv_of(&v2).parse::<u64>().unwrap();
    assert!(
        matches!(&events[3], Ev::Delete { unknown: false, store_rv: None, rv, .. } if deleted_at(rv)),
        "{:?}",
        events[3]
    );
    // Inside each callback the index already listed the object under its
    // new value (and, at the delete, no longer did).
    let seen = rec.index_seen.lock().unwrap().clone();
    assert_eq!(seen[0], ("a".to_string(), vec!["default/web".to_string()]));
    assert_eq!(seen[1], ("b".to_string(), vec!["default/web".to_string()]));
    assert_eq!(seen[2], ("b".to_string(), vec![]));
}

/// 9. Resync: A with a 2 s period gets update(o, o) for every object; B
///    without resync gets nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s09_resync_only_for_the_handler_that_asked() {
    let (sim, factory) = start(FactoryOptions::default()).await;
    for i in 0..3 {
        create(&sim, &format!("p{i}"), &[]);
    }
    let informer = factory.informer_for(&pods_spec()).await.unwrap();
    let a = Rec::new();
    let b = Rec::new();
    let la = informer.add_listener("a", a.clone(), Some(Duration::from_secs(2)));
    let lb = informer.add_listener("b", b.clone(), None);
    eventually("synced", || la.has_synced() && lb.has_synced()).await;
    eventually("two resyncs of three objects", || a.count() >= 4 + 6).await;
    let resyncs: Vec<Ev> = a.events().split_off(4);
    for e in &resyncs[..6] {
        assert!(
            matches!(e, Ev::Update { old_rv, new_rv, old_uid, new_uid, .. } if old_rv == new_rv && old_uid == new_uid),
            "{e:?}"
        );
    }
    assert_eq!(b.count(), 4, "B has only its initial list: {:?}", b.events());
}

/// 10. An update moving an object between index values: the old entry
///     goes, the new one comes, an emptied value disappears.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s10_index_follows_a_relabel() {
    let (sim, factory) = start(FactoryOptions::default()).await;
    create(&sim, "web", &[("app", "a")]);
    create(&sim, "db", &[("app", "c")]);
    let informer = factory.informer_for(&pods_spec()).await.unwrap();
    eventually("synced", || informer.has_synced()).await;
    // Added to a running informer: indexes the cached objects at once.
    let store = informer.store().clone();
    informer
        .add_index("app", IndexSpec::Label("app".into()).func())
        .unwrap();
    assert_eq!(store.list_index_values("app").unwrap(), ["a", "c"]);
    let v2 = relabel(&sim, "web", "b");
    eventually("the update applied", || {
        store
            .get("default/web")
            .is_some_and(|o| o.resource_version() == rv_of(&v2))
    })
    .await;
    assert!(store.by_index("app", "a").unwrap().is_empty());
    assert_eq!(store.index_keys("app", "b").unwrap(), ["default/web"]);
    assert_eq!(store.list_index_values("app").unwrap(), ["b", "c"]);
}

/// 11. A stuck plugin: the others' delivery is unaffected; its backlog is
///     delivered in order afterwards, and with coalescing it stays bounded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s11_a_stuck_handler_costs_only_itself() {
    let (sim, factory) = start(FactoryOptions::default()).await;
    for i in 0..5 {
        create(&sim, &format!("p{i}"), &[("app", "v0")]);
    }
    let informer = factory.informer_for(&pods_spec()).await.unwrap();
    let free = Rec::new();
    let fifo = Rec::new();
    let coalescing = Rec::new();
    let lf = informer.add_listener("free", free.clone(), None);
    informer.set_coalesce_after(None);
    let l_fifo = informer.add_listener("fifo", fifo.clone(), None);
    informer.set_coalesce_after(Some(20));
    let l_co = informer.add_listener("coalescing", coalescing.clone(), None);
    eventually("synced", || {
        lf.has_synced() && l_fifo.has_synced() && l_co.has_synced()
    })
    .await;

    let stuck_fifo = fifo.gate.lock().unwrap();
    let stuck_co = coalescing.gate.lock().unwrap();
    for round in 1..=40 {
        for i in 0..5 {
            relabel(&sim, &format!("p{i}"), &format!("v{round}"));
        }
    }
    // 200 updates reach the free handler while the other two are stuck.
    eventually("free handler has every update", || free.count() == 6 + 200).await;
    assert!(l_fifo.backlog() >= 199, "fifo backlog {}", l_fifo.backlog());
    assert!(l_co.backlog() <= 20 + 5, "coalescing backlog {}", l_co.backlog());
    assert!(l_co.coalesced() >= 170, "coalesced {}", l_co.coalesced());
    drop(stuck_fifo);
    drop(stuck_co);
    let server = server_pods(&sim).await;
    eventually("both catch up", || {
        fifo.view() == server && coalescing.view() == server
    })
    .await;
    eventually("fifo delivered everything", || fifo.count() == 6 + 200).await;
    // Per object, both see versions in increasing order; the fifo one sees
    // exactly what the free one saw.
    assert_eq!(fifo.events(), free.events());
    let mut last: BTreeMap<String, u64> = BTreeMap::new();
    for e in coalescing.events() {
        if let Ev::Update {
            key, old_rv, new_rv, ..
        } = e
        {
            let (old, new): (u64, u64) = (old_rv.parse().unwrap(), new_rv.parse().unwrap());
            assert!(new > old);
            if let Some(prev) = last.insert(key.clone(), new) {
                assert_eq!(old, prev, "old is the state delivered last for {key}");
            }
        }
    }
}

/// 12. Two handlers on pods and one on configmaps -> exactly two watches;
///     removing the configmap handler stops its informer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s12_one_watch_per_distinct_spec_and_idle_informers_stop() {
    let (sim, factory) = start(FactoryOptions::default()).await;
    let pods = factory.informer_for(&pods_spec()).await.unwrap();
    let pods_again = factory.informer_for(&pods_spec()).await.unwrap();
    assert!(Arc::ptr_eq(&pods, &pods_again));
    let cm_spec = WatchSpec::all("v1", "ConfigMap");
    let cms = factory.informer_for(&cm_spec).await.unwrap();
    let l1: Arc<Listener> = pods.add_listener("p1", Rec::new(), None);
    let l2 = pods_again.add_listener("p2", Rec::new(), None);
    let l3 = cms.add_listener("c", Rec::new(), None);
    eventually("all synced", || {
        l1.has_synced() && l2.has_synced() && l3.has_synced()
    })
    .await;
    eventually("two watches open", || {
        sim.open_watches("pods") == 1 && sim.open_watches("configmaps") == 1
    })
    .await;
    assert_eq!(sim.request_count("watch", "pods"), 1);
    assert_eq!(sim.request_count("watch", "configmaps"), 1);
    assert_eq!(sim.request_count("list", "pods"), 1);

    factory.release(&cm_spec, l3.id());
    assert_eq!(factory.running(), vec![pods_spec()]);
    eventually("the configmap watch closes", || {
        sim.open_watches("configmaps") == 0
    })
    .await;
    factory.release(&pods_spec(), l1.id());
    assert_eq!(factory.running(), vec![pods_spec()], "one pod handler is left");
    assert_eq!(sim.open_watches("pods"), 1);
}
