//! Whether a listener's next batch starts in place, on the informer's
//! thread, or as a task (see [`super::Starts`]): a listener whose batches
//! took longer than [`IN_PLACE_BUDGET`] a call twice within [`SPAWNED_FOR`]
//! has its batches spawned for [`SPAWNED_FOR`], and twice as long each time
//! it is slow again within that long of coming back, up to
//! [`SPAWNED_FOR_MAX`]. So a plugin that stays slow costs the informer two
//! batches (each cut at the next epoch tick) a minute, and one that was slow
//! for a while is back in place a second after.
//!
//! Owns that decision and its clock; never runs a batch.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The longest a call may take on average in a batch run in place before
/// its listener's next batches are spawned instead.
pub const IN_PLACE_BUDGET: Duration = Duration::from_micros(500);

/// How long a listener that was slow in place has its batches spawned, the
/// first time.
pub const SPAWNED_FOR: Duration = Duration::from_secs(1);

/// The longest a slow listener's batches are spawned at a time.
pub const SPAWNED_FOR_MAX: Duration = Duration::from_secs(64);

/// A fixed instant the listeners' clocks count from.
fn process_epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Now, in nanoseconds since [`process_epoch`].
fn now() -> u64 {
    process_epoch().elapsed().as_nanos() as u64
}

/// One listener's record of slow batches (times in nanoseconds since
/// [`process_epoch`]; 0: never).
#[derive(Default)]
pub struct InPlace {
    /// Until when its batches are spawned rather than started in place.
    spawned_until: AtomicU64,
    /// When a batch of it was last slow in place.
    slow_at: AtomicU64,
    /// How long its batches were last spawned for.
    spawned_for: AtomicU64,
}

impl InPlace {
    /// Whether its next batch may start in place.
    pub fn ok(&self) -> bool {
        self.ok_at(now())
    }

    fn ok_at(&self, now: u64) -> bool {
        now >= self.spawned_until.load(Ordering::Relaxed)
    }

    /// A batch of it was slow in place.
    pub fn was_slow(&self) {
        self.was_slow_at(now());
    }

    /// If a batch was slow within the last [`SPAWNED_FOR`] too, its batches
    /// are spawned: for [`SPAWNED_FOR`], or twice as long as the last time
    /// when that ended less than that long ago.
    fn was_slow_at(&self, now: u64) {
        let window = SPAWNED_FOR.as_nanos() as u64;
        let last = self.slow_at.swap(now, Ordering::Relaxed);
        if last == 0 || now.saturating_sub(last) >= window {
            return;
        }
        let until = self.spawned_until.load(Ordering::Relaxed);
        let period = self.spawned_for.load(Ordering::Relaxed);
        let period = match until != 0 && now < until.saturating_add(period) {
            true => (period * 2).min(SPAWNED_FOR_MAX.as_nanos() as u64),
            false => window,
        };
        self.spawned_for.store(period, Ordering::Relaxed);
        self.spawned_until.store(now + period, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn slow_twice_not_once_leaves_the_thread_for_a_second() {
        let p = InPlace::default();
        assert!(p.ok_at(1_000 * MS));
        // Once: a thread preempted mid-call looks like this.
        p.was_slow_at(1_000 * MS);
        assert!(p.ok_at(1_001 * MS));
        // Again within a second: a slow plugin.
        p.was_slow_at(1_100 * MS);
        assert!(!p.ok_at(2_099 * MS));
        assert!(p.ok_at(2_100 * MS));
        // Slow twice but more than a second apart: no plugin to move.
        p.was_slow_at(5_000 * MS);
        p.was_slow_at(6_500 * MS);
        assert!(p.ok_at(6_501 * MS));
    }

    #[test]
    fn slow_again_right_after_coming_back_doubles_up_to_the_cap() {
        let p = InPlace::default();
        let mut now = 1_000 * MS;
        let mut periods = Vec::new();
        for _ in 0..9 {
            // Back in place, two slow batches at once.
            p.was_slow_at(now);
            p.was_slow_at(now + 10 * MS);
            let until = p.spawned_until.load(Ordering::Relaxed);
            periods.push((until - (now + 10 * MS)) / 1_000 / MS);
            assert!(!p.ok_at(until - 1) && p.ok_at(until));
            now = until;
        }
        assert_eq!(periods, [1, 2, 4, 8, 16, 32, 64, 64, 64]);
        // Fast in place for longer than its last period: a second again.
        now += 65_000 * MS;
        p.was_slow_at(now);
        p.was_slow_at(now + 10 * MS);
        assert_eq!(
            p.spawned_for.load(Ordering::Relaxed),
            SPAWNED_FOR.as_nanos() as u64
        );
    }
}
