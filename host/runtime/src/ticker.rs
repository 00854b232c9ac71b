//! [`EpochTicker`]: the thread that advances the shared engine's epoch every
//! [`EPOCH_TICK`] while a call into a guest is in progress, so a long call
//! yields and its deadline is enforced, and that sleeps while none is, so an
//! idle daemon is not woken 100 times a second (each wake-up of a thread
//! costs ~16 µs of CPU on a small VM). Owns the ticker thread and the count
//! of calls in progress; the engine's configuration is [`super::engine`]'s,
//! and it knows nothing about plugins.
//!
//! A call counts as in progress from [`EpochTicker::call_started`] until its
//! [`RunningCall`] is dropped, across the times it yields. Its deadline is
//! set relative to the epoch when it starts, so a call that starts while the
//! ticker sleeps wakes it, and gets its first tick [`EPOCH_TICK`] later, as
//! any other call.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use wasmtime::{Engine, EngineWeak};

/// The epoch ticker's period: the granularity of call deadlines, and the
/// longest a call runs before it yields.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Where the ticker thread is.
///
/// ```text
///   Ticking ──a tick finds no call in progress and none started since the
///             previous tick──▶ Parked
///   Parked ──a call starts (and wakes the thread)──▶ Ticking: the next tick
///             comes EPOCH_TICK later
///   any ──the last handle is dropped──▶ Stopped: the thread ends
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Ticking,
    Parked,
    Stopped,
}

/// One in the count of [`Shared::calls`]: `calls / STARTED` calls have
/// started, `calls % STARTED` are in progress. One atomic add starts a call.
const STARTED: u64 = 1 << 32;

struct Shared {
    /// Calls started (high half) and in progress (low half).
    calls: AtomicU64,
    /// Whether `state` is `Parked`, read by a starting call without the lock.
    parked: AtomicBool,
    state: Mutex<State>,
    wake: Condvar,
    /// Ticks so far (what the tests watch).
    ticks: AtomicU64,
}

impl Shared {
    fn in_progress(&self) -> u64 {
        self.calls.load(Ordering::SeqCst) % STARTED
    }

    /// Move to `next` and tell the thread.
    fn set(&self, next: State) {
        let mut state = self.state.lock().unwrap();
        if *state != State::Stopped {
            *state = next;
        }
        self.wake.notify_one();
    }
}

/// The ticker of one engine; dropping it stops the thread.
pub struct EpochTicker {
    shared: Arc<Shared>,
}

/// A call in progress (see [`EpochTicker::call_started`]).
pub struct RunningCall<'a> {
    shared: &'a Shared,
}

impl Drop for RunningCall<'_> {
    fn drop(&mut self) {
        self.shared.calls.fetch_sub(1, Ordering::SeqCst);
    }
}

impl EpochTicker {
    /// Start ticking `engine` (parked until the first call).
    pub fn start(engine: &Engine) -> std::io::Result<EpochTicker> {
        let shared = Arc::new(Shared {
            calls: AtomicU64::new(0),
            parked: AtomicBool::new(false),
            state: Mutex::new(State::Ticking),
            wake: Condvar::new(),
            ticks: AtomicU64::new(0),
        });
        let (engine, thread) = (engine.weak(), shared.clone());
        std::thread::Builder::new()
            .name("wink-epoch".into())
            .spawn(move || run(&thread, &engine))?;
        Ok(EpochTicker { shared })
    }

    /// A call into a guest starts: the ticker ticks until it ends (wakes
    /// it if it sleeps).
    pub fn call_started(&self) -> RunningCall<'_> {
        let shared = &*self.shared;
        shared.calls.fetch_add(STARTED + 1, Ordering::SeqCst);
        // After the add: either the thread sees this call before it parks,
        // or this sees it parked (both sides are SeqCst).
        if shared.parked.load(Ordering::SeqCst) {
            shared.set(State::Ticking);
        }
        RunningCall { shared }
    }

    /// Whether the thread sleeps (no call in progress).
    pub fn is_parked(&self) -> bool {
        *self.shared.state.lock().unwrap() == State::Parked
    }

    /// Ticks so far.
    pub fn ticks(&self) -> u64 {
        self.shared.ticks.load(Ordering::Relaxed)
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.shared.set(State::Stopped);
    }
}

/// The thread: the transitions of [`State`] are all here (but the wake-up
/// of a starting call and the stop of a dropped handle).
fn run(shared: &Shared, engine: &EngineWeak) {
    let mut seen = shared.calls.load(Ordering::SeqCst) / STARTED;
    loop {
        std::thread::sleep(EPOCH_TICK);
        let Some(engine) = engine.upgrade() else { return };
        engine.increment_epoch();
        drop(engine);
        shared.ticks.fetch_add(1, Ordering::Relaxed);
        let started = shared.calls.load(Ordering::SeqCst) / STARTED;
        let quiet = started == seen;
        seen = started;
        let mut state = shared.state.lock().unwrap();
        if *state == State::Stopped {
            return;
        }
        if !quiet || shared.in_progress() > 0 {
            continue;
        }
        // Parked is published before the calls in progress are read again,
        // and a starting call wakes the thread under this lock, which the
        // thread holds until it waits: no start is missed.
        *state = State::Parked;
        shared.parked.store(true, Ordering::SeqCst);
        while *state == State::Parked && shared.in_progress() == 0 {
            state = shared.wake.wait(state).unwrap();
        }
        shared.parked.store(false, Ordering::SeqCst);
        match *state {
            State::Stopped => return,
            _ => *state = State::Ticking,
        }
        seen = shared.calls.load(Ordering::SeqCst) / STARTED;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn wait_until(what: &str, f: impl Fn() -> bool) {
        let start = Instant::now();
        while !f() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "timed out waiting until {what}"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// A ticker on a new engine, once it has parked (no call yet).
    fn parked_ticker() -> (Engine, EpochTicker) {
        let engine = Engine::default();
        let ticker = EpochTicker::start(&engine).unwrap();
        wait_until("parked", || ticker.is_parked());
        (engine, ticker)
    }

    #[test]
    fn it_sleeps_without_calls_and_ticks_while_one_is_in_progress() {
        let (_engine, ticker) = parked_ticker();
        let ticks = ticker.ticks();
        std::thread::sleep(EPOCH_TICK * 5);
        assert_eq!(ticker.ticks(), ticks, "no tick while parked");
        let call = ticker.call_started();
        wait_until("three ticks into the call", || ticker.ticks() >= ticks + 3);
        assert!(!ticker.is_parked(), "a call in progress keeps it ticking");
        drop(call);
        wait_until("parked again", || ticker.is_parked());
    }

    #[test]
    fn a_call_that_ends_between_ticks_still_gets_the_next_tick() {
        let (_engine, ticker) = parked_ticker();
        let ticks = ticker.ticks();
        drop(ticker.call_started());
        wait_until("one tick", || ticker.ticks() > ticks);
        wait_until("parked again", || ticker.is_parked());
    }

    #[test]
    fn dropping_the_handle_ends_the_thread_parked_or_not() {
        for park in [true, false] {
            let engine = Engine::default();
            let ticker = EpochTicker::start(&engine).unwrap();
            let shared = Arc::downgrade(&ticker.shared);
            let call = (!park).then(|| ticker.call_started());
            if park {
                wait_until("parked", || ticker.is_parked());
            }
            drop(call);
            drop(ticker);
            wait_until("the thread ended", || shared.upgrade().is_none());
        }
    }
}
