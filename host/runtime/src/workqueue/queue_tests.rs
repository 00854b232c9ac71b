//! client-go's queue_test.go, for string keys on tokio.

use super::*;
use std::sync::Arc;
use std::time::Duration;

/// TestBasic: many producers and consumers; every key is processed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producers_and_consumers_process_every_key() {
    let q = Arc::new(Queue::default());
    let producers: Vec<_> = (0..50)
        .map(|i| {
            let q = q.clone();
            tokio::spawn(async move {
                for j in 0..50 {
                    q.add(&format!("{i}-{j}"));
                }
            })
        })
        .collect();
    let consumers: Vec<_> = (0..10)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move {
                let mut seen = 0;
                while let Some(k) = q.get().await {
                    seen += 1;
                    q.done(&k);
                }
                seen
            })
        })
        .collect();
    for p in producers {
        p.await.unwrap();
    }
    q.shut_down();
    let mut total = 0;
    for c in consumers {
        total += c.await.unwrap();
    }
    assert_eq!(total, 50 * 50);
    assert_eq!(q.len(), 0);
}

/// TestAddWhileProcessing: consumers re-add what they process; the queue
/// ends empty, with both kinds of shutdown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adds_while_processing_end_empty() {
    for drain in [false, true] {
        let q = Arc::new(Queue::default());
        for i in 0..50 {
            q.add(&i.to_string());
        }
        let consumers: Vec<_> = (0..10)
            .map(|_| {
                let q = q.clone();
                tokio::spawn(async move {
                    let mut counts = std::collections::HashMap::new();
                    while let Some(k) = q.get().await {
                        let n = counts.entry(k.clone()).or_insert(0);
                        *n += 1;
                        if *n < 2 {
                            q.add(&k);
                        }
                        q.done(&k);
                    }
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(10)).await;
        match drain {
            true => q.shut_down_with_drain().await,
            false => q.shut_down(),
        }
        for c in consumers {
            c.await.unwrap();
        }
        assert_eq!(q.len(), 0);
    }
}

/// TestLen: a key added twice counts once.
#[test]
fn len_counts_a_key_once() {
    let q = Queue::default();
    q.add("foo");
    assert_eq!(q.len(), 1);
    q.add("bar");
    assert_eq!(q.len(), 2);
    q.add("foo");
    assert_eq!(q.len(), 2);
    assert_eq!(q.metrics().adds.get(), 2, "only new keys count as adds");
}

/// TestReinsert: a key added while processed comes back after `done`.
#[tokio::test]
async fn a_key_added_while_processed_comes_back_after_done() {
    let q = Queue::default();
    q.add("foo");
    let k = q.get().await.unwrap();
    assert_eq!(&*k, "foo");
    q.add(&k);
    assert_eq!(q.len(), 0, "not queued while processed");
    q.done(&k);
    let k = q.get().await.unwrap();
    assert_eq!(&*k, "foo");
    q.done(&k);
    assert_eq!(q.len(), 0);
}

/// TestCollapse: two adds, one get.
#[tokio::test]
async fn two_adds_collapse_into_one() {
    let q = Queue::default();
    q.add("bar");
    q.add("bar");
    let k = q.get().await.unwrap();
    assert_eq!(&*k, "bar");
    q.done(&k);
    assert_eq!(q.len(), 0);
    assert_eq!(q.held(), 0);
}

/// TestCollapseWhileProcessing: a key added twice while processed is not
/// handed to a second worker until the first is done, then once.
#[tokio::test(start_paused = true)]
async fn a_key_is_never_processed_twice_at_once() {
    let q = Arc::new(Queue::default());
    q.add("foo");
    let first = q.get().await.unwrap();
    q.add("foo");
    q.add("foo");
    let other = tokio::spawn({
        let q = q.clone();
        async move {
            let k = q.get().await.unwrap();
            q.done(&k);
            k
        }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !other.is_finished(),
        "the second worker waits while foo is processed"
    );
    q.done(&first);
    assert_eq!(&*other.await.unwrap(), "foo");
    assert_eq!(q.len(), 0);
    assert_eq!(q.held(), 0);
}

/// TestQueueDrainageUsingShutDownWithDrain: the drain waits for `done`.
#[tokio::test(start_paused = true)]
async fn shut_down_with_drain_waits_for_processing() {
    let q = Arc::new(Queue::default());
    q.add("foo");
    q.add("bar");
    let a = q.get().await.unwrap();
    let b = q.get().await.unwrap();
    let drain = tokio::spawn({
        let q = q.clone();
        async move { q.shut_down_with_drain().await }
    });
    while !q.shutting_down() {
        tokio::task::yield_now().await;
    }
    assert!(q.get().await.is_none());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!drain.is_finished(), "two keys are still processed");
    q.done(&a);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!drain.is_finished(), "one key is still processed");
    q.done(&b);
    drain.await.unwrap();
}

/// TestNoQueueDrainageUsingShutDown and TestForceQueueShutdownUsingShutDown:
/// a plain shut down waits for nothing and cuts a drain short.
#[tokio::test(start_paused = true)]
async fn shut_down_cuts_a_drain_short() {
    let q = Arc::new(Queue::default());
    q.add("foo");
    let _processing = q.get().await.unwrap();
    let drain = tokio::spawn({
        let q = q.clone();
        async move { q.shut_down_with_drain().await }
    });
    while !q.shutting_down() {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(!drain.is_finished());
    q.shut_down();
    drain.await.unwrap();
    q.add("bar");
    assert_eq!(q.len(), 0, "adds after shut down are ignored");
}

/// TestQueueDrainageUsingShutDownWithDrainWithDirtyItem: a key added while
/// processed before the drain is handed out again after `done`.
#[tokio::test(start_paused = true)]
async fn a_drain_hands_out_a_dirty_key_again() {
    let q = Arc::new(Queue::default());
    q.add("foo");
    let k = q.get().await.unwrap();
    q.add("foo");
    let drain = tokio::spawn({
        let q = q.clone();
        async move { q.shut_down_with_drain().await }
    });
    while !q.shutting_down() {
        tokio::task::yield_now().await;
    }
    assert!(q.get().await.is_none(), "nothing queued now");
    q.done(&k);
    let again = q.get().await.expect("foo is queued again after done");
    assert_eq!(&*again, "foo");
    assert!(!drain.is_finished());
    q.done(&again);
    assert!(q.get().await.is_none());
    drain.await.unwrap();
}

/// TestGarbageCollection, as bounded memory: a key added a million times
/// is held once, and nothing is held once it is done.
#[tokio::test]
async fn a_key_is_held_once_however_often_added() {
    let q = Queue::default();
    for _ in 0..1_000_000 {
        q.add("foo");
    }
    assert_eq!((q.len(), q.held()), (1, 1));
    let k = q.get().await.unwrap();
    for _ in 0..1_000_000 {
        q.add("foo");
    }
    assert_eq!((q.len(), q.held()), (0, 1));
    q.done(&k);
    let k = q.get().await.unwrap();
    q.done(&k);
    assert_eq!((q.len(), q.held()), (0, 0));
    assert_eq!(q.oldest(), None);
}

/// The metrics follow the key: depth, adds, time queued and worked, the
/// unfinished work of a key being processed.
#[tokio::test(start_paused = true)]
async fn metrics_follow_the_keys() {
    let q = Queue::default();
    q.add("a");
    q.add("b");
    assert_eq!(q.metrics().depth.get(), 2);
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert_eq!(q.oldest(), Some(Duration::from_millis(30)));
    let k = q.get().await.unwrap();
    assert_eq!(q.metrics().depth.get(), 1);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (sum, longest) = q.in_progress();
    assert_eq!(
        (sum, longest),
        (Duration::from_millis(20), Duration::from_millis(20))
    );
    q.done(&k);
    assert_eq!(q.in_progress(), (Duration::ZERO, Duration::ZERO));
    assert_eq!(q.metrics().adds.get(), 2);
}
