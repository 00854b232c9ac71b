//! client-go's default_rate_limiters_test.go.

use super::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// TestItemExponentialFailureRateLimiter.
#[test]
fn item_exponential_doubles_per_key_and_forget_resets() {
    let l = ItemExponentialFailure::new(ms(1), Duration::from_secs(1));
    for want in [1, 2, 4, 8, 16] {
        assert_eq!(l.when("one"), ms(want));
    }
    assert_eq!(l.num_requeues("one"), 5);
    assert_eq!(l.when("two"), ms(1));
    assert_eq!(l.when("two"), ms(2));
    assert_eq!(l.num_requeues("two"), 2);
    l.forget("one");
    assert_eq!(l.num_requeues("one"), 0);
    assert_eq!(l.when("one"), ms(1));
}

/// TestItemExponentialFailureRateLimiterOverFlow.
#[test]
fn item_exponential_caps_instead_of_overflowing() {
    let l = ItemExponentialFailure::new(ms(1), Duration::from_secs(1000));
    for _ in 0..5 {
        l.when("one");
    }
    assert_eq!(l.when("one"), ms(32));
    for _ in 0..1000 {
        l.when("overflow1");
    }
    assert_eq!(l.when("overflow1"), Duration::from_secs(1000));

    let minute = Duration::from_secs(60);
    let l = ItemExponentialFailure::new(minute, minute * 60 * 1000);
    for _ in 0..2 {
        l.when("two");
    }
    assert_eq!(l.when("two"), minute * 4);
    for _ in 0..1000 {
        l.when("overflow2");
    }
    assert_eq!(l.when("overflow2"), minute * 60 * 1000);
}

/// The bucket: a burst passes at once, then one token per 1/qps.
#[tokio::test(start_paused = true)]
async fn bucket_passes_its_burst_then_paces() {
    let l = Bucket::new(10, 3);
    for _ in 0..3 {
        assert_eq!(l.when("k"), Duration::ZERO);
    }
    assert_eq!(l.when("k"), ms(100));
    assert_eq!(l.when("k"), ms(200), "reservations queue up");
    tokio::time::advance(Duration::from_secs(10)).await;
    for _ in 0..3 {
        assert_eq!(l.when("k"), Duration::ZERO, "refilled up to the burst");
    }
    assert_eq!(l.when("k"), ms(100));
    assert_eq!(l.num_requeues("k"), 0);
}

/// TestMaxOfRateLimiter: the longer wait wins; requeues and forget span
/// every limiter.
#[tokio::test(start_paused = true)]
async fn max_of_takes_the_longest() {
    let l = MaxOf(vec![
        Box::new(Bucket::new(10, 2)),
        Box::new(ItemExponentialFailure::new(ms(1), Duration::from_secs(1))),
    ]);
    assert_eq!(
        l.when("one"),
        ms(1),
        "the bucket's burst passes; the backoff's 1 ms"
    );
    assert_eq!(l.when("one"), ms(2));
    assert_eq!(
        l.when("one"),
        ms(100),
        "past the burst the bucket's wait is longer"
    );
    assert_eq!(l.num_requeues("one"), 3);
    l.forget("one");
    assert_eq!(l.num_requeues("one"), 0);
}

/// client-go's default controller limiter: 5 ms doubling to 1,000 s.
#[tokio::test(start_paused = true)]
async fn controller_defaults() {
    let c = crate::workqueue::Config::default();
    let l = controller(c.base_delay, c.max_delay, c.qps, c.burst);
    assert_eq!(l.when("k"), ms(5));
    assert_eq!(l.when("k"), ms(10));
    for _ in 0..40 {
        l.when("k");
    }
    assert_eq!(l.when("k"), Duration::from_secs(1000));
}
