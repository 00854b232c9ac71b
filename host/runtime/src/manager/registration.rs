//! Registration resolving: turns what a plugin's `init` asked for (watches,
//! reads, indexes) into registrations on shared informers, and attaches a
//! plugin instance to them.
//!
//! Owns the watch specs (namespace override), the Secrets rule, the indexes a
//! plugin declares, the cache scope grants (a plugin may query exactly what
//! it watches or reads) and the hand-over of registrations from one instance
//! to the next. It never compiles, starts or restarts an instance (the
//! manager and its recovery do) and never delivers events itself (the
//! informer's listeners do, through [`InstanceEventHandler`]).

use super::PluginManager;
use super::enqueueing::{Feed, FeedHandler};
use super::reconciling::{self, Reconciling};
use crate::bindings::types::{Enqueue, IndexBy, Registration, Verb as WitVerb};
use crate::capabilities::WriteAccess;
use crate::filter::UpdateFilter;
use crate::grants::{Declared, Missing, Permissions, Verb};
use crate::instance::PluginInstance;
use crate::leadership::Leadership;
use anyhow::Context;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use wink_informer::index::IndexSpec;
use wink_informer::processor::DeliveryFuture;
use wink_informer::{EventHandler, Notification, ObjRef, SharedInformer, WatchSpec};

/// One registration of a plugin on one informer.
#[derive(Clone)]
pub(super) struct Registered {
    pub(super) spec: WatchSpec,
    pub(super) listener_id: u64,
    /// Whether the listener only feeds the plugin's work queue (beside the
    /// one that delivers the watch's events).
    pub(super) feeds: bool,
    /// A scoped watch's listener and tracker, to re-decide its objects.
    pub(super) rescope: Option<super::scoping::Rescope>,
}

/// The watches (and reads) of `registered`, without the listeners that
/// only feed the work queue.
pub(super) fn watched(registered: &[Registered]) -> Vec<WatchSpec> {
    registered
        .iter()
        .filter(|r| !r.feeds)
        .map(|r| r.spec.clone())
        .collect()
}

/// The informer-side handler of one plugin registration: delivers one
/// informer's notifications to the plugin's instance and counts down the
/// plugin's outstanding initial syncs. For `reads`, only the sync is tracked.
struct InstanceEventHandler {
    instance: Arc<PluginInstance>,
    /// The watch's number in the registration (its events carry it).
    watch: u32,
    /// Which updates reach the plugin.
    filter: UpdateFilter,
    /// With `wait-for-sync`: opens once every informer of the plugin has
    /// synced; nothing is delivered before.
    gate: Option<Arc<SyncGate>>,
    pending_syncs: Arc<AtomicUsize>,
    handles_events: bool,
    /// A standby replica keeps its informers (and this bookkeeping) current
    /// and delivers nothing; on becoming the leader its plugins get the
    /// cache replayed.
    leadership: Leadership,
    /// The plugin's work queue, when it has one: every key of its resource
    /// is enqueued when the plugin syncs.
    reconciling: Option<Arc<Reconciling>>,
    /// With a scope: what the plugin was told of, so leaving the scope is
    /// a delete and entering an add.
    tracker: Option<Arc<crate::scope::Tracker>>,
}

impl InstanceEventHandler {
    fn delivers(&self) -> bool {
        self.handles_events && self.leadership.is_leading()
    }

    /// Whether `n` passes the watch's update filter (an update that moves
    /// the object in or out of scope always does).
    fn passes(&self, n: &Notification) -> bool {
        match n {
            Notification::Update { old, new } => {
                self.filter.delivers(old, new) || self.tracker.as_ref().is_some_and(|t| t.moves(old, new))
            }
            _ => true,
        }
    }

    /// What the plugin is told of `n` under its scope.
    fn scoped(&self, n: Notification) -> Option<Notification> {
        match &self.tracker {
            Some(t) => t.map(n),
            None => Some(n),
        }
    }
}

/// client-go's WaitForCacheSync for one plugin: its listeners deliver
/// nothing until every informer it watches or reads has synced (listed
/// into its store), so the adds of its initial lists find the whole cache.
/// It waits on the informers, never on a listener, so no listener can wait
/// on itself.
pub(super) struct SyncGate {
    informers: Vec<Arc<SharedInformer>>,
    open: std::sync::atomic::AtomicBool,
}

impl SyncGate {
    async fn wait(&self) {
        if self.open.load(Ordering::Acquire) {
            return;
        }
        for informer in &self.informers {
            informer.wait_for_sync().await;
        }
        self.open.store(true, Ordering::Release);
    }
}

impl InstanceEventHandler {
    /// One of the plugin's watches and reads delivered its initial list:
    /// whether it was the last, so the plugin is now synced and (when this
    /// replica leads) is told.
    fn count_down_sync(&self) -> bool {
        if self.pending_syncs.fetch_sub(1, Ordering::AcqRel) != 1 {
            return false;
        }
        self.instance.set_synced();
        tracing::info!(plugin = %self.instance.name(), "plugin synced");
        // Its last initial add was delivered (this listener delivered it,
        // the others' before they counted down).
        let leading = self.leadership.is_leading();
        if let Some(r) = self.reconciling.as_ref().filter(|_| leading) {
            r.enqueue_all(&self.instance, |o| {
                self.tracker.as_ref().is_some_and(|t| t.excepts(o))
            });
        }
        leading
    }

    /// Deliver `n` (when this replica leads), once the plugin's informers
    /// have synced if it waits for them. The watch's filter was asked as
    /// `n` was queued ([`EventHandler::wants`]).
    async fn handle(&self, n: Notification) {
        if !self.delivers() {
            return;
        }
        let Some(n) = self.scoped(n) else {
            return;
        };
        if let Some(gate) = &self.gate {
            gate.wait().await;
        }
        self.instance.deliver(self.watch, &n).await
    }
}

impl InstanceEventHandler {
    /// Deliver `n` on the calling thread (off the async runtime).
    fn deliver_blocking(&self, n: Notification) {
        if self.delivers() && self.passes(&n) {
            futures::executor::block_on(self.handle(n))
        }
    }
}

impl EventHandler for InstanceEventHandler {
    fn on_add(&self, obj: &ObjRef, in_initial_list: bool) {
        self.deliver_blocking(Notification::Add {
            obj: obj.clone(),
            in_initial_list,
        })
    }
    fn on_update(&self, old: &ObjRef, new: &ObjRef) {
        self.deliver_blocking(Notification::Update {
            old: old.clone(),
            new: new.clone(),
        })
    }
    fn on_delete(&self, obj: &ObjRef, final_state_unknown: bool) {
        self.deliver_blocking(Notification::Delete {
            obj: obj.clone(),
            final_state_unknown,
        })
    }
    fn on_synced(&self) {
        if self.count_down_sync() {
            self.instance.on_synced();
        }
    }
    fn is_async(&self) -> bool {
        true
    }
    /// A read's listener queues nothing but its sync marker; a watch's
    /// queues what its update filter passes.
    fn wants(&self, n: &Notification) -> bool {
        self.handles_events && self.passes(n)
    }
    fn deliver_async(self: Arc<Self>, n: Notification) -> Option<DeliveryFuture> {
        Some(Box::pin(async move {
            match n {
                Notification::Synced if self.count_down_sync() => self.instance.synced_call().await,
                Notification::Synced => {}
                n => self.handle(n).await,
            }
        }))
    }
    fn takes_batches(&self) -> bool {
        true
    }
    fn deliver_batch_async(self: Arc<Self>, batch: Vec<Notification>) -> Option<DeliveryFuture> {
        Some(Box::pin(async move {
            if !self.delivers() || batch.is_empty() {
                return;
            }
            if let Some(gate) = &self.gate {
                gate.wait().await;
            }
            let batch: Vec<Notification> = batch.into_iter().filter_map(|n| self.scoped(n)).collect();
            if !batch.is_empty() {
                self.instance.deliver_batch(self.watch, &batch).await
            }
        }))
    }
}

/// A registration resolved: its watches and reads as informers, and what
/// the plugin may write (and what it declared but was not granted).
pub(super) struct Resolution {
    pub(super) wanted: Vec<Wanted>,
    /// Whether the plugin's deliveries wait for all its informers to sync.
    pub(super) wait_for_sync: bool,
    /// What the plugin declared: its writes, and whether it records Events.
    pub(super) declared: (Vec<Declared>, bool),
    pub(super) permissions: Permissions,
    pub(super) missing: Missing,
    /// The plugin's work queue, when it registers one.
    pub(super) queue: Option<reconciling::Wanted>,
    /// Where the operator lets it apply.
    pub(super) scope: Option<crate::scope::Scope>,
}

/// The writes a registration declares.
pub fn declared_writes(registration: &Registration) -> Vec<Declared> {
    registration
        .writes
        .iter()
        .map(|w| Declared {
            api_version: w.resource.api_version.clone(),
            kind: w.resource.kind.clone(),
            verbs: w.verbs.iter().map(|&v| verb(v)).collect(),
        })
        .collect()
}

fn verb(v: WitVerb) -> Verb {
    match v {
        WitVerb::Create => Verb::Create,
        WitVerb::Update => Verb::Update,
        WitVerb::Patch => Verb::Patch,
        WitVerb::Delete => Verb::Delete,
    }
}

/// A watch or read of a registration, resolved to an informer.
pub(super) struct Wanted {
    spec: WatchSpec,
    /// The watch's number in the registration (0 for reads: they deliver
    /// nothing).
    watch: u32,
    filter: UpdateFilter,
    resync: Option<Duration>,
    handles_events: bool,
    /// How its events feed the plugin's queue (none for reads).
    enqueue: Enqueue,
    informer: Arc<SharedInformer>,
}

/// One source of objects a registration asks for: a watch (its events are
/// delivered) or a read (its cache is only queried).
pub struct Source<'a> {
    pub resource: &'a crate::bindings::types::ResourceType,
    pub namespace: &'a Option<String>,
    pub label_selector: &'a Option<String>,
    pub field_selector: &'a Option<String>,
    pub indexes: &'a [crate::bindings::types::Index],
    /// The watch's number in the registration; 0 for reads.
    pub watch: u32,
    /// The watch's update filter; empty for reads.
    pub updates_when: &'a [crate::bindings::types::Change],
    /// 0 for none, and for reads.
    pub resync_seconds: u32,
    pub handles_events: bool,
    /// How the watch's events feed the plugin's queue; none for reads.
    pub enqueue: Option<&'a Enqueue>,
}

/// A registration's watches, then its reads.
pub fn sources(registration: &Registration) -> impl Iterator<Item = Source<'_>> {
    let watches = registration.watches.iter().zip(0..).map(|(w, watch)| Source {
        resource: &w.resource,
        namespace: &w.namespace,
        label_selector: &w.label_selector,
        field_selector: &w.field_selector,
        indexes: &w.indexes,
        watch,
        updates_when: &w.updates_when,
        resync_seconds: w.resync_seconds,
        handles_events: true,
        enqueue: Some(&w.enqueue),
    });
    let reads = registration.reads.iter().map(|r| Source {
        resource: &r.resource,
        namespace: &r.namespace,
        label_selector: &r.label_selector,
        field_selector: &r.field_selector,
        indexes: &r.indexes,
        watch: 0,
        updates_when: &[],
        resync_seconds: 0,
        handles_events: false,
        enqueue: None,
    });
    watches.chain(reads)
}

pub fn index_spec(by: &IndexBy) -> IndexSpec {
    match by {
        IndexBy::Label(k) => IndexSpec::Label(k.clone()),
        IndexBy::Annotation(k) => IndexSpec::Annotation(k.clone()),
        IndexBy::OwnerUid => IndexSpec::OwnerUid,
        IndexBy::OwnerKindName => IndexSpec::OwnerKindName,
        IndexBy::Field(p) => IndexSpec::Field(p.clone()),
    }
}

impl PluginManager {
    /// Resolve a registration's watches and reads to running informers, with
    /// their indexes ensured.
    pub(super) async fn resolve(
        &self,
        plugin: &str,
        registration: &Registration,
    ) -> anyhow::Result<Resolution> {
        let grants = self.grants();
        let super::Allowed {
            sources,
            declared,
            permissions,
            missing,
        } = super::allowed(&grants, plugin, registration).map_err(anyhow::Error::msg)?;
        let scope = self.scope_for(plugin, &grants).await?;
        let caps = self.caps(plugin)?;
        if let Some(kinds) = scope.as_ref().and_then(|s| s.include().kinds.as_ref()) {
            for kind in kinds {
                let (v, k) = crate::scope::selection::split_kind(kind);
                let watched = sources.iter().any(|(gvk, _)| {
                    gvk.kind == k
                        && v.is_none_or(|v| {
                            wink_informer::canonical::same_type((v, k), (&gvk.api_version(), &gvk.kind))
                        })
                });
                if !watched {
                    tracing::warn!(
                        plugin,
                        "the scope's kind {kind:?} is none the plugin watches or reads: it matches nothing"
                    );
                }
            }
        }
        let mut wanted = Vec::new();
        for (
            gvk,
            Source {
                namespace,
                label_selector,
                field_selector,
                indexes,
                resync_seconds,
                handles_events,
                watch,
                updates_when,
                enqueue,
                ..
            },
        ) in sources
        {
            let spec = WatchSpec {
                api_version: gvk.api_version(),
                kind: gvk.kind.clone(),
                namespace: namespace.clone().or_else(|| self.options.namespace.clone()),
                label_selector: label_selector.clone().filter(|s| !s.is_empty()),
                field_selector: field_selector.clone().filter(|s| !s.is_empty()),
            };
            // What discovery resolved it to decides too: that is what is listed.
            let unresolved = |e| super::waiting::unresolved(e, &spec);
            let (ar, _) = self
                .factory
                .resolve(&spec.api_version, &spec.kind)
                .await
                .map_err(unresolved)?;
            gvk.check_resolved(&ar)
                .with_context(|| format!("plugin {plugin}"))?;
            grants
                .may_read(plugin, &ar.api_version, &ar.kind)
                .map_err(anyhow::Error::msg)?;
            let informer = self.factory.informer_for(&spec).await.map_err(unresolved)?;
            for index in indexes {
                let by = index_spec(&index.by);
                informer
                    .ensure_index(&index.name, &by.to_string(), by.func())
                    .with_context(|| format!("index {:?} on {}", index.name, spec.describe()))?;
            }
            let resync =
                (handles_events && resync_seconds > 0).then(|| Duration::from_secs(resync_seconds.into()));
            wanted.push(Wanted {
                spec,
                watch,
                filter: UpdateFilter::new(updates_when.to_vec()),
                resync,
                handles_events,
                enqueue: enqueue.cloned().unwrap_or(Enqueue::None),
                informer,
            });
        }
        Ok(Resolution {
            declared: (declared, registration.records_events),
            wait_for_sync: registration.wait_for_sync,
            wanted,
            permissions,
            missing,
            scope,
            queue: registration.queue.as_ref().map(|q| reconciling::Wanted {
                config: super::naming::queue_config(q),
                keys: caps.queue_keys.unwrap_or(crate::workqueue::MAX_KEYS),
                api_version: q.resource.api_version.clone(),
                kind: q.resource.kind.clone(),
            }),
        })
    }

    /// Attach an instance to its informers. Where `previous` has a listener on
    /// the same watch, it is handed over atomically; previous registrations
    /// not wanted any more are released.
    pub(super) fn attach(
        &self,
        instance: &Arc<PluginInstance>,
        resolution: Resolution,
        previous: Option<&[Registered]>,
    ) -> Vec<Registered> {
        let Resolution {
            wanted,
            permissions,
            wait_for_sync,
            queue,
            scope,
            ..
        } = resolution;
        let scoped = scope.is_some();
        instance.cache_scope().scope().set(scope);
        let gate = wait_for_sync.then(|| {
            Arc::new(SyncGate {
                informers: wanted.iter().map(|w| w.informer.clone()).collect(),
                open: Default::default(),
            })
        });
        instance.write_scope().grant(WriteAccess::new(
            instance.name().into(),
            self.cluster.clone(),
            permissions,
        ));
        instance.report_scope().connect(self.options.reports.clone());
        if let Some(share) = self.cpu_share(instance.name()) {
            instance.share_cpu(share);
        }
        let reconciling = self
            .queues
            .for_plugin(instance.name(), queue, &self.options.leadership);
        if let Some(r) = &reconciling {
            r.serve(instance);
        }
        let pending = Arc::new(AtomicUsize::new(wanted.len()));
        if wanted.is_empty() {
            // Nothing to list: synced at once, and said like any other.
            instance.set_synced();
            tracing::info!(plugin = %instance.name(), "plugin synced");
            let instance = instance.clone();
            tokio::task::spawn_blocking(move || instance.on_synced());
        }
        let mut previous: Vec<Registered> = previous.map(<[Registered]>::to_vec).unwrap_or_default();
        let mut registered = Vec::new();
        for w in wanted {
            instance
                .cache_scope()
                .grant(&w.spec.api_version, &w.spec.kind, w.informer.store().clone());
            let handler = Arc::new(InstanceEventHandler {
                instance: instance.clone(),
                watch: w.watch,
                filter: w.filter,
                gate: gate.clone(),
                pending_syncs: pending.clone(),
                handles_events: w.handles_events,
                leadership: self.options.leadership.clone(),
                reconciling: reconciling.clone(),
                tracker: ((scoped || self.options.exceptions) && w.handles_events).then(|| {
                    let tracker = crate::scope::Tracker::new(instance.cache_scope().scope().clone());
                    Arc::new(match self.options.exceptions {
                        true => tracker.with_exceptions(crate::scope::excepting::Excepting::new(
                            self.exceptions().clone(),
                            instance.name().into(),
                            instance.id(),
                            instance.report_scope().clone(),
                        )),
                        false => tracker,
                    })
                }),
            });
            let feeder = reconciling
                .as_ref()
                .filter(|_| !matches!(w.enqueue, Enqueue::None))
                .map(|r| {
                    Arc::new(FeedHandler {
                        instance: instance.clone(),
                        feed: Feed {
                            reconciling: r.clone(),
                            how: w.enqueue.clone(),
                            watch: w.watch,
                        },
                        filter: handler.filter.clone(),
                        leadership: self.options.leadership.clone(),
                        scope: instance.cache_scope().scope().clone(),
                        exceptions: self.options.exceptions.then(|| self.exceptions().clone()),
                    })
                });
            let tracker = handler.tracker.clone();
            let mut listen = |handler: Arc<dyn EventHandler>, feeds: bool, resync| {
                let old = previous
                    .iter()
                    .position(|p| p.spec == w.spec && p.feeds == feeds)
                    .map(|i| previous.remove(i));
                let listener = old
                    .and_then(|old| {
                        w.informer
                            .swap_listener(old.listener_id, instance.name(), handler.clone(), resync)
                    })
                    .unwrap_or_else(|| w.informer.add_listener(instance.name(), handler, resync));
                let rescope = tracker
                    .clone()
                    .filter(|_| !feeds)
                    .map(|tracker| super::scoping::Rescope {
                        listener: listener.clone(),
                        tracker,
                        store: w.informer.store().clone(),
                    });
                registered.push(Registered {
                    spec: w.spec.clone(),
                    listener_id: listener.id(),
                    feeds,
                    rescope,
                });
            };
            listen(handler, false, w.resync);
            if let Some(feeder) = feeder {
                listen(feeder, true, None);
            }
        }
        for old in previous {
            self.factory.release(&old.spec, old.listener_id);
        }
        registered
    }
}
