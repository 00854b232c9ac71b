//! The delivery pool: the threads native (non-async) handlers' listeners
//! deliver on. A listener with
//! something queued is scheduled once (it is in the ready queue or being
//! run, never both), and a worker runs a batch of its notifications, so one
//! listener's calls never overlap and keep their order, while one wake-up
//! serves every listener an event was queued for.
//!
//! One event queued for many listeners wakes one worker, which delivers to
//! each in turn. Isolation: a handler stuck in a long call holds one worker,
//! never the pool. A monitor looks every [`TICK`] while work is being
//! queued: work that has waited [`STALL`] gets another worker (an idle one
//! woken, or, when every worker has been in one call that long, a new
//! thread), so a stuck plugin delays the others by milliseconds, not by its
//! call; workers beyond the base count retire after [`RETIRE`] idle. Owns only the threads and the ready queue; what a
//! batch delivers is the listener's.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// What the pool runs: one listener's batch of notifications. The
/// processor's listeners implement it; the pool knows nothing else of them.
pub(super) trait Batch: Send + Sync {
    /// Deliver a batch on this worker (`slot`, timed from `epoch`).
    fn run_batch(self: Arc<Self>, slot: &Slot, epoch: Instant);
}

/// How long work may wait behind workers all busy in one call each before
/// the pool adds a worker.
pub const STALL: Duration = Duration::from_millis(2);

/// How often the monitor looks while work is being queued.
pub const TICK: Duration = Duration::from_millis(5);

/// How long without new work before the monitor rests.
pub const QUIET: Duration = Duration::from_millis(100);

/// How long a worker beyond the base count may be idle before it ends.
pub const RETIRE: Duration = Duration::from_secs(5);

/// One worker's clock: when its current call started (nanoseconds since the
/// pool's epoch), 0 between calls.
#[derive(Default)]
pub(super) struct Slot {
    busy_since: AtomicU64,
}

impl Slot {
    /// A handler call starts.
    pub(super) fn enter(&self, epoch: Instant) {
        let now = epoch.elapsed().as_nanos().max(1) as u64;
        self.busy_since.store(now, Ordering::Relaxed);
    }

    /// The call returned.
    pub(super) fn leave(&self) {
        self.busy_since.store(0, Ordering::Relaxed);
    }

    fn busy_for(&self, epoch: Instant) -> Option<Duration> {
        match self.busy_since.load(Ordering::Relaxed) {
            0 => None,
            since => Some(epoch.elapsed().saturating_sub(Duration::from_nanos(since))),
        }
    }
}

struct State {
    /// Listeners with work, and when each was queued.
    ready: VecDeque<(Instant, Arc<dyn Batch>)>,
    /// The last time work was queued (the monitor rests after a quiet spell).
    /// Workers waiting for work.
    idle: usize,
    /// Workers notified and not yet running (one wake-up at a time).
    waking: usize,
    slots: Vec<Arc<Slot>>,
    last_scheduled: Instant,
    /// Whether the monitor is awake, checking for stalls.
    watching: bool,
}

/// The process's delivery pool.
pub(super) struct Pool {
    state: Mutex<State>,
    work: Condvar,
    stall: Condvar,
    base: usize,
    pub(super) epoch: Instant,
}

/// The pool every listener of the process delivers on.
pub(super) fn pool() -> &'static Arc<Pool> {
    static POOL: OnceLock<Arc<Pool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let base = std::thread::available_parallelism().map_or(2, |n| n.get()).max(2);
        let pool = Arc::new(Pool {
            state: Mutex::new(State {
                ready: VecDeque::new(),
                idle: 0,
                waking: 0,
                slots: Vec::new(),
                last_scheduled: Instant::now(),
                watching: false,
            }),
            work: Condvar::new(),
            stall: Condvar::new(),
            base,
            epoch: Instant::now(),
        });
        {
            let mut st = pool.state.lock().unwrap();
            for _ in 0..base {
                pool.spawn_worker(&mut st);
            }
        }
        let monitor = pool.clone();
        std::thread::Builder::new()
            .name("wink-pool-monitor".into())
            .spawn(move || monitor.monitor())
            .expect("spawn the pool monitor");
        pool
    })
}

impl Pool {
    fn spawn_worker(self: &Arc<Self>, st: &mut State) {
        let slot = Arc::new(Slot::default());
        st.slots.push(slot.clone());
        let pool = self.clone();
        std::thread::Builder::new()
            .name("wink-delivery".into())
            .spawn(move || pool.work_loop(slot))
            .expect("spawn a delivery worker");
    }

    /// Queue `listener` (it has work and is not queued or running). Wakes
    /// one idle worker when none is on its way already; the notification is
    /// sent after the lock is released, so the woken worker does not block
    /// on it.
    pub(super) fn schedule<L: Batch + 'static>(&self, listener: Arc<L>) {
        self.schedule_all([listener]);
    }

    /// [`schedule`](Self::schedule) for every listener an event went to, at
    /// once: one lock, at most one wake-up.
    pub(super) fn schedule_all<L: Batch + 'static>(&self, listeners: impl IntoIterator<Item = Arc<L>>) {
        let now = Instant::now();
        let (wake, watch) = {
            let mut st = self.state.lock().unwrap();
            st.ready
                .extend(listeners.into_iter().map(|l| (now, l as Arc<dyn Batch>)));
            st.last_scheduled = now;
            let wake = st.idle > st.waking && st.waking == 0;
            if wake {
                st.waking += 1;
            }
            let watch = !st.watching;
            st.watching = true;
            (wake, watch)
        };
        if wake {
            self.work.notify_one();
        }
        if watch {
            self.stall.notify_one();
        }
    }

    fn work_loop(self: Arc<Self>, slot: Arc<Slot>) {
        loop {
            let listener = {
                let mut st = self.state.lock().unwrap();
                loop {
                    // One worker takes every ready listener in turn; the
                    // monitor brings in another when work waits too long.
                    if let Some((_, l)) = st.ready.pop_front() {
                        break l;
                    }
                    st.idle += 1;
                    let (guard, timeout) = self.work.wait_timeout(st, RETIRE).unwrap();
                    st = guard;
                    st.idle -= 1;
                    st.waking = st.waking.saturating_sub(1);
                    if timeout.timed_out() && st.ready.is_empty() && st.slots.len() > self.base {
                        st.slots.retain(|s| !Arc::ptr_eq(s, &slot));
                        return;
                    }
                }
            };
            listener.run_batch(&slot, self.epoch);
        }
    }

    /// While work is being queued, every [`TICK`]: work that has waited
    /// [`STALL`] gets an idle worker woken, or, when every worker has been
    /// in one call that long, a new worker. After [`QUIET`] without new
    /// work it sleeps until work comes (one wake-up then, not per event).
    fn monitor(self: Arc<Self>) {
        let mut st = self.state.lock().unwrap();
        loop {
            while !st.watching {
                st = self.stall.wait(st).unwrap();
            }
            st = self.stall.wait_timeout(st, TICK).unwrap().0;
            let waited = st.ready.front().map(|(at, _)| at.elapsed());
            match waited {
                None if st.last_scheduled.elapsed() >= QUIET => st.watching = false,
                Some(w) if w >= STALL && st.idle > st.waking => {
                    st.waking += 1;
                    self.work.notify_one();
                }
                Some(w) if w >= STALL => {
                    let stuck = st
                        .slots
                        .iter()
                        .all(|s| s.busy_for(self.epoch).is_some_and(|d| d >= STALL));
                    if stuck {
                        tracing::debug!(
                            workers = st.slots.len() + 1,
                            "every delivery worker is in a long call: one more"
                        );
                        self.spawn_worker(&mut st);
                    }
                }
                _ => {}
            }
        }
    }

    /// Workers now.
    #[cfg(test)]
    pub(super) fn workers(&self) -> usize {
        self.state.lock().unwrap().slots.len()
    }
}
