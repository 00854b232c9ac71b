//! The shared informer's unit tests.

use super::*;
use crate::object::tests::pod;
use crate::processor::tests::{Recorder, wait_for};

#[test]
fn initial_list_then_events_then_relist_with_tombstones() {
    let inf = SharedInformer::new("pods");
    let rec = Arc::new(Recorder::default());
    inf.add_listener("a", rec.clone(), None);
    inf.apply(Delta::Replace(vec![pod("d", "a", 1, &[]), pod("d", "b", 2, &[])]));
    assert!(inf.has_synced());
    inf.apply(Delta::Apply(pod("d", "c", 3, &[])));
    inf.apply(Delta::Apply(pod("d", "a", 4, &[])));
    inf.apply(Delta::Delete(pod("d", "zz", 5, &[]))); // unknown key: nobody hears of it
    // Relist: b vanished (tombstone), a changed, c unchanged, d new.
    inf.apply(Delta::Replace(vec![
        pod("d", "a", 6, &[]),
        pod("d", "c", 3, &[]),
        pod("d", "d", 7, &[]),
    ]));
    wait_for(|| rec.lines().len() == 8);
    assert_eq!(
        rec.lines(),
        vec![
            "add d/a true",
            "add d/b true",
            "synced",
            "add d/c false",
            "update d/a 1->4",
            "delete d/b true",
            "update d/a 4->6",
            "add d/d false",
        ]
    );
    assert_eq!(inf.store().list_keys(), vec!["d/a", "d/c", "d/d"]);
    inf.stop();
}

#[test]
fn waiting_for_sync_ends_when_the_initial_list_is_applied() {
    let inf = SharedInformer::new("pods");
    let waiter = {
        let inf = inf.clone();
        std::thread::spawn(move || futures::executor::block_on(inf.wait_for_sync()))
    };
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert!(!waiter.is_finished(), "nothing listed yet");
    inf.apply(Delta::Replace(vec![pod("d", "a", 1, &[])]));
    waiter.join().unwrap();
    // Once synced, it returns at once.
    futures::executor::block_on(inf.wait_for_sync());
    inf.stop();
}

#[test]
fn late_listener_gets_cache_replay_and_nothing_extra_goes_to_others() {
    let inf = SharedInformer::new("pods");
    let first = Arc::new(Recorder::default());
    inf.add_listener("first", first.clone(), None);
    inf.apply(Delta::Replace(vec![pod("d", "a", 1, &[]), pod("d", "b", 2, &[])]));
    let late = Arc::new(Recorder::default());
    let l = inf.add_listener("late", late.clone(), None);
    inf.apply(Delta::Apply(pod("d", "c", 3, &[])));
    wait_for(|| late.lines().len() == 4 && first.lines().len() == 4);
    assert_eq!(
        late.lines(),
        vec!["add d/a true", "add d/b true", "synced", "add d/c false"]
    );
    assert_eq!(
        first.lines(),
        vec!["add d/a true", "add d/b true", "synced", "add d/c false"]
    );
    assert!(l.has_synced());
    assert_eq!(inf.remove_listener(l.id()), 1);
    inf.stop();
}

#[test]
fn swap_hands_over_without_loss_or_overlap() {
    let inf = SharedInformer::new("pods");
    let old = Arc::new(Recorder::default());
    let l = inf.add_listener("v1", old.clone(), None);
    inf.apply(Delta::Replace(vec![pod("d", "a", 1, &[])]));
    inf.apply(Delta::Apply(pod("d", "b", 2, &[])));
    let new = Arc::new(Recorder::default());
    inf.swap_listener(l.id(), "v2", new.clone(), None).unwrap();
    inf.apply(Delta::Apply(pod("d", "c", 3, &[])));
    wait_for(|| new.lines().len() == 4 && old.lines().len() == 3);
    assert_eq!(old.lines(), vec!["add d/a true", "synced", "add d/b false"]);
    assert!(!old.lines().iter().any(|x| x.contains("d/c")));
    assert_eq!(
        new.lines(),
        vec!["add d/a true", "add d/b true", "synced", "add d/c false"]
    );
    assert_eq!(inf.listener_count(), 1);
    inf.stop();
}

#[test]
fn resync_goes_only_to_listeners_that_asked() {
    let inf = SharedInformer::new("pods");
    let with = Arc::new(Recorder::default());
    let without = Arc::new(Recorder::default());
    inf.add_listener("with", with.clone(), Some(Duration::from_secs(1)));
    inf.add_listener("without", without.clone(), None);
    inf.apply(Delta::Replace(vec![pod("d", "a", 1, &[])]));
    inf.resync_due(Instant::now() + Duration::from_secs(2));
    wait_for(|| with.lines().len() == 3);
    assert_eq!(with.lines()[2], "update d/a 1->1");
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(without.lines().len(), 2);
    inf.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resync_timer_runs_only_once_a_listener_asks_for_resyncs() {
    let inf = SharedInformer::new("pods");
    let resource = kube::api::ApiResource::erase::<k8s_openapi::api::core::v1::Pod>(&());
    let reflector = Reflector::new(resource, Default::default());
    inf.spawn(futures::stream::pending(), reflector);
    let without = Arc::new(Recorder::default());
    inf.add_listener("without", without.clone(), None);
    inf.apply(Delta::Replace(vec![pod("d", "a", 1, &[])]));
    assert!(inf.is_alive());
    assert!(!inf.has_resync_timer(), "nobody asked for resyncs");
    let with = Arc::new(Recorder::default());
    inf.add_listener("with", with.clone(), Some(Duration::from_secs(1)));
    assert!(inf.has_resync_timer());
    // Replayed (add, synced), then resynced by the timer alone.
    let waited = Instant::now();
    while with.lines().len() < 3 && waited.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(with.lines()[2], "update d/a 1->1");
    assert_eq!(without.lines(), vec!["add d/a true", "synced"]);
    inf.stop();
    assert!(!inf.has_resync_timer());
}
