//! Informer fidelity when the watch breaks, scenario by scenario,
//! against the simulated API server's fault injection through the real
//! `kube` client and `kube_runtime::watcher`: deletes and changes missed while
//! the watch was down (tombstones, updates), watch timeouts and bookmarks,
//! 410 Gone, server errors and dropped connections, and seeded random rounds
//! of changes, drops and compactions; and a steady stream, which the
//! daemon's client reads in windows. Every scenario reads through that
//! client (`informer_support::start`). A native recording handler stands in
//! for plugins.
//!
//! A test holds a recorder's `gate` (a std mutex its handler thread takes)
//! across awaits on purpose: that is how a handler is made to hang.
#![allow(clippy::await_holding_lock)]

use crate::informer_support;

use informer_support::*;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wink::informer::factory::FactoryOptions;
use wink::informer::object::CachePolicy;
use wink::informer::processor::Listener;
use wink::informer::reflector::Reflector;
use wink::informer::{SharedInformer, SharedInformerFactory, WatchSpec};
use wink_sim::{Sim, SimConfig};

/// 5. Deleted while the watch was down and gone from the relist -> one
///    tombstone with the last known state; an object whose DELETED was
///    already queued gets no second delete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s05_deleted_while_down_is_one_tombstone() {
    let (sim, factory) = start(FactoryOptions::default()).await;
    let last = create(&sim, "gone", &[("app", "x")]);
    create(&sim, "queued", &[]);
    create(&sim, "stays", &[]);
    let informer = factory.informer_for(&pods_spec()).await.unwrap();
    let rec = Rec::new();
    let l = informer.add_listener("a", rec.clone(), None);
    eventually("synced", || l.has_synced()).await;

    let stuck = rec.gate.lock().unwrap();
    // The handler gets stuck in this update; the DELETED waits behind it.
    relabel(&sim, "stays", "y");
    sim.delete("pods", Some("default"), "queued").unwrap();
    // Applied to the store (so not a tombstone later) and queued behind the
    // stuck update (backlog 1 alone could be the update not yet taken).
    eventually("the DELETED queued", || {
        l.backlog() == 1 && informer.store().get("default/queued").is_none()
    })
    .await;
    watch_down(&sim).await;
    sim.delete("pods", Some("default"), "gone").unwrap();
    up(&sim, true);
    eventually("relist", || informer.relists() == 2).await;
    drop(stuck);
    eventually("update and two deletes", || rec.count() == 7).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let events = rec.events();
    assert_eq!(events.len(), 7, "{events:#?}");
    let deletes: Vec<&Ev> = events.iter().filter(|e| matches!(e, Ev::Delete { .. })).collect();
    assert!(
        matches!(deletes[0], Ev::Delete { key, unknown: false, .. } if key == "default/queued"),
        "{deletes:?}"
    );
    assert!(
        matches!(deletes[1], Ev::Delete { key, unknown: true, rv, .. } if key == "default/gone" && *rv == rv_of(&last)),
        "{deletes:?}"
    );
    assert_eq!(store_view(informer.store()), server_pods(&sim).await);
}

/// 6. Changed while down -> update(old cached, new listed); deleted and
///    re-created under the same name -> one update with different uids;
///    created and deleted while down -> nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s06_changes_while_down_become_updates() {
    let (sim, factory) = start(FactoryOptions::default()).await;
    let changed_before = create(&sim, "changed", &[("app", "a")]);
    let recreated_before = create(&sim, "recreated", &[]);
    let informer = factory.informer_for(&pods_spec()).await.unwrap();
    let rec = Rec::new();
    let l = informer.add_listener("a", rec.clone(), None);
    eventually("synced", || l.has_synced()).await;

    watch_down(&sim).await;
    let changed_after = relabel(&sim, "changed", "b");
    sim.delete("pods", Some("default"), "recreated").unwrap();
    let recreated_after = create(&sim, "recreated", &[]);
    create(&sim, "ephemeral", &[]);
    sim.delete("pods", Some("default"), "ephemeral").unwrap();
    up(&sim, true);
    eventually("relist", || informer.relists() == 2).await;
    eventually("two updates", || rec.count() == 5).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after: Vec<Ev> = rec.events().split_off(3);
    assert_eq!(after.len(), 2, "{after:#?}");
    let uid = |v: &serde_json::Value| v["metadata"]["uid"].as_str().unwrap().to_string();
    assert!(after.contains(&Ev::Update {
        key: "default/changed".into(),
        old_rv: rv_of(&changed_before),
        new_rv: rv_of(&changed_after),
        old_uid: uid(&changed_before),
        new_uid: uid(&changed_after),
        store_rv: None,
    }));
    assert!(after.contains(&Ev::Update {
        key: "default/recreated".into(),
        old_rv: rv_of(&recreated_before),
        new_rv: rv_of(&recreated_after),
        old_uid: uid(&recreated_before),
        new_uid: uid(&recreated_after),
        store_rv: None,
    }));
    assert_ne!(uid(&recreated_before), uid(&recreated_after));
}

/// An informer on pods in `default` whose watches time out after `secs`.
fn informer_with_timeout(sim: &Sim, secs: u32) -> Arc<SharedInformer> {
    let ar = kube::api::ApiResource::erase::<Pod>(&());
    let api: Api<wink::informer::object::RawObject> = Api::namespaced_with(sim.client(), "default", &ar);
    let informer = SharedInformer::new("pods with short watches");
    let stream = watcher::watcher(api, watcher::Config::default().timeout(secs)).default_backoff();
    informer.spawn(stream, Reflector::new(ar, CachePolicy::default()));
    informer
}

/// 7a. A normal watch timeout -> re-watch from the last resourceVersion, no
///     relist, no notifications.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s07_watch_timeout_rewatches_without_relist() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    create(&sim, "p", &[]);
    let informer = informer_with_timeout(&sim, 1);
    let rec = Rec::new();
    let l = informer.add_listener("a", rec.clone(), None);
    eventually("synced", || l.has_synced()).await;
    eventually("three watches", || sim.request_count("watch", "pods") >= 3).await;
    assert_eq!(sim.request_count("list", "pods"), 1, "no relist");
    assert_eq!(informer.relists(), 1);
    assert_eq!(
        rec.count(),
        2,
        "only the initial add and synced: {:?}",
        rec.events()
    );
    let rvs = sim.watch_request_rvs("pods");
    assert!(
        rvs.iter().all(|rv| !rv.is_empty() && rv != "0"),
        "every watch resumes from a resourceVersion: {rvs:?}"
    );
}

/// 7b. Bookmarks keep a quiet resource from ever getting 410: after a
///     compaction, the resume point is the bookmark's, not the old list's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s07_bookmarks_keep_a_quiet_resource_resumable() {
    let sim = Sim::start(SimConfig {
        bookmark_interval: Duration::from_millis(100),
        ..Default::default()
    })
    .await
    .unwrap();
    let factory = SharedInformerFactory::new(sim.client(), FactoryOptions::default());
    let spec = WatchSpec::all("v1", "ConfigMap");
    let informer = factory.informer_for(&spec).await.unwrap();
    eventually("synced", || informer.has_synced()).await;
    // Other resources move the resourceVersion on; configmaps stay quiet.
    for i in 0..20 {
        create(&sim, &format!("noise{i}"), &[]);
    }
    sim.faults().compact();
    let compacted = sim.current_resource_version();
    // A bookmark carrying a resourceVersion past the compaction arrives...
    tokio::time::sleep(Duration::from_millis(500)).await;
    // ...so resuming after the watch drops needs no relist.
    sim.faults().close_watches();
    eventually("a second watch", || sim.request_count("watch", "configmaps") >= 2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rvs = sim.watch_request_rvs("configmaps");
    let resumed: u64 = rvs.last().unwrap().parse().unwrap();
    assert!(
        resumed >= compacted,
        "resumed from {resumed}, compacted at {compacted}: {rvs:?}"
    );
    assert_eq!(
        sim.request_count("list", "configmaps"),
        1,
        "no relist: {rvs:?}, compacted at {compacted}"
    );
    assert_eq!(informer.relists(), 1);
}

/// 8a. 410 on resume -> relist; the cache ends equal to the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s08_gone_on_resume_relists_to_the_server_state() {
    let (sim, factory) = start(FactoryOptions::default()).await;
    for i in 0..10 {
        create(&sim, &format!("p{i}"), &[]);
    }
    let informer = factory.informer_for(&pods_spec()).await.unwrap();
    let rec = Rec::new();
    let l = informer.add_listener("a", rec.clone(), None);
    eventually("synced", || l.has_synced()).await;
    watch_down(&sim).await;
    for i in 0..5 {
        sim.delete("pods", Some("default"), &format!("p{i}")).unwrap();
        create(&sim, &format!("q{i}"), &[]);
    }
    up(&sim, true);
    eventually("relist", || informer.relists() == 2).await;
    assert_eq!(sim.request_count("list", "pods"), 2, "one relist");
    let server = server_pods(&sim).await;
    eventually("cache equals server", || store_view(informer.store()) == server).await;
    eventually("handler view equals server", || rec.view() == server).await;
}

/// 8b. 500, 429 and dropped connections -> retries with backoff; no event
///     lost, no relist needed, the cache ends equal to the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s08_errors_and_dropped_connections_lose_nothing() {
    let (sim, factory) = start(FactoryOptions::default()).await;
    let informer = factory.informer_for(&pods_spec()).await.unwrap();
    let rec = Rec::new();
    let l = informer.add_listener("a", rec.clone(), None);
    eventually("synced", || l.has_synced()).await;
    let mut n = 0;
    for (status, count) in [(500, 3), (429, 2)] {
        let before = sim.request_count("watch", "pods");
        sim.faults().fail_next(count, status);
        sim.faults().close_watches();
        for _ in 0..3 {
            create(&sim, &format!("p{n}"), &[]);
            n += 1;
        }
        eventually("the failures used up and a new watch", || {
            sim.request_count("watch", "pods") > before + count as u64 && sim.open_watches("pods") == 1
        })
        .await;
    }
    sim.restart(true).await.unwrap();
    for _ in 0..3 {
        create(&sim, &format!("p{n}"), &[]);
        n += 1;
    }
    let server = server_pods(&sim).await;
    assert_eq!(server.len(), n);
    eventually("cache equals server", || store_view(informer.store()) == server).await;
    eventually("handler view equals server", || rec.view() == server).await;
    assert_eq!(informer.relists(), 1, "resumed every time, never relisted");
    assert_eq!(adds(&rec.events()), n, "every create seen once");
}

/// 13. Seeded random rounds of create/update/delete with random watch drops
///     and compactions: every handler's view, replayed from its
///     notifications, ends equal to the server's state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s13_random_rounds_converge_to_the_server_state() {
    let seed: u64 = std::env::var("WINK_SCENARIO_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed);
    let mut rng = StdRng::seed_from_u64(seed);
    let (sim, factory) = start(FactoryOptions {
        page_size: Some(7),
        ..Default::default()
    })
    .await;
    for i in 0..20 {
        create(&sim, &format!("p{i}"), &[("app", "v0")]);
    }
    let informer = factory.informer_for(&pods_spec()).await.unwrap();
    let plain = Rec::new();
    let resyncing = Rec::new();
    let lp = informer.add_listener("plain", plain.clone(), None);
    let lr = informer.add_listener("resyncing", resyncing.clone(), Some(Duration::from_secs(1)));
    eventually("synced", || lp.has_synced() && lr.has_synced()).await;
    informer.set_coalesce_after(Some(8));
    let stuck_for_a_while = Rec::new();
    let mut gate = Some(stuck_for_a_while.gate.lock().unwrap());
    let ls = informer.add_listener("stuck-for-a-while", stuck_for_a_while.clone(), None);
    let mut late: Option<(Arc<Rec>, Arc<Listener>)> = None;

    let mut alive: Vec<String> = (0..20).map(|i| format!("p{i}")).collect();
    let mut next = 20;
    for round in 0..30 {
        for _ in 0..10 {
            match rng.random_range(0..10) {
                0..=3 => {
                    let name = format!("p{next}");
                    next += 1;
                    create(&sim, &name, &[("app", "v0")]);
                    alive.push(name);
                }
                4..=7 if !alive.is_empty() => {
                    let name = &alive[rng.random_range(0..alive.len())];
                    relabel(&sim, name, &format!("v{round}"));
                }
                _ if !alive.is_empty() => {
                    let name = alive.swap_remove(rng.random_range(0..alive.len()));
                    sim.delete("pods", Some("default"), &name).unwrap();
                }
                _ => {}
            }
        }
        match rng.random_range(0..6) {
            0 => sim.faults().close_watches(),
            1 => {
                watch_down(&sim).await;
                create(&sim, &format!("p{next}"), &[]);
                alive.push(format!("p{next}"));
                next += 1;
                up(&sim, rng.random_bool(0.5));
            }
            2 => sim.faults().compact(),
            _ => {}
        }
        if round == 10 {
            gate = None;
        }
        if round == 15 {
            let rec = Rec::new();
            let l = informer.add_listener("late", rec.clone(), None);
            late = Some((rec, l));
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(0..30))).await;
    }
    drop(gate);
    let (late, ll) = late.unwrap();
    let server = server_pods(&sim).await;
    assert_eq!(server.len(), alive.len());
    for (name, rec) in [
        ("plain", &plain),
        ("resyncing", &resyncing),
        ("stuck-for-a-while", &stuck_for_a_while),
        ("late", &late),
    ] {
        let deadline = Instant::now() + WAIT;
        while rec.view() != server {
            assert!(
                Instant::now() < deadline,
                "seed {seed}: {name}'s view differs from the server:\nview   {:?}\nserver {:?}",
                rec.view(),
                server
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    assert_eq!(store_view(informer.store()), server);
    assert!(ls.has_synced() && ll.has_synced());
}

/// A steady stream (a change every millisecond, which the daemon's client
/// reads in windows) reaches the handler whole and in order, and so does a
/// lone change after a quiet spell.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steady_stream_read_in_windows_arrives_whole_and_in_order() {
    let (sim, factory) = start(FactoryOptions {
        coalesce_after: None,
        ..FactoryOptions::default()
    })
    .await;
    create(&sim, "p", &[("app", "v0")]);
    let informer = factory.informer_for(&pods_spec()).await.unwrap();
    let rec = Rec::new();
    let l = informer.add_listener("a", rec.clone(), None);
    eventually("synced", || l.has_synced()).await;

    let mut rvs = Vec::new();
    let started = tokio::time::Instant::now();
    for i in 1..=500u64 {
        rvs.push(rv_of(&relabel(&sim, "p", &format!("v{i}"))));
        tokio::time::sleep_until(started + Duration::from_millis(i)).await;
    }
    tokio::time::sleep(WATCH_WINDOW * 50).await;
    rvs.push(rv_of(&relabel(&sim, "p", "last")));

    eventually("every update", || {
        rec.events()
            .iter()
            .filter(|e| matches!(e, Ev::Update { .. }))
            .count()
            >= rvs.len()
    })
    .await;
    let updates: Vec<String> = rec
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Ev::Update { new_rv, .. } => Some(new_rv),
            _ => None,
        })
        .collect();
    assert_eq!(updates, rvs);
}
