//! Capabilities: everything a guest may do, and nothing more. One module per
//! WIT interface (Spin's factors are the model):
//!
//! - this module: the per-Store host state ([`HostState`]): a closed WASI
//!   context (no files, sockets or environment; clocks and random allowed;
//!   stdout/stderr into the host log), the memory limiter, and the `object`
//!   and `object-list` handles every interface answers with;
//! - [`log`]: the `log` import;
//! - [`cache`]: the `cache` import, scoped to what the plugin watches and
//!   reads; it reads the informers' stores only;
//! - [`write`] and [`events`]: the `write` and `events` imports, the only
//!   way a guest reaches the API server, within the operator's grants;
//!   [`request`] builds their URLs and checks each request as it is sent;
//!   `scoped.rs` refuses writes outside the plugin's scope;
//! - [`report`]: the `report` import, policy results handed to the
//!   aggregator of `crate::reports` (the host writes the reports);
//! - [`delivery`] and [`queue`]: the `delivery` and `queue` imports.

mod cache;
pub mod cluster;
mod delivery;
mod echo;
pub mod events;
mod log;
mod queue;
pub mod report;
pub mod request;
mod retry;
mod scoped;
pub mod write;

pub use cache::CacheScope;
pub use queue::{KeySink, MAX_KEY, QueueScope};
pub use report::ReportScope;
pub use write::{WriteAccess, WriteScope};

use super::bindings::types::{Answer, ObjectMeta};
use super::bindings::wink::plugin::types;
use super::stdio::{Channel, GuestOutput, LogBudget};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::StoreLimits;
use wasmtime::component::Resource;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wink_informer::ObjRef;

/// The host type of a WIT `object` handle. Its `rep` indexes the Store's
/// [`Handles`], which hold the cached object version (an `Arc`, never a copy).
pub struct ObjectHandle;

/// What a Store's guest holds handles to, by the handle's `rep`: a slot
/// vector with a free list, so no allocation per handle once warm and a
/// lookup is an index (wasmtime's generic `ResourceTable` boxes each entry).
pub(crate) struct Handles<T> {
    slots: Vec<Option<T>>,
    free: Vec<u32>,
    live: usize,
}

impl<T> Default for Handles<T> {
    fn default() -> Self {
        Handles {
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }
}

impl<T> Handles<T> {
    pub(crate) fn insert(&mut self, value: T) -> u32 {
        self.live += 1;
        match self.free.pop() {
            Some(rep) => {
                self.slots[rep as usize] = Some(value);
                rep
            }
            None => {
                self.slots.push(Some(value));
                (self.slots.len() - 1) as u32
            }
        }
    }

    pub(crate) fn remove(&mut self, rep: u32) -> Option<T> {
        let value = self.slots.get_mut(rep as usize)?.take()?;
        self.free.push(rep);
        self.live -= 1;
        Some(value)
    }

    fn get(&self, rep: u32) -> wasmtime::Result<&T> {
        match self.slots.get(rep as usize).and_then(Option::as_ref) {
            Some(value) => Ok(value),
            None => wasmtime::bail!("unknown handle {rep}"),
        }
    }
}

/// The host type of a WIT `object-list` handle: its `rep` indexes the
/// Store's lists of cached objects (one cache answer each).
pub struct ObjectListHandle;

/// How many object handles one plugin Store may hold at once (the WIT
/// `cache` interface documents it). Beyond it the call traps.
pub const MAX_HANDLES: usize = 1 << 20;

fn object_meta(obj: &ObjRef) -> ObjectMeta {
    ObjectMeta {
        api_version: obj.api_version().to_string(),
        kind: obj.kind().to_string(),
        namespace: obj.namespace().map(str::to_string),
        name: obj.name().to_string(),
        uid: obj.uid().to_string(),
        resource_version: obj.resource_version().to_string(),
        labels: obj
            .labels()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

/// The data of one plugin Store.
pub struct HostState {
    plugin: Arc<str>,
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) limits: StoreLimits,
    cache: CacheScope,
    /// Object handles: events lend them, queries give them.
    pub(crate) objects: Handles<ObjRef>,
    /// Answer handles (`object-list`).
    lists: Handles<Vec<ObjRef>>,
    /// What the plugin may write (nothing until granted).
    writes: WriteScope,
    /// Every line the plugin logs, by any means (its team's budget, for a
    /// plugin of a team).
    log_budget: LogBudget,
    /// The plugin's recorded Events, for aggregation.
    recorder: events::Recorder,
    /// Where its policy results go, and those of the call in progress.
    reports: ReportScope,
    report_pending: report::Pending,
    /// The current call's clock.
    pub(crate) clock: CallClock,
    /// Where the guest is in a batch being delivered.
    pub(crate) delivery: delivery::Position,
    /// The plugin's work queue, for the `queue` import.
    pub(crate) queue: QueueScope,
}

/// The clock of one call into the guest: when it started and how much of
/// it the host spent on I/O for the guest (rate limits, the API server),
/// which does not count against the call deadline.
#[derive(Debug, Clone, Copy)]
pub struct CallClock {
    started: Instant,
    pub(crate) io: Duration,
}

impl CallClock {
    /// A call starting now.
    pub fn start() -> Self {
        CallClock {
            started: Instant::now(),
            io: Duration::ZERO,
        }
    }

    /// Time since the call started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Time the guest itself has run in this call.
    pub fn guest_time(&self) -> Duration {
        self.started.elapsed().saturating_sub(self.io)
    }
}

impl HostState {
    /// A closed sandbox for `plugin`, with a memory cap, a cache scope and
    /// the budget its log lines count against (its own, or its team's).
    pub fn new(
        plugin: Arc<str>,
        memory_bytes: usize,
        cache: CacheScope,
        (writes, reports): (WriteScope, ReportScope),
        log_budget: LogBudget,
    ) -> Self {
        let mut wasi = WasiCtx::builder();
        wasi.stdout(GuestOutput::new(
            plugin.clone(),
            Channel::Stdout,
            log_budget.clone(),
        ));
        wasi.stderr(GuestOutput::new(
            plugin.clone(),
            Channel::Stderr,
            log_budget.clone(),
        ));
        let limits = wasmtime::StoreLimitsBuilder::new()
            .memory_size(memory_bytes)
            .instances(16)
            .build();
        HostState {
            plugin,
            wasi: wasi.build(),
            table: ResourceTable::new(),
            limits,
            cache,
            objects: Handles::default(),
            lists: Handles::default(),
            writes,
            log_budget,
            recorder: events::Recorder::default(),
            reports,
            report_pending: report::Pending::default(),
            clock: CallClock::start(),
            delivery: delivery::Position::default(),
            queue: QueueScope::default(),
        }
    }

    /// Refuse a new handle past the cap (a trap).
    fn check_cap(&self) -> wasmtime::Result<()> {
        if self.objects.live + self.lists.live >= MAX_HANDLES {
            wasmtime::bail!(
                "plugin {} holds {MAX_HANDLES} object handles: drop some (the cap keeps a leak from growing the host)",
                self.plugin
            );
        }
        Ok(())
    }

    /// Give the guest an owned handle to `obj`.
    pub(crate) fn push_object(&mut self, obj: &ObjRef) -> wasmtime::Result<Resource<ObjectHandle>> {
        self.check_cap()?;
        Ok(Resource::new_own(self.objects.insert(obj.clone())))
    }

    fn object(&self, handle: &Resource<ObjectHandle>) -> wasmtime::Result<&ObjRef> {
        self.objects.get(handle.rep())
    }

    /// Answer with `objects`: their keys in one string and one list handle.
    fn answer(&mut self, objects: Vec<ObjRef>) -> wasmtime::Result<Answer> {
        self.check_cap()?;
        let mut keys = String::with_capacity(objects.len() * 32);
        for o in &objects {
            wink_informer::object::push_key_of(&mut keys, o.namespace(), o.name());
            keys.push('\n');
        }
        Ok(Answer {
            keys,
            objects: Resource::new_own(self.lists.insert(objects)),
        })
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl types::Host for HostState {}

impl types::HostObject for HostState {
    fn name(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<String> {
        Ok(self.object(&obj)?.name().to_string())
    }

    fn namespace(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<Option<String>> {
        Ok(self.object(&obj)?.namespace().map(str::to_string))
    }

    fn key(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<String> {
        Ok(self.object(&obj)?.key())
    }

    fn uid(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<String> {
        Ok(self.object(&obj)?.uid().to_string())
    }

    fn resource_version(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<String> {
        Ok(self.object(&obj)?.resource_version().to_string())
    }

    fn label(&mut self, obj: Resource<ObjectHandle>, key: String) -> wasmtime::Result<Option<String>> {
        Ok(self.object(&obj)?.label(&key).map(str::to_string))
    }

    fn meta(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<ObjectMeta> {
        Ok(object_meta(self.object(&obj)?))
    }

    fn json(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<String> {
        Ok(self.object(&obj)?.json().into_owned())
    }

    fn duplicate(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<Resource<ObjectHandle>> {
        let obj = self.object(&obj)?.clone();
        self.push_object(&obj)
    }

    fn drop(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<()> {
        match self.objects.remove(obj.rep()) {
            Some(_) => Ok(()),
            None => wasmtime::bail!("unknown object handle {}", obj.rep()),
        }
    }
}

impl types::HostObjectList for HostState {
    fn len(&mut self, list: Resource<ObjectListHandle>) -> wasmtime::Result<u32> {
        Ok(self.lists.get(list.rep())?.len() as u32)
    }

    fn get(
        &mut self,
        list: Resource<ObjectListHandle>,
        index: u32,
    ) -> wasmtime::Result<Option<Resource<ObjectHandle>>> {
        let obj = self.lists.get(list.rep())?.get(index as usize).cloned();
        obj.map(|o| self.push_object(&o)).transpose()
    }

    fn drop(&mut self, list: Resource<ObjectListHandle>) -> wasmtime::Result<()> {
        match self.lists.remove(list.rep()) {
            Some(_) => Ok(()),
            None => wasmtime::bail!("unknown object-list handle {}", list.rep()),
        }
    }
}
