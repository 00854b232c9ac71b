//! The wake-up window the paced benchmark can give every consumer's runtime
//! (`PACED_PARK_WINDOW_US`): a measurement of what batching wake-ups would
//! save, not wink's runtime.
//!
//! A worker about to park whose previous park lasted under half a window
//! (work comes faster than that) first sleeps one window, so what arrives
//! meanwhile wakes nobody and is read in one go. The wait is a blocking
//! sleep before tokio parks the worker, which is why the daemon does not do
//! this: a task injected from outside the runtime during it is seen only at
//! the worker's next wake-up.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// `PACED_PARK_WINDOW_US`, if set and not 0.
pub fn park_window() -> Option<Duration> {
    let us: u64 = std::env::var("PACED_PARK_WINDOW_US").ok()?.parse().ok()?;
    (us > 0).then(|| Duration::from_micros(us))
}

thread_local! {
    static PARKED: Cell<Parks> = const { Cell::new(Parks { since: None, last: Duration::MAX }) };
}

/// A worker's parks: when the last began, and how long the previous lasted.
#[derive(Clone, Copy)]
struct Parks {
    since: Option<Instant>,
    last: Duration,
}

impl Parks {
    fn before_park(self, window: Duration) -> Parks {
        if self.last < window / 2 {
            std::thread::sleep(window);
        }
        Parks {
            since: Some(Instant::now()),
            ..self
        }
    }

    fn unparked(self) -> Parks {
        Parks {
            since: None,
            last: self.since.map_or(Duration::MAX, |t| t.elapsed()),
        }
    }
}

/// `on_thread_park`: sleep one window first if the worker is busy.
pub fn before_park(window: Duration) {
    PARKED.with(|p| p.set(p.get().before_park(window)));
}

/// `on_thread_unpark`.
pub fn unparked() {
    PARKED.with(|p| p.set(p.get().unparked()));
}
