//! [`PluginInstance`]: one running plugin. Owns its wasmtime Store and the
//! instance in it, calls `init`, and delivers events into the guest with a
//! deadline per call. Calls never overlap (one lock per instance).
//!
//! A trap (a panic, a deadline or memory-limit hit, a stack overflow) poisons
//! the Store, so the instance drops it, reports the crash to the manager and
//! ignores later events until the manager has started a fresh instance (which
//! gets the cache replayed). It does not decide what it watches and never
//! reaches the API server.

use super::bindings::types::Registration;
use super::bindings::{Plugin, PluginPre};
use super::capabilities::{CacheScope, CallClock, HostState, ReportScope, WriteScope};
use super::engine::{Limits, WinkEngine};
use crate::informer::{EventHandler, ObjRef};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc::UnboundedSender;
use wasmtime::Store;
use wasmtime::component::Resource;

struct Live {
    store: Store<HostState>,
    plugin: Plugin,
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
    pre: PluginPre<HostState>,
    engine: WinkEngine,
    config: String,
    limits: Limits,
    cache: CacheScope,
    writes: WriteScope,
    reports: ReportScope,
    live: Mutex<Option<Live>>,
    synced: AtomicBool,
    crashed: AtomicBool,
    calls: AtomicU64,
    traps: AtomicU64,
    /// Deliveries by type: add, update, delete.
    delivered: [AtomicU64; 3],
    /// How long each call into the guest took (host I/O for it included).
    handler_time: Histogram,
    crash_tx: Option<UnboundedSender<CrashReport>>,
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
        pre: PluginPre<HostState>,
        engine: &WinkEngine,
        config: String,
        limits: Limits,
        crash_tx: Option<UnboundedSender<CrashReport>>,
    ) -> Result<(Arc<Self>, Registration), InitError> {
        let instance = Arc::new(PluginInstance {
            id: NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed),
            name,
            pre,
            engine: engine.clone(),
            config,
            limits,
            cache: CacheScope::default(),
            writes: WriteScope::default(),
            reports: ReportScope::default(),
            live: Mutex::new(None),
            synced: AtomicBool::new(false),
            crashed: AtomicBool::new(false),
            calls: AtomicU64::new(0),
            traps: AtomicU64::new(0),
            delivered: Default::default(),
            // 10 µs to ~0.65 s, by fours.
            handler_time: Histogram::new(exponential_buckets(1e-5, 4.0, 9)),
            crash_tx,
        });
        let (live, registration) = instance.instantiate()?;
        *instance.live.lock().unwrap() = Some(live);
        Ok((instance, registration))
    }

    fn instantiate(&self) -> Result<(Live, Registration), InitError> {
        let plugin = self.name.to_string();
        let state = HostState::new(
            self.name.clone(),
            self.limits.memory_bytes,
            self.cache.clone(),
            self.writes.clone(),
            self.reports.clone(),
        );
        let mut store = Store::new(self.engine.engine(), state);
        store.limiter(|s| &mut s.limits);
        // The deadline counts the guest's own time: when the epoch deadline
        // comes, time the host spent on I/O for the guest in this call
        // (writes waiting on the API server) is given back.
        let deadline = self.limits.call_deadline;
        store.epoch_deadline_callback(move |ctx| {
            let guest = ctx.data().clock.guest_time();
            if guest >= deadline {
                return Err(wasmtime::Trap::Interrupt.into());
            }
            let left = (deadline - guest).as_millis() / super::engine::EPOCH_TICK.as_millis();
            Ok(wasmtime::UpdateDeadline::Continue((left as u64).max(1)))
        });
        // wasmtime's own store-wide cap on component handles (100,000 by
        // default) sits above ours, so ours, with its clear message, trips
        // first; the margin covers WASI's handles and lent objects.
        store.set_max_component_handles(super::capabilities::MAX_HANDLES + 4096);
        // A new Store's deadline is 0: set it before instantiating.
        store.set_epoch_deadline(self.limits.deadline_ticks());
        let instance = self
            .pre
            .instantiate(&mut store)
            .map_err(|e| InitError::Instantiate {
                plugin: plugin.clone(),
                reason: format!("{e:#}"),
            })?;
        store.set_epoch_deadline(self.limits.deadline_ticks());
        store.data_mut().clock = CallClock::start();
        let registration = instance
            .wink_plugin_handler()
            .call_init(&mut store, &self.config)
            .map_err(|e| InitError::Trap {
                plugin: plugin.clone(),
                reason: format!("{e:?}"),
            })?
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
    pub fn pre(&self) -> &PluginPre<HostState> {
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
    pub fn handler_time(&self) -> &Histogram {
        &self.handler_time
    }

    /// A plugin that writes is told when its events are mostly its own
    /// writes coming back.
    fn note_delivery(&self, obj: &ObjRef) {
        if let Some(access) = self.writes.get() {
            access.delivered(obj.resource_version());
        }
    }

    /// What the instance may write (shared by its Store).
    pub fn write_scope(&self) -> &WriteScope {
        &self.writes
    }

    /// Where the instance's policy results go (shared by its Store).
    pub fn report_scope(&self) -> &ReportScope {
        &self.reports
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

    /// Call into the guest about `obj` (none for `on-synced`); `f` gets the
    /// Store, the bindings and `obj`'s key.
    fn call(
        &self,
        what: &str,
        obj: Option<&ObjRef>,
        f: impl FnOnce(&mut Store<HostState>, &Plugin, &str) -> wasmtime::Result<()>,
    ) {
        let mut live = self.live.lock().unwrap();
        let Some(l) = live.as_mut() else { return };
        self.calls.fetch_add(1, Ordering::Relaxed);
        l.store.set_epoch_deadline(self.limits.deadline_ticks());
        l.store.data_mut().clock = CallClock::start();
        l.key.clear();
        if let Some(obj) = obj {
            crate::informer::object::push_key_of(&mut l.key, obj.namespace(), obj.name());
        }
        let started = std::time::Instant::now();
        let result = f(&mut l.store, &l.plugin, &l.key);
        self.handler_time.observe(started.elapsed().as_secs_f64());
        let Err(err) = result else {
            l.store.data_mut().commit_reports(self.id);
            return;
        };
        l.store.data_mut().discard_reports();
        // The Store is poisoned: drop it; the manager starts a fresh instance.
        *live = None;
        self.traps.fetch_add(1, Ordering::Relaxed);
        self.crashed.store(true, Ordering::Release);
        let summary = trap_summary(&err);
        let backtrace = err
            .downcast_ref::<wasmtime::WasmBacktrace>()
            .map(|bt| format!("\n{bt}"))
            .unwrap_or_default();
        // One line says what, where and on which object; the wasm backtrace
        // (the last field) follows on the next lines.
        tracing::error!(
            plugin = %self.name,
            call = %what,
            object = %obj.map_or_else(String::new, |o| o.key()),
            resource_version = %obj.map_or("", |o| o.resource_version()),
            backtrace = %backtrace,
            "plugin trapped: {summary}"
        );
        let reason = format!("{summary}\n{err:?}");
        if let Some(tx) = &self.crash_tx {
            let _ = tx.send(CrashReport {
                plugin: self.name.clone(),
                instance: self.id(),
                reason,
            });
        }
    }
}

/// What went wrong in one line: the trap's name (`interrupt` for a deadline,
/// `call stack exhausted`, `wasm \`unreachable\` instruction executed` for a
/// panic or an allocation failure), else the root cause.
fn trap_summary(err: &wasmtime::Error) -> String {
    let what = match err.downcast_ref::<wasmtime::Trap>() {
        Some(trap) => trap.to_string(),
        None => err.root_cause().to_string(),
    };
    what.lines().next().unwrap_or("").to_string()
}

/// Lend `objects` to the guest for one call: each gets a slot in the Store's
/// handles, the guest gets borrows, and the slots are freed when the call
/// returns. No object bytes are copied here.
fn lend<const N: usize, R>(
    store: &mut Store<HostState>,
    objects: [&ObjRef; N],
    call: impl FnOnce(
        &mut Store<HostState>,
        [Resource<super::capabilities::ObjectHandle>; N],
    ) -> wasmtime::Result<R>,
) -> wasmtime::Result<R> {
    let handles = &mut store.data_mut().objects;
    let reps: [u32; N] = std::array::from_fn(|i| handles.insert(objects[i].clone()));
    let result = call(store, reps.map(Resource::new_borrow))?;
    for rep in reps {
        store.data_mut().objects.remove(rep);
    }
    Ok(result)
}

impl EventHandler for PluginInstance {
    fn on_add(&self, obj: &ObjRef, in_initial_list: bool) {
        self.delivered[0].fetch_add(1, Ordering::Relaxed);
        self.note_delivery(obj);
        self.call("on-add", Some(obj), |store, p, key| {
            lend(store, [obj], |store, [o]| {
                p.wink_plugin_handler()
                    .call_on_add(store, key, o, in_initial_list)
            })
        });
    }

    fn on_update(&self, old: &ObjRef, new: &ObjRef) {
        self.delivered[1].fetch_add(1, Ordering::Relaxed);
        self.note_delivery(new);
        self.call("on-update", Some(new), |store, p, key| {
            lend(store, [old, new], |store, [o, n]| {
                p.wink_plugin_handler().call_on_update(store, key, o, n)
            })
        });
    }

    /// After the call, the plugin's results about the deleted object go.
    fn on_delete(&self, obj: &ObjRef, final_state_unknown: bool) {
        self.delivered[2].fetch_add(1, Ordering::Relaxed);
        self.call("on-delete", Some(obj), |store, p, key| {
            lend(store, [obj], |store, [o]| {
                p.wink_plugin_handler()
                    .call_on_delete(store, key, o, final_state_unknown)
            })
        });
        if let Some(aggregator) = self.reports.get() {
            aggregator.forget(&self.name, obj.uid());
        }
    }

    /// Every watch and read of this instance delivered its initial list:
    /// after the guest's `on-synced`, results of earlier instances that
    /// this one did not state again go.
    fn on_synced(&self) {
        self.call("on-synced", None, |store, p, _| {
            p.wink_plugin_handler().call_on_synced(store)
        });
        if let Some(aggregator) = self.reports.get()
            && !self.is_crashed()
        {
            aggregator.synced(&self.name, self.id);
        }
    }
}
