//! The processor: one [`Listener`] per registered handler, each with its own
//! queue (client-go's sharedProcessor/processorListener), never a thread
//! each: a listener with work is scheduled once and delivers a batch. An
//! async handler's batch (a plugin's, see [`EventHandler::deliver_async`])
//! is a task of the runtime the listener started on, spawned where the
//! event arrived, so it costs no wake-up of another thread; any other
//! handler's runs on the shared delivery pool (`pool`), where one event for
//! many listeners costs one wake-up.
//!
//! Owns ordering and isolation: notifications reach one handler in the order
//! they were enqueued, calls to one handler never overlap, and a slow or
//! stuck handler only grows its own queue (an async one yields its thread,
//! the pool gives the others another worker). It never touches the store; the informer enqueues after the
//! store changed.

mod in_place;
mod whole;

use super::object::ObjRef;
use super::pool::{Batch, Slot, pool};
pub use super::queue::Notification;
use super::queue::PendingQueue;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

/// What a listener delivers to. Implemented by the plugin runtime and by
/// tests. Calls for one listener never overlap.
pub trait EventHandler: Send + Sync {
    fn on_add(&self, obj: &ObjRef, in_initial_list: bool);
    fn on_update(&self, old: &ObjRef, new: &ObjRef);
    fn on_delete(&self, obj: &ObjRef, final_state_unknown: bool);
    /// The listener has delivered its initial list.
    fn on_synced(&self) {}
    /// Whether `n` is to be queued for this handler at all: a handler's
    /// filter of what it is told (e.g. updates that change no label it
    /// cares about), asked once per notification as it is enqueued, so a
    /// notification the handler would ignore costs no queue slot and no
    /// scheduling. Must be a function of `n` alone. Every notification by
    /// default.
    fn wants(&self, n: &Notification) -> bool {
        let _ = n;
        true
    }
    /// Whether this handler delivers through [`deliver_async`](Self::deliver_async).
    fn is_async(&self) -> bool {
        false
    }
    /// Deliver `n` as a future, for a handler whose calls yield instead of
    /// holding their thread (a plugin's: its guest runs on a fiber and
    /// yields at epoch ticks). Such a handler is delivered on the async
    /// runtime's own threads, where the event arrived, with no wake-up of
    /// another thread; any other handler is called (the methods above) on
    /// the delivery pool.
    fn deliver_async(self: Arc<Self>, n: Notification) -> Option<DeliveryFuture> {
        let _ = n;
        None
    }
    /// Whether this async handler takes a batch in one call
    /// ([`deliver_batch_async`](Self::deliver_batch_async)).
    fn takes_batches(&self) -> bool {
        false
    }
    /// Deliver a batch (up to [`BATCH`] notifications in order, never
    /// `Synced`) as one future: for a handler whose calls cost most at
    /// their entry (a plugin's guest), one entry per batch.
    fn deliver_batch_async(self: Arc<Self>, batch: Vec<Notification>) -> Option<DeliveryFuture> {
        let _ = batch;
        None
    }
}

/// A delivery in progress (see [`EventHandler::deliver_async`]).
pub type DeliveryFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// The state of a listener, kept under its queue's lock: whether it takes
/// notifications, and where it is with the pool.
///
/// ```text
///   Open(Idle) ──push──▶ Open(Scheduled) ──a worker takes it──▶ Open(Running)
///   Open(Running) ──batch done──▶ Open(Idle) if nothing is queued, else Open(Scheduled)
///   Open(p) ──drain_and_stop──▶ Draining(p): delivers what is queued, accepts nothing;
///       finished once Idle with an empty queue
///   any(p) ──stop / drop──▶ Stopped(p): delivers nothing more; finished once Idle
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListenerState {
    Open(Place),
    Draining(Place),
    Stopped(Place),
}

/// Where a listener is with the delivery pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Not in the pool: a push schedules it.
    Idle,
    /// In the pool's ready queue.
    Scheduled,
    /// A worker is delivering a batch of it.
    Running,
}

impl ListenerState {
    fn place(self) -> Place {
        match self {
            ListenerState::Open(p) | ListenerState::Draining(p) | ListenerState::Stopped(p) => p,
        }
    }

    fn with(self, place: Place) -> Self {
        match self {
            ListenerState::Open(_) => ListenerState::Open(place),
            ListenerState::Draining(_) => ListenerState::Draining(place),
            ListenerState::Stopped(_) => ListenerState::Stopped(place),
        }
    }

    /// Whether a push is accepted.
    fn accepts(self) -> bool {
        matches!(self, ListenerState::Open(_))
    }

    /// Work was queued: whether the listener must now be scheduled.
    fn on_push(&mut self) -> bool {
        let schedule = self.place() == Place::Idle;
        if schedule {
            *self = self.with(Place::Scheduled);
        }
        schedule
    }

    /// A worker took it: whether it may deliver (a stopped one does not).
    fn on_run(&mut self) -> bool {
        *self = self.with(Place::Running);
        !matches!(self, ListenerState::Stopped(_))
    }

    /// The batch is done: whether it must be scheduled again.
    fn on_batch_done(&mut self, queued: bool) -> bool {
        let again = queued && !matches!(self, ListenerState::Stopped(_));
        *self = self.with(if again { Place::Scheduled } else { Place::Idle });
        again
    }

    /// Told to deliver what is queued and end.
    fn on_drain(&mut self) {
        if let ListenerState::Open(p) = *self {
            *self = ListenerState::Draining(p);
        }
    }

    /// Told to stop.
    fn on_stop(&mut self) {
        *self = ListenerState::Stopped(self.place());
    }

    /// Whether it delivers nothing more and no worker has it.
    fn finished(self, queued: bool) -> bool {
        match self {
            ListenerState::Open(_) => false,
            ListenerState::Draining(p) => p == Place::Idle && !queued,
            ListenerState::Stopped(p) => p == Place::Idle,
        }
    }
}

struct Queue {
    items: PendingQueue,
    state: ListenerState,
    /// The pool worker delivering it, while Running there (none for a task).
    running_on: Option<ThreadId>,
    /// Threads in [`Listener::stop`] waiting for the batch to end.
    stoppers: usize,
}

/// Listeners that got work from one event, started once it has been
/// queued to all (see [`Listener::queue_all`]).
///
/// An async listener's batch is first polled in place, on the informer's
/// thread: a plugin's call usually ends within microseconds, and then no
/// task is spawned and no other thread is woken (a spawn from the runtime's
/// own thread wakes its other worker). A batch that waits (a call that
/// yields at an epoch tick, a plugin busy on another watch) goes on as a
/// task of the runtime, and a listener whose batches took longer than
/// [`IN_PLACE_BUDGET`] a call twice within [`SPAWNED_FOR`] has its batches
/// spawned for a while ([`in_place`]): a slow plugin costs the informer two
/// batches in a while (a call yields at the next epoch tick at the latest).
///
/// The pool's listeners (native handlers) that got work from the event are
/// handed to the pool together, under one lock and with one wake-up, so the
/// worker it wakes finds them all queued instead of contending with the
/// informer's thread for the pool while it queues the rest.
#[derive(Default)]
pub struct Starts {
    tasks: Vec<Arc<Listener>>,
    pooled: Vec<Arc<Listener>>,
}

impl Drop for Starts {
    /// Listeners collected are never left unscheduled.
    fn drop(&mut self) {
        if !self.pooled.is_empty() {
            pool().schedule_all(std::mem::take(&mut self.pooled));
        }
    }
}

pub use in_place::{IN_PLACE_BUDGET, SPAWNED_FOR, SPAWNED_FOR_MAX};

impl Starts {
    /// Start every batch collected. Those that go on as tasks go as one
    /// (on the first one's runtime: a process's listeners all start on the
    /// daemon's one runtime).
    pub fn run(mut self) {
        if !self.pooled.is_empty() {
            pool().schedule_all(std::mem::take(&mut self.pooled));
        }
        let Some(rt) = self.tasks.first().and_then(|l| l.runtime.clone()) else {
            return;
        };
        let mut waiting: Vec<BatchFuture> = Vec::new();
        // One clock read per batch: each batch ends where the next starts.
        let mut started = Instant::now();
        for l in self.tasks.drain(..) {
            // Out of tokio's cooperative budget (the informer's task has
            // spent some): a batch is bounded by BATCH calls anyway, and an
            // exhausted budget would make a ready lock look pending.
            let mut batch: BatchFuture = Box::pin(tokio::task::unconstrained(l.clone().run_batch_async()));
            if !l.in_place.ok() {
                waiting.push(batch);
                continue;
            }
            let before = l.delivered();
            let done = futures::FutureExt::now_or_never(&mut batch).is_some();
            let calls = (l.delivered() - before).max(1) as u32;
            let ended = Instant::now();
            // A call that yielded at an epoch tick is no sign of a slow
            // plugin; a slow batch is.
            if ended - started > IN_PLACE_BUDGET * calls {
                l.in_place.was_slow();
            }
            started = ended;
            if !done {
                waiting.push(batch);
            }
        }
        match waiting.len() {
            0 => {}
            1 => {
                rt.spawn(waiting.pop().expect("one batch"));
            }
            _ => {
                rt.spawn(async move {
                    futures::future::join_all(waiting).await;
                });
            }
        }
    }
}

type BatchFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// How many notifications one listener delivers before a worker moves on
/// to the next ready listener (fairness under a backlog).
pub const BATCH: usize = 64;

/// One handler's queue, delivered on the pool.
pub struct Listener {
    me: Weak<Listener>,
    id: u64,
    name: String,
    handler: Arc<dyn EventHandler>,
    /// Where its batches run: the runtime it was started on (an async
    /// handler, on a multi-thread runtime), else the pool.
    runtime: Option<tokio::runtime::Handle>,
    /// Whether its batches start in place or as tasks.
    in_place: in_place::InPlace,
    queue: Mutex<Queue>,
    /// Signalled when a worker lets go of it (for `stop`).
    released: Condvar,
    synced: AtomicBool,
    delivered: AtomicU64,
    resync: Option<Duration>,
    next_resync: Mutex<Option<Instant>>,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Listener {
    /// Start a listener delivering to `handler`; its queue never coalesces.
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
        let runtime = tokio::runtime::Handle::try_current()
            .ok()
            .filter(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
            .filter(|_| handler.is_async());
        Arc::new_cyclic(|me| Listener {
            me: me.clone(),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            name: name.to_string(),
            handler,
            runtime,
            in_place: Default::default(),
            queue: Mutex::new(Queue {
                items: PendingQueue::new(coalesce_after),
                state: ListenerState::Open(Place::Idle),
                running_on: None,
                stoppers: 0,
            }),
            released: Condvar::new(),
            synced: AtomicBool::new(false),
            delivered: AtomicU64::new(0),
            resync,
            next_resync: Mutex::new(resync.map(|r| Instant::now() + r)),
        })
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
        let mut starts = Starts::default();
        self.queue_all(ns, &mut starts);
        starts.run();
    }

    /// [`push_all`](Self::push_all), leaving an async listener's start in
    /// `starts` (to be run with the other listeners the same event went to).
    pub fn queue_all(&self, ns: impl IntoIterator<Item = Notification>, starts: &mut Starts) {
        let mut q = self.queue.lock().unwrap();
        if !q.state.accepts() {
            return;
        }
        let mut started = false;
        for n in ns {
            if matches!(n, Notification::Synced) || self.handler.wants(&n) {
                started |= q.items.push(n);
            }
        }
        let backlog = q.items.len();
        let schedule = !q.items.is_empty() && q.state.on_push();
        drop(q);
        if schedule && let Some(me) = self.me.upgrade() {
            match me.runtime {
                Some(_) => starts.tasks.push(me),
                None => starts.pooled.push(me),
            }
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
    /// dropped. Returns once no worker delivers to it (unless called from
    /// within its own handler).
    pub fn stop(&self) {
        let mut q = self.queue.lock().unwrap();
        q.state.on_stop();
        q.items.clear();
        // A pool worker's batch may be this very call (a handler stopping
        // its own listener); a task's never is.
        let me = Some(std::thread::current().id());
        let waits = |q: &Queue| q.state.place() == Place::Running && q.running_on != me;
        if waits(&q) {
            // Its batch may be a task waiting for this very thread.
            q.stoppers += 1;
            q = crate::blocking::blocking(move || {
                while waits(&q) {
                    q = self.released.wait(q).unwrap();
                }
                q
            });
            q.stoppers -= 1;
        }
    }

    /// Accept nothing more, deliver what is already queued, then end
    /// (without waiting for it).
    pub fn drain_and_stop(&self) {
        self.queue.lock().unwrap().state.on_drain();
    }

    /// Whether nothing is queued and no worker is delivering to it.
    pub fn is_idle(&self) -> bool {
        let q = self.queue.lock().unwrap();
        q.items.is_empty() && q.state.place() == Place::Idle
    }

    /// Whether it delivers nothing more and no worker has it.
    pub fn is_finished(&self) -> bool {
        let q = self.queue.lock().unwrap();
        q.state.finished(!q.items.is_empty())
    }

    /// Deliver up to [`BATCH`] queued notifications on the calling worker,
    /// then schedule it again if more are queued.
    pub(super) fn run_batch(self: &Arc<Self>, slot: &Slot, epoch: Instant) {
        let mut next = self.begin_batch(Some(std::thread::current().id()));
        let mut delivered = 0;
        while let Some(n) = next {
            slot.enter(epoch);
            self.deliver(n);
            slot.leave();
            delivered += 1;
            next = self.next_in_batch(delivered < BATCH);
        }
    }

    /// [`run_batch`](Self::run_batch) for an async handler, as a task of
    /// the runtime.
    async fn run_batch_async(self: Arc<Self>) {
        if self.handler.takes_batches() {
            return self.run_whole_batch().await;
        }
        let mut next = self.begin_batch(None);
        let mut delivered = 0;
        while let Some(n) = next {
            let synced = matches!(n, Notification::Synced);
            if synced {
                self.synced.store(true, Ordering::Release);
            }
            if let Some(delivery) = self.handler.clone().deliver_async(n) {
                delivery.await;
            }
            if !synced {
                self.delivered.fetch_add(1, Ordering::Relaxed);
            }
            delivered += 1;
            next = self.next_in_batch(delivered < BATCH);
        }
    }

    /// A batch starts on `thread` (none for a task, which may move between
    /// threads): its first notification, or `None` when it delivers nothing
    /// (a stopped listener's), and then the batch has ended.
    fn begin_batch(self: &Arc<Self>, thread: Option<ThreadId>) -> Option<Notification> {
        let mut q = self.queue.lock().unwrap();
        q.running_on = thread;
        if !q.state.on_run() {
            q.items.clear();
        } else if let Some(n) = q.items.pop() {
            return Some(n);
        }
        self.end_batch(q);
        None
    }

    /// The batch's next notification when `more` may come and it was not
    /// stopped meanwhile; else `None`, and the batch has ended (under the
    /// same lock: a batch of one takes the queue's lock twice).
    fn next_in_batch(self: &Arc<Self>, more: bool) -> Option<Notification> {
        let mut q = self.queue.lock().unwrap();
        if more
            && !matches!(q.state, ListenerState::Stopped(_))
            && let Some(n) = q.items.pop()
        {
            return Some(n);
        }
        self.end_batch(q);
        None
    }

    /// The batch is done: release it, and schedule it again if more is queued.
    fn end_batch(self: &Arc<Self>, mut q: std::sync::MutexGuard<'_, Queue>) {
        q.running_on = None;
        let queued = !q.items.is_empty();
        let again = q.state.on_batch_done(queued);
        let stoppers = q.stoppers;
        drop(q);
        if stoppers > 0 {
            self.released.notify_all();
        }
        if again {
            self.clone().schedule();
        }
    }

    /// Have a batch of it run: as a task of its runtime (on the thread that
    /// queued it, when that is one of the runtime's workers), or on the pool.
    fn schedule(self: Arc<Self>) {
        match &self.runtime {
            Some(rt) => {
                rt.spawn(self.clone().run_batch_async());
            }
            None => pool().schedule(self),
        }
    }

    fn deliver(&self, n: Notification) {
        let handler = &self.handler;
        match &n {
            Notification::Add { obj, in_initial_list } => handler.on_add(obj, *in_initial_list),
            Notification::Update { old, new } => handler.on_update(old, new),
            Notification::Delete {
                obj,
                final_state_unknown,
            } => handler.on_delete(obj, *final_state_unknown),
            Notification::Synced => {
                self.synced.store(true, Ordering::Release);
                handler.on_synced();
                return;
            }
        }
        self.delivered.fetch_add(1, Ordering::Relaxed);
    }
}

impl Batch for Listener {
    fn run_batch(self: Arc<Self>, slot: &Slot, epoch: Instant) {
        Listener::run_batch(&self, slot, epoch)
    }
}

#[cfg(test)]
pub(crate) mod tests;
