//! [`SharedInformer`]: one list+watch, its [`Store`], and its listeners
//! (client-go's sharedIndexInformer).
//!
//! Owns `HandleDeltas`: every delta is applied to the store first, then turned
//! into notifications for every listener, under one lock that also guards
//! joining, so a late listener's replay and live events never interleave.
//! Relists notify tombstones first, then updates and adds; unchanged objects
//! notify nobody. It does not list or watch itself (the reflector and
//! kube-runtime's watcher do) and knows nothing about plugins.

use super::object::ObjRef;
use super::object::RawObject;
use super::processor::{EventHandler, Listener, Notification, Starts};
use super::reflector::{Delta, Reflector};
use super::stats::{EventType, InformerStats};
use super::store::{IndexFunc, Store, StoreError, Writer};
use futures::{Stream, StreamExt};
use kube::runtime::watcher;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often due resyncs are checked, once a listener asked for them.
const RESYNC_CHECK: Duration = Duration::from_millis(250);

/// The informer's tasks on the async runtime.
#[derive(Default)]
struct Tasks {
    /// Its list+watch: reflector -> apply.
    watch: Option<tokio::task::JoinHandle<()>>,
    /// The resync timer. It is started only when a listener asks for
    /// resyncs (as client-go's reflector has no resync timer with a resync
    /// period of 0), so an informer nobody asked to resync wakes only for
    /// its watch.
    resync: Option<tokio::task::JoinHandle<()>>,
    /// The runtime the watch runs on (where a resync timer starts).
    runtime: Option<tokio::runtime::Handle>,
}

impl Tasks {
    /// End both tasks (each ends at its next await).
    fn abort(self) {
        for task in [self.watch, self.resync].into_iter().flatten() {
            task.abort();
        }
    }
}

/// One shared list+watch with its store and listeners.
pub struct SharedInformer {
    me: std::sync::Weak<SharedInformer>,
    name: String,
    /// The only writer of the store; readers get [`SharedInformer::store`].
    writer: Writer,
    store: Store,
    listeners: Mutex<Vec<Arc<Listener>>>,
    synced: AtomicBool,
    /// Wakes [`SharedInformer::wait_for_sync`] once synced.
    synced_now: tokio::sync::Notify,
    relists: AtomicU64,
    events: AtomicU64,
    stats: InformerStats,
    /// Backlog past which a listener's queue coalesces (0: never).
    coalesce_after: AtomicUsize,
    /// Whether a listener ever asked for resyncs.
    resyncs_asked: AtomicBool,
    tasks: Mutex<Tasks>,
}

fn same_version(a: &ObjRef, b: &ObjRef) -> bool {
    a.uid() == b.uid() && a.resource_version() == b.resource_version()
}

impl SharedInformer {
    /// An informer with an empty store, not yet running.
    pub fn new(name: impl Into<String>) -> Arc<Self> {
        let writer = Writer::new();
        Arc::new_cyclic(|me| SharedInformer {
            me: me.clone(),
            name: name.into(),
            store: writer.reader(),
            writer,
            listeners: Mutex::new(Vec::new()),
            synced: AtomicBool::new(false),
            synced_now: tokio::sync::Notify::new(),
            relists: AtomicU64::new(0),
            events: AtomicU64::new(0),
            stats: InformerStats::default(),
            coalesce_after: AtomicUsize::new(0),
            resyncs_asked: AtomicBool::new(false),
            tasks: Mutex::new(Tasks::default()),
        })
    }

    /// Make listeners added from now on coalesce their pending notifications
    /// per object once `limit` of them wait (`None`: never, as client-go).
    pub fn set_coalesce_after(&self, limit: Option<usize>) {
        self.coalesce_after.store(limit.unwrap_or(0), Ordering::Relaxed);
    }

    fn start_listener(
        &self,
        name: &str,
        handler: Arc<dyn EventHandler>,
        resync: Option<Duration>,
    ) -> Arc<Listener> {
        let limit = self.coalesce_after.load(Ordering::Relaxed);
        if resync.is_some() {
            self.resyncs_asked.store(true, Ordering::Relaxed);
        }
        Listener::start_with(name, handler, resync, (limit > 0).then_some(limit))
    }

    /// A readable name, e.g. `v1/Pod ns=default`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A read-only handle to the informer's store (only the informer writes it).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Add an index (client-go's `AddIndexers`); the cached objects are
    /// indexed at once. An index of the same name is an error.
    pub fn add_index(&self, name: &str, func: IndexFunc) -> Result<(), StoreError> {
        self.writer.add_index(name, func)
    }

    /// Add an index a handler declared, by its definition: shared
    /// with every handler that declares the same definition, an error for
    /// another definition under the same name.
    pub fn ensure_index(&self, name: &str, definition: &str, func: IndexFunc) -> Result<(), StoreError> {
        self.writer.ensure_index(name, definition, func)
    }

    /// Whether its list+watch task runs (it ends only when stopped).
    pub fn is_alive(&self) -> bool {
        self.tasks
            .lock()
            .unwrap()
            .watch
            .as_ref()
            .is_some_and(|t| !t.is_finished())
    }

    /// Whether its resync timer runs (only once a listener asked for
    /// resyncs and the watch runs).
    pub fn has_resync_timer(&self) -> bool {
        self.tasks.lock().unwrap().resync.is_some()
    }

    /// Start the resync timer if a listener asked for resyncs, the watch
    /// runs and the timer does not yet. Once started it runs until the
    /// informer stops.
    fn arm_resyncs(&self) {
        if !self.resyncs_asked.load(Ordering::Relaxed) {
            return;
        }
        let mut tasks = self.tasks.lock().unwrap();
        let Some(runtime) = tasks.runtime.clone().filter(|_| tasks.resync.is_none()) else {
            return;
        };
        let me = self.me.clone();
        tasks.resync = Some(runtime.spawn(async move {
            let mut tick = tokio::time::interval(RESYNC_CHECK);
            loop {
                tick.tick().await;
                let Some(this) = me.upgrade() else { return };
                this.resync_due(Instant::now());
            }
        }));
    }

    /// Whether the initial list has been applied.
    pub fn has_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    /// Wait until the initial list has been applied (client-go's
    /// `WaitForCacheSync`, kube-runtime's `wait_until_ready`), woken the
    /// moment it is rather than by polling.
    pub async fn wait_for_sync(&self) {
        loop {
            let woken = self.synced_now.notified();
            if self.has_synced() {
                return;
            }
            woken.await;
        }
    }

    /// Completed lists (the initial one included).
    pub fn relists(&self) -> u64 {
        self.relists.load(Ordering::Relaxed)
    }

    /// Watch events applied (adds, updates, deletes after the lists).
    /// Counters for operators (events by type, watch errors, last sync).
    pub fn stats(&self) -> &InformerStats {
        &self.stats
    }

    /// The delivery state of every listener: (name, backlog, coalesced).
    pub fn listener_stats(&self) -> Vec<(String, usize, u64)> {
        let listeners = self.listeners.lock().unwrap();
        listeners
            .iter()
            .map(|l| (l.name().to_string(), l.backlog(), l.coalesced()))
            .collect()
    }

    pub fn events(&self) -> u64 {
        self.events.load(Ordering::Relaxed)
    }

    /// Whether every listener has delivered everything queued for it.
    pub fn is_idle(&self) -> bool {
        self.listeners.lock().unwrap().iter().all(|l| l.is_idle())
    }

    /// Number of listeners.
    pub fn listener_count(&self) -> usize {
        self.listeners.lock().unwrap().len()
    }

    /// Run the watcher stream until stopped (reflector -> apply), and the
    /// resync timer once a listener asks for resyncs.
    pub fn spawn<S>(self: &Arc<Self>, stream: S, mut reflector: Reflector)
    where
        S: Stream<Item = Result<watcher::Event<RawObject>, watcher::Error>> + Send + 'static,
    {
        let this = self.clone();
        reflector.reuse_from(self.store().clone());
        let task = super::runtime::handle().spawn(async move {
            let mut stream = std::pin::pin!(stream);
            let mut failures = crate::repeated::RepeatedFailure::default();
            while let Some(event) = stream.next().await {
                match event {
                    Ok(event) => {
                        if let Some(said) = failures.succeeded() {
                            tracing::info!(informer = %this.name, "watch {said}");
                        }
                        if let Some(delta) = reflector.handle(event) {
                            this.apply(delta);
                        }
                    }
                    Err(err) => {
                        this.stats.watch_error();
                        let error = crate::repeated::short_error(&err);
                        if let Some(said) = failures.failed(&error) {
                            tracing::warn!(informer = %this.name, "watch error (retrying with backoff): {said}")
                        }
                    }
                }
            }
        });
        {
            let mut tasks = self.tasks.lock().unwrap();
            tasks.watch = Some(task);
            tasks.runtime = Some(tokio::runtime::Handle::current());
        }
        self.arm_resyncs();
    }

    /// Apply a delta to the store, then notify every listener.
    pub fn apply(&self, delta: Delta) {
        let listeners = self.listeners.lock().unwrap();
        let mut out = Vec::new();
        let mut first_sync = false;
        let listed = matches!(delta, Delta::Replace(_));
        match delta {
            Delta::Replace(list) => {
                let first = !self.has_synced();
                let new_list = list.clone();
                let mut old = self.writer.replace(list);
                let mut survivors = Vec::with_capacity(new_list.len());
                for obj in new_list {
                    let prev = old.remove(obj.key().as_str());
                    survivors.push((prev, obj));
                }
                let mut tombstones: Vec<ObjRef> = old.into_values().collect();
                tombstones.sort_by_key(|o| o.key());
                out.extend(tombstones.into_iter().map(|obj| Notification::Delete {
                    obj,
                    final_state_unknown: true,
                }));
                for (prev, obj) in survivors {
                    match prev {
                        None => out.push(Notification::Add {
                            obj,
                            in_initial_list: first,
                        }),
                        Some(old) if !same_version(&old, &obj) => {
                            out.push(Notification::Update { old, new: obj })
                        }
                        Some(_) => {}
                    }
                }
                self.relists.fetch_add(1, Ordering::Relaxed);
                self.stats.synced_now();
                if first {
                    self.synced.store(true, Ordering::Release);
                    self.synced_now.notify_waiters();
                    first_sync = true;
                    tracing::info!(informer = %self.name, objects = self.store.len(), "informer synced");
                } else {
                    tracing::info!(informer = %self.name, notifications = out.len(), "relist applied");
                }
            }
            Delta::Apply(obj) => {
                self.events.fetch_add(1, Ordering::Relaxed);
                match self.writer.upsert(obj.clone()) {
                    None => {
                        self.stats.event(EventType::Added);
                        out.push(Notification::Add {
                            obj,
                            in_initial_list: false,
                        })
                    }
                    Some(old) if !same_version(&old, &obj) => {
                        self.stats.event(EventType::Modified);
                        out.push(Notification::Update { old, new: obj })
                    }
                    Some(_) => {}
                }
            }
            Delta::Delete(obj) => {
                self.events.fetch_add(1, Ordering::Relaxed);
                self.stats.event(EventType::Deleted);
                if self.writer.remove(&obj.key()).is_some() {
                    out.push(Notification::Delete {
                        obj,
                        final_state_unknown: false,
                    });
                }
            }
        }
        let mut starts = Starts::default();
        for l in listeners.iter() {
            if first_sync {
                l.queue_all(
                    out.iter().cloned().chain(std::iter::once(Notification::Synced)),
                    &mut starts,
                );
            } else if !out.is_empty() {
                l.queue_all(out.iter().cloned(), &mut starts);
            }
        }
        // Batches may start in place: no lock of the informer's is held.
        drop(listeners);
        starts.run();
        if listed {
            super::release::after_list();
        }
    }

    /// Register a handler. On a synced informer it first gets every cached
    /// object as an initial add, atomically with respect to live events.
    pub fn add_listener(
        &self,
        name: &str,
        handler: Arc<dyn EventHandler>,
        resync: Option<Duration>,
    ) -> Arc<Listener> {
        let listener = self.start_listener(name, handler, resync);
        let mut listeners = self.listeners.lock().unwrap();
        self.replay_to(&listener);
        listeners.push(listener.clone());
        drop(listeners);
        self.arm_resyncs();
        listener
    }

    /// On a synced informer, give a joining listener every cached object as
    /// an initial add, then the sync marker (call with the listeners locked,
    /// so no live event comes between).
    fn replay_to(&self, listener: &Listener) {
        if !self.has_synced() {
            return;
        }
        let replay = self
            .store
            .list(None, None)
            .into_iter()
            .map(|obj| Notification::Add {
                obj,
                in_initial_list: true,
            });
        listener.push_all(replay.chain(std::iter::once(Notification::Synced)));
    }

    /// Hand a listener's place over to a new handler, atomically with respect
    /// to events: everything enqueued before goes to the old handler (which
    /// drains and stops), the new one gets the cache replayed as initial adds
    /// and everything after. Returns the new listener, or none when `old_id`
    /// is not registered here.
    pub fn swap_listener(
        &self,
        old_id: u64,
        name: &str,
        handler: Arc<dyn EventHandler>,
        resync: Option<Duration>,
    ) -> Option<Arc<Listener>> {
        let listener = self.start_listener(name, handler, resync);
        let mut listeners = self.listeners.lock().unwrap();
        let pos = listeners.iter().position(|l| l.id() == old_id)?;
        let old = std::mem::replace(&mut listeners[pos], listener.clone());
        old.drain_and_stop();
        self.replay_to(&listener);
        drop(listeners);
        self.arm_resyncs();
        Some(listener)
    }

    /// Unregister a listener and stop its deliveries; returns how many remain.
    pub fn remove_listener(&self, id: u64) -> usize {
        let (removed, remaining) = {
            let mut listeners = self.listeners.lock().unwrap();
            let removed: Vec<Arc<Listener>> = listeners.iter().filter(|l| l.id() == id).cloned().collect();
            listeners.retain(|l| l.id() != id);
            (removed, listeners.len())
        };
        for l in removed {
            l.stop();
        }
        remaining
    }

    /// Deliver `update(o, o)` for every cached object to listeners due.
    pub fn resync_due(&self, now: Instant) {
        let listeners = self.listeners.lock().unwrap();
        if !self.has_synced() {
            return;
        }
        let due: Vec<&Arc<Listener>> = listeners.iter().filter(|l| l.take_resync_due(now)).collect();
        if due.is_empty() {
            return;
        }
        let objects = self.store.list(None, None);
        let mut starts = Starts::default();
        for l in due {
            let resync = objects.iter().map(|o| Notification::Update {
                old: o.clone(),
                new: o.clone(),
            });
            l.queue_all(resync, &mut starts);
        }
        // As in `apply`: batches may start in place, with no lock held.
        drop(listeners);
        starts.run();
    }

    /// Stop watching and stop every listener.
    pub fn stop(&self) {
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap());
        tasks.abort();
        let listeners = std::mem::take(&mut *self.listeners.lock().unwrap());
        for l in listeners {
            l.stop();
        }
    }
}

impl Drop for SharedInformer {
    fn drop(&mut self) {
        if let Ok(mut tasks) = self.tasks.lock() {
            std::mem::take(&mut *tasks).abort();
        }
    }
}

#[cfg(test)]
mod tests;
