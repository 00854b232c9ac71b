//! [`PluginInstance`]: one running plugin. Owns its wasmtime Store and the
//! instance in it, calls `init`, and delivers events into the guest with a
//! deadline per call. Calls never overlap (one lock per instance).
//!
//! Every call runs on a fiber (wasmtime's async calls): on the async
//! runtime's threads a call that runs past an epoch tick yields, so a plugin
//! in a long call holds no thread that informers or other plugins need, and
//! off the runtime (the delivery pool, `init`) the same call is driven to
//! its end in place.
//!
//! A trap (a panic, a deadline or memory-limit hit, a stack overflow) poisons
//! the Store, so the instance drops it, reports the crash to the manager and
//! ignores later events until the manager has started a fresh instance (which
//! gets the cache replayed). It does not decide what it watches and never
//! reaches the API server.

mod admit;
mod batch;
mod cpu;
mod crash;
mod reconcile;

pub use admit::{Answer, Asked, Door, NoAnswer};

use super::bindings::types::Registration;
use super::bindings::{Plugin, v3};
use super::call_times::{CallCounts, CallTimes};
use super::capabilities::{CacheScope, CallClock, HostState, QueueScope, ReportScope, WriteScope};
use super::engine::{Limits, WinkEngine};
use super::loader::ComponentPre;
use super::stdio::LogBudget;
use crash::trap_summary;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use tokio::sync::mpsc::UnboundedSender;
use wasmtime::Store;
use wasmtime::component::Resource;
use wink_informer::processor::DeliveryFuture;
use wink_informer::{EventHandler, Notification, ObjRef};

/// The guest's exports, by the contract version it was built against.
enum Guest {
    Current(Plugin),
    V3(v3::Plugin),
}

struct Live {
    store: Store<HostState>,
    plugin: Guest,
    /// The key of the object being delivered, built here so a delivery
    /// allocates nothing on the host.
    key: String,
}

/// Sent to the manager when a call trapped.
#[derive(Debug, Clone)]
pub struct CrashReport {
    pub plugin: Arc<str>,
    /// The crashed instance's id ([`PluginInstance::id`]), to ignore stale reports.
    pub instance: usize,
    pub reason: String,
}

/// Instance ids: never reused, so a late report of a dropped instance can
/// never be mistaken for one of its successor.
static NEXT_INSTANCE: AtomicUsize = AtomicUsize::new(1);

/// One plugin, instantiated and initialized.
pub struct PluginInstance {
    id: usize,
    name: Arc<str>,
    pre: ComponentPre,
    engine: WinkEngine,
    config: String,
    limits: Limits,
    cache: CacheScope,
    writes: WriteScope,
    reports: ReportScope,
    queue: QueueScope,
    /// An async lock: a call waiting for the instance (it has several
    /// watches) yields instead of holding its thread.
    live: tokio::sync::Mutex<Option<Live>>,
    synced: AtomicBool,
    crashed: AtomicBool,
    /// Shared with the other instances of an admission pool.
    calls: Arc<AtomicU64>,
    traps: AtomicU64,
    /// Deliveries by type: add, update, delete.
    delivered: [AtomicU64; 3],
    /// How long each call into the guest took (host I/O for it included).
    handler_time: CallTimes,
    crash_tx: Option<UnboundedSender<CrashReport>>,
    /// Its team's CPU share, when its grant sets one.
    cpu: std::sync::OnceLock<Arc<crate::cpu_share::CpuShare>>,
    /// The budget its log lines count against: its own, or its team's
    /// ([`crate::stdio::TeamLogBudgets`]); a restart keeps it.
    log: LogBudget,
}

/// Why `init` failed.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error("plugin {plugin}: instantiation failed: {reason}")]
    Instantiate { plugin: String, reason: String },
    #[error("plugin {plugin}: init trapped: {reason}")]
    Trap { plugin: String, reason: String },
    #[error("plugin {plugin}: init refused: {reason}")]
    Refused { plugin: String, reason: String },
}

impl PluginInstance {
    /// Instantiate a loaded component and call its `init`. Traps of later
    /// calls are reported on `crash_tx`.
    pub fn start(
        name: Arc<str>,
        pre: ComponentPre,
        engine: &WinkEngine,
        config: String,
        limits: Limits,
        crash_tx: Option<UnboundedSender<CrashReport>>,
    ) -> Result<(Arc<Self>, Registration), InitError> {
        let log = LogBudget::new(name.clone());
        Self::start_logged(name, pre, engine, config, limits, crash_tx, log)
    }

    /// [`PluginInstance::start`], its log lines counted against `log` (a
    /// team's budget, shared by the team's plugins).
    pub fn start_logged(
        name: Arc<str>,
        pre: ComponentPre,
        engine: &WinkEngine,
        config: String,
        limits: Limits,
        crash_tx: Option<UnboundedSender<CrashReport>>,
        log: LogBudget,
    ) -> Result<(Arc<Self>, Registration), InitError> {
        Self::start_in(
            name,
            pre,
            engine,
            config,
            limits,
            crash_tx,
            (CacheScope::default(), CallCounts::default(), log),
        )
    }

    fn start_in(
        name: Arc<str>,
        pre: ComponentPre,
        engine: &WinkEngine,
        config: String,
        limits: Limits,
        crash_tx: Option<UnboundedSender<CrashReport>>,
        (cache, counts, log): (CacheScope, CallCounts, LogBudget),
    ) -> Result<(Arc<Self>, Registration), InitError> {
        let instance = Arc::new(PluginInstance {
            id: NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed),
            name,
            pre,
            engine: engine.clone(),
            config,
            limits,
            cache,
            writes: WriteScope::default(),
            reports: ReportScope::default(),
            queue: QueueScope::default(),
            live: tokio::sync::Mutex::new(None),
            synced: AtomicBool::new(false),
            crashed: AtomicBool::new(false),
            calls: counts.calls,
            traps: AtomicU64::new(0),
            delivered: Default::default(),
            // 10 µs to ~0.65 s, by fours.
            handler_time: counts.times,
            crash_tx,
            cpu: Default::default(),
            log,
        });
        let (live, registration) = futures::executor::block_on(instance.instantiate())?;
        *instance
            .live
            .try_lock()
            .expect("a new instance is not shared yet") = Some(live);
        Ok((instance, registration))
    }

    async fn instantiate(&self) -> Result<(Live, Registration), InitError> {
        let plugin = self.name.to_string();
        let mut state = HostState::new(
            self.name.clone(),
            self.limits.memory_bytes,
            self.cache.clone(),
            (self.writes.clone(), self.reports.clone()),
            self.log.clone(),
        );
        state.queue = self.queue.clone();
        let mut store = Store::new(self.engine.engine(), state);
        store.limiter(|s| &mut s.limits);
        // The deadline counts the guest's own time: at every epoch tick of a
        // call, time the host spent on I/O for the guest in this call
        // (writes waiting on the API server) is given back; until the
        // deadline the call yields, so other tasks of its thread run.
        let deadline = self.limits.call_deadline;
        store.epoch_deadline_callback(move |ctx| {
            if ctx.data().clock.guest_time() >= deadline {
                return Err(wasmtime::Trap::Interrupt.into());
            }
            Ok(wasmtime::UpdateDeadline::Yield(1))
        });
        // wasmtime's own store-wide cap on component handles (100,000 by
        // default) sits above ours, so ours, with its clear message, trips
        // first; the margin covers WASI's handles and lent objects.
        store.set_max_component_handles(super::capabilities::MAX_HANDLES + 4096);
        // The ticker ticks through instantiation and `init`.
        let _running = self.engine.call_started();
        // A new Store's deadline is 0 (and on a metered engine, its fuel):
        // set them before instantiating; `init` gets its own.
        self.engine.arm(&mut store, &self.limits);
        let instantiate_error = |e: wasmtime::Error| InitError::Instantiate {
            plugin: plugin.clone(),
            reason: format!("{e:#}"),
        };
        let instance = match &self.pre {
            ComponentPre::Current(pre) => Guest::Current(
                pre.instantiate_async(&mut store)
                    .await
                    .map_err(instantiate_error)?,
            ),
            ComponentPre::V3(pre) => Guest::V3(
                pre.instantiate_async(&mut store)
                    .await
                    .map_err(instantiate_error)?,
            ),
        };
        self.engine.arm(&mut store, &self.limits);
        store.data_mut().clock = CallClock::start();
        let trap = |e: wasmtime::Error| InitError::Trap {
            plugin: plugin.clone(),
            reason: format!("{e:?}"),
        };
        let registration = match &instance {
            Guest::Current(p) => p
                .wink_plugin_handler()
                .call_init(&mut store, &self.config)
                .await
                .map_err(trap)?,
            Guest::V3(p) => p
                .wink_plugin_handler()
                .call_init(&mut store, &self.config)
                .await
                .map_err(trap)?
                .map(crate::compat::registration),
        }
        .map_err(|reason| InitError::Refused { plugin, reason })?;
        Ok((
            Live {
                store,
                plugin: instance,
                key: String::new(),
            },
            registration,
        ))
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The component this instance was built from.
    pub fn pre(&self) -> &ComponentPre {
        &self.pre
    }

    /// The engine its component was compiled for.
    pub fn engine(&self) -> &WinkEngine {
        &self.engine
    }

    /// The config text `init` got.
    pub fn config(&self) -> &str {
        &self.config
    }

    /// The limits it runs under (a restart keeps them).
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The cache scope its queries are answered from.
    pub fn cache_scope(&self) -> &CacheScope {
        &self.cache
    }

    /// Deliveries so far by type: (adds, updates, deletes).
    pub fn deliveries(&self) -> (u64, u64, u64) {
        let [a, u, d] = &self.delivered;
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        (load(a), load(u), load(d))
    }

    /// The histogram of this instance's call durations (shared, not copied).
    pub fn handler_time(&self) -> &CallTimes {
        &self.handler_time
    }

    /// A plugin that writes is told when its events are mostly its own
    /// writes coming back.
    fn note_delivery(&self, obj: &ObjRef) {
        self.writes.delivered(obj.resource_version());
    }

    /// What the instance may write (shared by its Store).
    pub fn write_scope(&self) -> &WriteScope {
        &self.writes
    }

    /// Where the instance's policy results go (shared by its Store).
    pub fn report_scope(&self) -> &ReportScope {
        &self.reports
    }

    /// Where the instance's `queue` adds go (shared by its Store).
    pub fn queue_scope(&self) -> &QueueScope {
        &self.queue
    }

    /// Calls made into the guest (events).
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Calls that trapped.
    pub fn traps(&self) -> u64 {
        self.traps.load(Ordering::Relaxed)
    }

    /// Whether every listener of this plugin has delivered its initial list.
    pub fn has_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    pub(crate) fn set_synced(&self) {
        self.synced.store(true, Ordering::Release);
    }

    /// Whether a call trapped and the instance waits to be replaced.
    pub fn is_crashed(&self) -> bool {
        self.crashed.load(Ordering::Acquire)
    }

    /// An id for this instance, unique in the process.
    pub fn id(&self) -> usize {
        self.id
    }

    /// Make `call` into the guest (waiting for its team's CPU share, then
    /// for a call of another of its watches to end first).
    async fn call(&self, call: Call<'_>) {
        let _turn = self.within_share().await;
        // Uncontended (the usual case) without building the lock's future.
        let mut live = match self.live.try_lock() {
            Ok(live) => live,
            Err(_) => self.live.lock().await,
        };
        let Some(l) = live.as_mut() else { return };
        self.calls.fetch_add(1, Ordering::Relaxed);
        let running = self.engine.call_started();
        self.engine.arm(&mut l.store, &self.limits);
        l.store.data_mut().clock = CallClock::start();
        l.key.clear();
        let obj = call.object();
        if let Some(obj) = obj {
            wink_informer::object::push_key_of(&mut l.key, obj.namespace(), obj.name());
        }
        let (result, cpu) = self.metered(call.run(l)).await;
        drop(running);
        self.used(&l.store.data().clock, cpu);
        let Err(err) = result else {
            l.store.data_mut().commit_reports(self.id);
            return;
        };
        l.store.data_mut().discard_reports();
        // The Store is poisoned: drop it; the manager starts a fresh instance.
        *live = None;
        self.crashed_in(call.name(), obj, &err);
    }

    /// Deliver `n`, which came from the plugin's watch number `watch` (see
    /// [`EventHandler`]); the future ends when the guest's call has.
    pub async fn deliver(&self, watch: u32, n: &Notification) {
        self.count_delivery(n);
        match n {
            Notification::Add { obj, in_initial_list } => {
                self.call(Call::Add(watch, obj, *in_initial_list)).await;
            }
            Notification::Update { old, new } => self.call(Call::Update(watch, old, new)).await,
            Notification::Delete {
                obj,
                final_state_unknown,
            } => {
                self.call(Call::Delete(watch, obj, *final_state_unknown)).await;
                self.delivered_deletion(obj);
            }
            Notification::Synced => self.synced_call().await,
        }
    }

    /// Count `n` among the deliveries (a plugin that writes is told when
    /// its events are mostly its own writes coming back).
    fn count_delivery(&self, n: &Notification) {
        let (kind, obj) = match n {
            Notification::Add { obj, .. } => (0, Some(obj)),
            Notification::Update { new, .. } => (1, Some(new)),
            Notification::Delete { .. } => (2, None),
            Notification::Synced => return,
        };
        self.delivered[kind].fetch_add(1, Ordering::Relaxed);
        if let Some(obj) = obj {
            self.note_delivery(obj);
        }
    }

    /// After a deletion was delivered, the plugin's results about the
    /// deleted object go.
    fn delivered_deletion(&self, obj: &ObjRef) {
        if let Some(aggregator) = self.reports.get() {
            aggregator.forget(&self.name, obj.uid());
        }
    }

    /// Every watch and read of this instance delivered its initial list:
    /// after the guest's `on-synced`, results of earlier instances that
    /// this one did not state again go.
    pub async fn synced_call(&self) {
        self.call(Call::Synced).await;
        if let Some(aggregator) = self.reports.get()
            && !self.is_crashed()
        {
            aggregator.synced(&self.name, self.id);
        }
    }
}

/// One call into the guest's handler; the number is the watch's.
enum Call<'a> {
    Add(u32, &'a ObjRef, bool),
    Update(u32, &'a ObjRef, &'a ObjRef),
    Delete(u32, &'a ObjRef, bool),
    Synced,
}

impl Call<'_> {
    fn name(&self) -> &'static str {
        match self {
            Call::Add(..) => "on-add",
            Call::Update(..) => "on-update",
            Call::Delete(..) => "on-delete",
            Call::Synced => "on-synced",
        }
    }

    /// The object the call is about (the new version of an update).
    fn object(&self) -> Option<&ObjRef> {
        match self {
            Call::Add(_, o, _) | Call::Update(_, _, o) | Call::Delete(_, o, _) => Some(o),
            Call::Synced => None,
        }
    }

    /// Lend the call's objects to the guest (each gets a slot in the
    /// Store's handles, the guest gets borrows; no object bytes are copied)
    /// and make the call; the slots are freed when it returns.
    async fn run(&self, l: &mut Live) -> wasmtime::Result<()> {
        let Live { store, plugin, key } = l;
        let objects = &mut store.data_mut().objects;
        let (lent, count): ([u32; 2], usize) = match self {
            Call::Add(_, o, _) | Call::Delete(_, o, _) => ([objects.insert((*o).clone()), 0], 1),
            Call::Update(_, old, new) => (
                [objects.insert((*old).clone()), objects.insert((*new).clone())],
                2,
            ),
            Call::Synced => ([0; 2], 0),
        };
        let borrow = |i: usize| Resource::new_borrow(lent[i]);
        match (plugin, self) {
            (Guest::Current(p), &Call::Add(w, _, initial)) => {
                p.wink_plugin_handler()
                    .call_on_add(&mut *store, w, key, borrow(0), initial)
                    .await?
            }
            (Guest::Current(p), &Call::Update(w, ..)) => {
                p.wink_plugin_handler()
                    .call_on_update(&mut *store, w, key, borrow(0), borrow(1))
                    .await?
            }
            (Guest::Current(p), &Call::Delete(w, _, unknown)) => {
                p.wink_plugin_handler()
                    .call_on_delete(&mut *store, w, key, borrow(0), unknown)
                    .await?
            }
            (Guest::Current(p), Call::Synced) => p.wink_plugin_handler().call_on_synced(&mut *store).await?,
            (Guest::V3(p), &Call::Add(_, _, initial)) => {
                p.wink_plugin_handler()
                    .call_on_add(&mut *store, key, borrow(0), initial)
                    .await?
            }
            (Guest::V3(p), Call::Update(..)) => {
                p.wink_plugin_handler()
                    .call_on_update(&mut *store, key, borrow(0), borrow(1))
                    .await?
            }
            (Guest::V3(p), &Call::Delete(_, _, unknown)) => {
                p.wink_plugin_handler()
                    .call_on_delete(&mut *store, key, borrow(0), unknown)
                    .await?
            }
            (Guest::V3(p), Call::Synced) => p.wink_plugin_handler().call_on_synced(&mut *store).await?,
        }
        for &rep in &lent[..count] {
            store.data_mut().objects.remove(rep);
        }
        Ok(())
    }
}

/// Off the async runtime (the delivery pool, tests), each event is driven to
/// its end on the calling thread; on it, the listener awaits
/// [`PluginInstance::deliver`] instead. Events handled this way come from
/// the plugin's first watch; a plugin's registrations deliver through
/// [`PluginInstance::deliver`] with their own watch's number.
impl EventHandler for PluginInstance {
    fn on_add(&self, obj: &ObjRef, in_initial_list: bool) {
        let n = Notification::Add {
            obj: obj.clone(),
            in_initial_list,
        };
        futures::executor::block_on(self.deliver(0, &n));
    }

    fn on_update(&self, old: &ObjRef, new: &ObjRef) {
        let n = Notification::Update {
            old: old.clone(),
            new: new.clone(),
        };
        futures::executor::block_on(self.deliver(0, &n));
    }

    fn on_delete(&self, obj: &ObjRef, final_state_unknown: bool) {
        let n = Notification::Delete {
            obj: obj.clone(),
            final_state_unknown,
        };
        futures::executor::block_on(self.deliver(0, &n));
    }

    fn on_synced(&self) {
        futures::executor::block_on(self.synced_call());
    }

    fn is_async(&self) -> bool {
        true
    }

    fn deliver_async(self: Arc<Self>, n: Notification) -> Option<DeliveryFuture> {
        Some(Box::pin(async move { self.deliver(0, &n).await }))
    }
}
