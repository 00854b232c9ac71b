//! The processor: one [`Listener`] per registered handler, each with its own
//! queue and delivery thread (client-go's sharedProcessor/processorListener).
//!
//! Owns ordering and isolation: notifications reach one handler in the order
//! they were enqueued, and a slow or stuck handler only grows its own queue.
//! It never touches the store; the informer enqueues after the store changed.

use super::object::ObjRef;
pub use super::queue::Notification;
use super::queue::PendingQueue;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What a listener delivers to. Implemented by the plugin runtime and by
/// tests. Calls for one listener never overlap.
pub trait EventHandler: Send + Sync {
    fn on_add(&self, obj: &ObjRef, in_initial_list: bool);
    fn on_update(&self, old: &ObjRef, new: &ObjRef);
    fn on_delete(&self, obj: &ObjRef, final_state_unknown: bool);
    /// The listener has delivered its initial list.
    fn on_synced(&self) {}
}

/// The state of a listener's delivery thread, kept under its queue's lock.
///
/// ```text
///   Awake ──ran dry, lingered──▶ Asleep ──push (wakes it once)──▶ Awake
///   Awake | Asleep ──drain_and_stop──▶ Draining ──queue empty──▶ (thread ends)
///   any ──stop / drop──▶ Stopped ──▶ (thread ends)
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListenerState {
    /// Delivering, or lingering after its queue ran dry: a push wakes no one
    /// (a futex wake is a syscall; a busy or lingering thread needs none).
    Awake,
    /// Asleep on `ready` until woken: the next push wakes it and makes it
    /// `Awake`, so it is woken once, not by every push until it runs.
    Asleep,
    /// Accepts nothing more; delivers what is queued, then ends (a hand-over
    /// to a new handler).
    Draining,
    /// Delivers nothing more; the thread ends after its current call.
    Stopped,
}

impl ListenerState {
    /// Whether a push is accepted.
    fn accepts(self) -> bool {
        matches!(self, ListenerState::Awake | ListenerState::Asleep)
    }

    /// A push was accepted: returns whether the thread must be woken.
    fn on_push(&mut self) -> bool {
        let wake = *self == ListenerState::Asleep;
        if wake {
            *self = ListenerState::Awake;
        }
        wake
    }

    /// The thread goes to sleep (only an awake thread does).
    fn on_sleep(&mut self) {
        if *self == ListenerState::Awake {
            *self = ListenerState::Asleep;
        }
    }

    /// The thread woke: unless told to drain or stop meanwhile, it is awake.
    fn on_wake(&mut self) {
        if *self == ListenerState::Asleep {
            *self = ListenerState::Awake;
        }
    }

    /// Told to deliver what is queued and end.
    fn on_drain(&mut self) {
        if self.accepts() {
            *self = ListenerState::Draining;
        }
    }
}

struct Queue {
    items: PendingQueue,
    state: ListenerState,
}

/// How long a delivery thread whose queue ran dry waits for more before it
/// sleeps until woken. Notifications arriving meanwhile wait for the end of
/// the window and are then delivered as a batch: under a steady stream a
/// thread wakes once per window instead of once per notification (a context
/// switch each: with many plugins on few cores, the switches cost more than
/// the deliveries). The first notification after a quiet spell is delivered
/// at once; one during a burst may wait up to this long.
pub const LINGER: Duration = Duration::from_micros(500);

/// One handler's queue and delivery thread.
pub struct Listener {
    id: u64,
    name: String,
    queue: Mutex<Queue>,
    ready: Condvar,
    synced: AtomicBool,
    delivered: AtomicU64,
    resync: Option<Duration>,
    next_resync: Mutex<Option<Instant>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Listener {
    /// Start a listener delivering to `handler` on its own thread; its queue
    /// never coalesces.
    pub fn start(name: &str, handler: Arc<dyn EventHandler>, resync: Option<Duration>) -> Arc<Listener> {
        Self::start_with(name, handler, resync, None)
    }

    /// Start a listener whose pending notifications coalesce per object once
    /// `coalesce_after` of them wait (see [`PendingQueue`]).
    pub fn start_with(
        name: &str,
        handler: Arc<dyn EventHandler>,
        resync: Option<Duration>,
        coalesce_after: Option<usize>,
    ) -> Arc<Listener> {
        let resync = resync.map(|r| r.max(Duration::from_secs(1)));
        let listener = Arc::new(Listener {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            name: name.to_string(),
            queue: Mutex::new(Queue {
                items: PendingQueue::new(coalesce_after),
                state: ListenerState::Awake,
            }),
            ready: Condvar::new(),
            synced: AtomicBool::new(false),
            delivered: AtomicU64::new(0),
            resync,
            next_resync: Mutex::new(resync.map(|r| Instant::now() + r)),
            thread: Mutex::new(None),
        });
        let worker = listener.clone();
        let thread = std::thread::Builder::new()
            .name(format!("listener-{name}"))
            .spawn(move || worker.run(handler))
            .expect("spawn listener thread");
        *listener.thread.lock().unwrap() = Some(thread);
        listener
    }

    /// This listener's unique id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The handler's name (for logs).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the initial list (or replay) has been delivered.
    pub fn has_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    /// Notifications delivered so far (excluding sync markers).
    pub fn delivered(&self) -> u64 {
        self.delivered.load(Ordering::Relaxed)
    }

    /// Notifications waiting in the queue.
    pub fn backlog(&self) -> usize {
        self.queue.lock().unwrap().items.len()
    }

    /// Notifications absorbed by coalescing so far.
    pub fn coalesced(&self) -> u64 {
        self.queue.lock().unwrap().items.coalesced()
    }

    /// Enqueue; never blocks on the handler.
    pub fn push(&self, n: Notification) {
        self.push_all(std::iter::once(n));
    }

    /// Enqueue many at once, in order.
    pub fn push_all(&self, ns: impl IntoIterator<Item = Notification>) {
        let mut q = self.queue.lock().unwrap();
        if !q.state.accepts() {
            return;
        }
        let mut started = false;
        for n in ns {
            started |= q.items.push(n);
        }
        let backlog = q.items.len();
        let wake = q.state.on_push();
        drop(q);
        if wake {
            self.ready.notify_one();
        }
        if started {
            // A large replay starts this too; it is only a problem when the
            // coalesced count keeps growing.
            tracing::info!(
                listener = %self.name,
                backlog,
                "backlog past the coalescing limit: pending notifications now coalesce per object"
            );
        }
    }

    /// Whether a resync is due at `now`; if so, schedules the next one.
    pub fn take_resync_due(&self, now: Instant) -> bool {
        let Some(period) = self.resync else {
            return false;
        };
        let mut next = self.next_resync.lock().unwrap();
        match *next {
            Some(at) if at <= now => {
                *next = Some(now + period);
                true
            }
            _ => false,
        }
    }

    /// Stop delivering: the current notification finishes, the rest is
    /// dropped. Returns once the thread has ended (unless called from it).
    pub fn stop(&self) {
        self.queue.lock().unwrap().state = ListenerState::Stopped;
        self.ready.notify_all();
        let handle = self.thread.lock().unwrap().take();
        if let Some(h) = handle
            && h.thread().id() != std::thread::current().id()
        {
            let _ = h.join();
        }
    }

    /// Accept nothing more, deliver what is already queued, then end the
    /// thread (without waiting for it).
    pub fn drain_and_stop(&self) {
        self.queue.lock().unwrap().state.on_drain();
        self.ready.notify_all();
    }

    /// Whether the delivery thread has ended.
    pub fn is_finished(&self) -> bool {
        self.thread
            .lock()
            .unwrap()
            .as_ref()
            .is_none_or(|h| h.is_finished())
    }

    fn run(&self, handler: Arc<dyn EventHandler>) {
        loop {
            let next = {
                let mut q = self.queue.lock().unwrap();
                let mut lingered = false;
                loop {
                    if q.state == ListenerState::Stopped {
                        return;
                    }
                    if let Some(n) = q.items.pop() {
                        break n;
                    }
                    if q.state == ListenerState::Draining {
                        return;
                    }
                    if lingered {
                        q.state.on_sleep();
                        q = self.ready.wait(q).unwrap();
                        q.state.on_wake();
                    } else {
                        // Not marked sleeping: pushes meanwhile wake no one.
                        q = self.ready.wait_timeout(q, LINGER).unwrap().0;
                        lingered = true;
                    }
                }
            };
            match &next {
                Notification::Add { obj, in_initial_list } => handler.on_add(obj, *in_initial_list),
                Notification::Update { old, new } => handler.on_update(old, new),
                Notification::Delete {
                    obj,
                    final_state_unknown,
                } => handler.on_delete(obj, *final_state_unknown),
                Notification::Synced => {
                    self.synced.store(true, Ordering::Release);
                    handler.on_synced();
                    continue;
                }
            }
            self.delivered.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Ok(mut q) = self.queue.lock() {
            q.state = ListenerState::Stopped;
        }
        self.ready.notify_all();
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::informer::object::tests::pod;

    /// Records what it receives as lines, for tests.
    #[derive(Default)]
    pub struct Recorder {
        pub lines: Mutex<Vec<String>>,
        pub gate: Mutex<()>,
    }

    impl Recorder {
        pub fn lines(&self) -> Vec<String> {
            self.lines.lock().unwrap().clone()
        }
        fn rec(&self, s: String) {
            let _g = self.gate.lock().unwrap();
            self.lines.lock().unwrap().push(s);
        }
    }

    impl EventHandler for Recorder {
        fn on_add(&self, obj: &ObjRef, initial: bool) {
            self.rec(format!("add {} {}", obj.key(), initial));
        }
        fn on_update(&self, old: &ObjRef, new: &ObjRef) {
            self.rec(format!(
                "update {} {}->{}",
                new.key(),
                old.resource_version(),
                new.resource_version()
            ));
        }
        fn on_delete(&self, obj: &ObjRef, unknown: bool) {
            self.rec(format!("delete {} {}", obj.key(), unknown));
        }
        fn on_synced(&self) {
            self.rec("synced".into());
        }
    }

    pub fn wait_for(mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !cond() {
            assert!(Instant::now() < deadline, "condition not met in 10 s");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn delivers_in_order_and_marks_synced() {
        let rec = Arc::new(Recorder::default());
        let l = Listener::start("t", rec.clone(), None);
        l.push(Notification::Add {
            obj: pod("d", "a", 1, &[]),
            in_initial_list: true,
        });
        l.push(Notification::Synced);
        l.push(Notification::Update {
            old: pod("d", "a", 1, &[]),
            new: pod("d", "a", 2, &[]),
        });
        l.push(Notification::Delete {
            obj: pod("d", "a", 2, &[]),
            final_state_unknown: true,
        });
        wait_for(|| rec.lines().len() == 4);
        assert_eq!(
            rec.lines(),
            vec!["add d/a true", "synced", "update d/a 1->2", "delete d/a true"]
        );
        assert!(l.has_synced());
        assert_eq!(l.delivered(), 3);
        l.stop();
    }

    #[test]
    fn a_stuck_listener_does_not_block_another() {
        let stuck = Arc::new(Recorder::default());
        let free = Arc::new(Recorder::default());
        let gate = stuck.gate.lock().unwrap();
        let a = Listener::start("stuck", stuck.clone(), None);
        let b = Listener::start("free", free.clone(), None);
        for i in 0..100 {
            let n = Notification::Add {
                obj: pod("d", &format!("p{i}"), i, &[]),
                in_initial_list: false,
            };
            a.push(n.clone());
            b.push(n);
        }
        wait_for(|| free.lines().len() == 100);
        assert!(stuck.lines().is_empty());
        assert!(a.backlog() >= 99);
        drop(gate);
        wait_for(|| stuck.lines().len() == 100);
        assert_eq!(stuck.lines(), free.lines());
        a.stop();
        b.stop();
    }

    #[test]
    fn drain_and_stop_delivers_what_was_queued_and_refuses_more() {
        let rec = Arc::new(Recorder::default());
        let gate = rec.gate.lock().unwrap();
        let l = Listener::start("d", rec.clone(), None);
        for i in 0..5 {
            l.push(Notification::Add {
                obj: pod("d", &format!("p{i}"), i, &[]),
                in_initial_list: false,
            });
        }
        l.drain_and_stop();
        l.push(Notification::Add {
            obj: pod("d", "late", 9, &[]),
            in_initial_list: false,
        });
        drop(gate);
        wait_for(|| l.is_finished());
        assert_eq!(rec.lines().len(), 5);
        assert!(!rec.lines().iter().any(|x| x.contains("late")));
    }

    #[test]
    fn resync_schedule_floors_at_one_second() {
        let l = Listener::start(
            "r",
            Arc::new(Recorder::default()),
            Some(Duration::from_millis(10)),
        );
        let now = Instant::now();
        assert!(!l.take_resync_due(now));
        assert!(l.take_resync_due(now + Duration::from_secs(1)));
        assert!(!l.take_resync_due(now + Duration::from_millis(1500)));
        l.stop();
    }
}
