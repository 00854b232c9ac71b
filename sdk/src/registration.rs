//! [`Registration`] and [`Watch`]: what a plugin asks the host to watch,
//! built with small builders instead of raw WIT records.

use crate::bindings::wink::plugin::types;
use std::time::Duration;
pub use types::{Change, IndexBy};

/// A resource type, as in a manifest: `Resource::new("apps/v1", "Deployment")`.
///
/// It holds the WIT record itself, so a cache query passes it by reference
/// (building a query copies no string in the plugin).
#[derive(Debug, Clone)]
pub struct Resource(types::ResourceType);

impl Resource {
    /// A resource by apiVersion and kind.
    pub fn new(api_version: impl Into<String>, kind: impl Into<String>) -> Self {
        Resource(types::ResourceType {
            api_version: api_version.into(),
            kind: kind.into(),
        })
    }

    /// The resource of a typed kind.
    pub fn of<K: crate::Kind>() -> Self {
        Resource::new(K::API_VERSION, K::KIND)
    }

    /// `v1`, `apps/v1`, ...
    pub fn api_version(&self) -> &str {
        &self.0.api_version
    }

    /// `Pod`, `Deployment`, ...
    pub fn kind(&self) -> &str {
        &self.0.kind
    }

    pub(crate) fn as_wit(&self) -> &types::ResourceType {
        &self.0
    }
}

impl PartialEq for Resource {
    fn eq(&self, other: &Self) -> bool {
        self.api_version() == other.api_version() && self.kind() == other.kind()
    }
}

impl Eq for Resource {}

/// One watch: a resource, optionally narrowed by namespace and selectors.
#[derive(Debug, Clone)]
pub struct Watch {
    resource: Resource,
    namespace: Option<String>,
    label_selector: Option<String>,
    field_selector: Option<String>,
    resync: Duration,
    indexes: Vec<types::Index>,
    updates_when: Vec<Change>,
    enqueue: types::Enqueue,
}

impl Watch {
    /// Watch every object of a resource type in every namespace.
    pub fn new(api_version: impl Into<String>, kind: impl Into<String>) -> Self {
        Watch {
            resource: Resource::new(api_version, kind),
            namespace: None,
            label_selector: None,
            field_selector: None,
            resync: Duration::ZERO,
            indexes: Vec::new(),
            updates_when: Vec::new(),
            enqueue: types::Enqueue::None,
        }
    }

    /// Watch the resource of a typed kind, e.g. `Watch::of::<Pod>()`.
    pub fn of<K: crate::Kind>() -> Self {
        Watch::new(K::API_VERSION, K::KIND)
    }

    /// Ask for a named index on this resource, e.g.
    /// `.index("by-app", IndexBy::Label("app".into()))`.
    pub fn index(mut self, name: impl Into<String>, by: IndexBy) -> Self {
        self.indexes.push(types::Index {
            name: name.into(),
            by,
        });
        self
    }

    /// Only this namespace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Only objects matching a label selector: `"app=web,tier!=db"`, or a
    /// [`Selector`](crate::Selector) (`&Selector::new().eq("app", "web")`).
    pub fn label_selector(mut self, selector: impl Into<crate::Selector>) -> Self {
        self.label_selector = selector.into().into_query();
        self
    }

    /// Only objects matching a field selector (`spec.nodeName=node-1`).
    pub fn field_selector(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// Re-deliver every cached object as an update this often (floor 1 s).
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = period;
        self
    }

    /// Deliver an update only when it changes `change` (call again for
    /// more: any of them will do). Filtered on the host, before the plugin
    /// is entered: a policy about labels or spec is never called for a
    /// status-only update. Adds, deletes and resyncs are always delivered.
    pub fn updates_when(mut self, change: Change) -> Self {
        self.updates_when.push(change);
        self
    }

    /// Feed the plugin's [queue](crate::queue) from this watch's events:
    /// each event adds the keys `how` says.
    pub fn enqueue(mut self, how: crate::queue::Enqueue) -> Self {
        self.enqueue = how;
        self
    }

    fn into_read(self) -> types::Read {
        types::Read {
            resource: self.resource.0,
            namespace: self.namespace,
            label_selector: self.label_selector,
            field_selector: self.field_selector,
            indexes: self.indexes,
        }
    }

    fn into_wit(self) -> types::Watch {
        let secs = self.resync.as_secs_f64().ceil();
        types::Watch {
            resource: self.resource.0,
            namespace: self.namespace,
            label_selector: self.label_selector,
            field_selector: self.field_selector,
            resync_seconds: secs.min(u32::MAX as f64) as u32,
            indexes: self.indexes,
            updates_when: self.updates_when,
            enqueue: self.enqueue,
        }
    }
}

pub use types::Verb;

/// Everything a plugin registers from `init`.
#[derive(Debug, Clone)]
pub struct Registration {
    name: Option<String>,
    watches: Vec<Watch>,
    reads: Vec<Watch>,
    writes: Vec<types::WriteDecl>,
    records_events: bool,
    wait_for_sync: bool,
    admission: Vec<types::Webhook>,
    queue: Option<crate::queue::Queue>,
}

impl Default for Registration {
    fn default() -> Self {
        Registration {
            name: None,
            watches: Vec::new(),
            reads: Vec::new(),
            writes: Vec::new(),
            records_events: false,
            wait_for_sync: true,
            admission: Vec::new(),
            queue: None,
        }
    }
}

impl Registration {
    /// An empty registration. Its deliveries wait for every watch and read
    /// to list (see [`Registration::deliver_while_listing`]); it is named
    /// after its file (see [`Registration::name`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// The plugin's one name, in grants, reports, Events, field managers,
    /// metrics and logs: a DNS label. Without one the plugin is named after
    /// its component file (`team_label_guard.wasm`: `team_label_guard`), so
    /// one component installed under two file names (with two configs) is two
    /// plugins; a plugin that declares its name is one, wherever its file is.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Serve an admission webhook (at most one validating and one mutating):
    /// wink registers it with the API server and calls
    /// [`Handler::validate`](crate::Handler::validate) or
    /// [`Handler::mutate`](crate::Handler::mutate) for each request it matches.
    pub fn admission(mut self, webhook: crate::admission::Webhook) -> Self {
        self.admission.push(webhook.0);
        self
    }

    /// Deliver each watch's initial list as it arrives, before the plugin's
    /// other watches and reads have listed. By default nothing is delivered
    /// until all have (client-go's WaitForCacheSync), so a handler acting in
    /// `on_add` during the initial list finds the whole cache; only a plugin
    /// that never looks across resources gains by this.
    pub fn deliver_while_listing(mut self) -> Self {
        self.wait_for_sync = false;
        self
    }

    /// Add a watch.
    pub fn watch(mut self, watch: Watch) -> Self {
        self.watches.push(watch);
        self
    }

    /// Declare a resource this plugin only queries (no events); the plugin
    /// is synced only once its informer is.
    pub fn read(mut self, watch: Watch) -> Self {
        self.reads.push(watch);
        self
    }

    /// Declare writes this plugin makes to `resource` (the operator grants
    /// them; an undeclared or ungranted write answers `not-permitted`).
    pub fn writes(mut self, resource: Resource, verbs: &[Verb]) -> Self {
        self.writes.push(types::WriteDecl {
            resource: resource.0,
            verbs: verbs.to_vec(),
        });
        self
    }

    /// Reconcile the keys of a work queue (see [`crate::queue`]): the host
    /// calls [`Handler::reconcile`](crate::Handler::reconcile) for each.
    pub fn queue(mut self, queue: crate::queue::Queue) -> Self {
        self.queue = Some(queue);
        self
    }

    /// Declare that this plugin records Events.
    pub fn records_events(mut self) -> Self {
        self.records_events = true;
        self
    }

    #[doc(hidden)]
    pub fn into_wit(self) -> types::Registration {
        types::Registration {
            name: self.name,
            watches: self.watches.into_iter().map(Watch::into_wit).collect(),
            reads: self.reads.into_iter().map(Watch::into_read).collect(),
            writes: self.writes,
            records_events: self.records_events,
            wait_for_sync: self.wait_for_sync,
            admission: self.admission,
            queue: self.queue.map(|q| q.0),
        }
    }
}
