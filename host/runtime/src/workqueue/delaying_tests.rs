//! client-go's delaying_queue_test.go, on tokio's paused clock.

use super::*;
use std::time::Duration;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Let the waiting loop run after the clock moved.
async fn step(d: Duration) {
    tokio::time::sleep(d).await;
    for _ in 0..4 {
        tokio::task::yield_now().await;
    }
}

fn delaying() -> Delaying {
    Delaying::new(Arc::new(Queue::default()))
}

/// TestSimpleQueue: a delayed key arrives after its delay, not before.
#[tokio::test(start_paused = true)]
async fn a_delayed_key_arrives_after_its_delay() {
    let q = delaying();
    q.add_after("foo", ms(50));
    step(ms(0)).await;
    assert_eq!(q.queue().len(), 0, "not before its time");
    step(ms(49)).await;
    assert_eq!(q.queue().len(), 0, "not before its time");
    step(ms(1)).await;
    assert_eq!(q.queue().len(), 1);
    let k = q.queue().get().await.unwrap();
    q.queue().done(&k);
    assert_eq!(q.waiting(), 0);
    q.shut_down();
}

/// TestDeduping: a key waits once, for the earlier of its times.
#[tokio::test(start_paused = true)]
async fn a_waiting_key_keeps_its_earliest_time() {
    let q = delaying();
    q.add_after("foo", ms(50));
    q.add_after("foo", ms(70));
    assert_eq!(q.waiting(), 1);
    step(ms(60)).await;
    assert_eq!(q.queue().len(), 1, "due at the first time");
    let k = q.queue().get().await.unwrap();
    q.queue().done(&k);
    step(ms(20)).await;
    assert_eq!(q.queue().len(), 0, "the later time was dropped");

    // The earlier overrides.
    q.add_after("foo", ms(50));
    q.add_after("foo", ms(30));
    step(ms(40)).await;
    assert_eq!(q.queue().len(), 1, "due at the earlier time");
    let k = q.queue().get().await.unwrap();
    q.queue().done(&k);
    step(ms(20)).await;
    assert_eq!(q.queue().len(), 0);
    q.shut_down();
}

/// TestAddTwoFireEarly: keys come due in time order, whatever the order
/// they were added in.
#[tokio::test(start_paused = true)]
async fn keys_come_due_in_time_order() {
    let q = delaying();
    q.add_after("foo", ms(1000));
    q.add_after("bar", ms(50));
    step(ms(60)).await;
    assert_eq!(&*q.queue().get().await.unwrap(), "bar");
    q.add_after("baz", ms(2000));
    step(ms(1000)).await;
    assert_eq!(q.queue().len(), 1);
    assert_eq!(&*q.queue().get().await.unwrap(), "foo");
    step(ms(2000)).await;
    assert_eq!(&*q.queue().get().await.unwrap(), "baz");
    q.shut_down();
}

/// TestCopyShifting: several due at once are added earliest first.
#[tokio::test(start_paused = true)]
async fn keys_due_together_are_added_earliest_first() {
    let q = delaying();
    q.add_after("foo", ms(1000));
    q.add_after("bar", ms(500));
    q.add_after("baz", ms(250));
    step(ms(0)).await;
    assert_eq!(q.queue().len(), 0);
    step(ms(2000)).await;
    assert_eq!(q.queue().len(), 3);
    for want in ["baz", "bar", "foo"] {
        assert_eq!(&*q.queue().get().await.unwrap(), want);
    }
    q.shut_down();
}

/// Bounded memory: a key made earlier again and again is held once, and the
/// heap's stale entries are dropped.
#[tokio::test(start_paused = true)]
async fn a_key_made_earlier_often_is_held_once() {
    let q = delaying();
    for i in (1..10_000u64).rev() {
        q.add_after("foo", ms(i + 10));
    }
    assert_eq!(q.waiting(), 1);
    assert!(q.inner.waiting.lock().unwrap().heap.len() <= 2 + 16);
    step(ms(11)).await;
    assert_eq!(q.queue().len(), 1);
    assert_eq!(q.waiting(), 0);
    q.shut_down();
}

/// A zero delay adds at once; after shut down nothing is added.
#[tokio::test(start_paused = true)]
async fn zero_delay_adds_now_and_shut_down_ignores() {
    let q = delaying();
    q.add_after("now", Duration::ZERO);
    assert_eq!(q.queue().len(), 1);
    q.shut_down();
    q.add_after("later", ms(1));
    step(ms(5)).await;
    assert_eq!(q.waiting(), 0);
    assert_eq!(q.queue().len(), 1);
}
