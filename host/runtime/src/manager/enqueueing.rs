//! Enqueueing: which keys of a plugin's queue one event of one of its
//! watches adds, by the watch's `enqueue` (its own key, its controller
//! owner's, the queue resource's objects indexing it, or the guest's
//! `map-to-keys`), through the listener that feeds the queue
//! ([`FeedHandler`], which keys of objects outside the plugin's scope never
//! pass). Owns only that mapping; the queue and its worker are
//! `reconciling`'s, the delivery of the event itself the listener's.

use super::reconciling::Reconciling;
use crate::bindings::types::Enqueue;
use crate::instance::PluginInstance;
use serde::Deserialize;
use std::sync::Arc;
use wink_informer::processor::DeliveryFuture;
use wink_informer::{EventHandler, Notification, ObjRef};

/// How one watch feeds its plugin's queue.
pub(super) struct Feed {
    pub(super) reconciling: Arc<Reconciling>,
    pub(super) how: Enqueue,
    /// The watch's number (`map-to-keys` gets it).
    pub(super) watch: u32,
}

impl Feed {
    /// Add the keys `n` concerns (an update: those of both versions).
    pub(super) async fn notified(&self, instance: &PluginInstance, n: &Notification) {
        match n {
            Notification::Add { obj, .. } | Notification::Delete { obj, .. } => {
                self.object(instance, obj).await
            }
            Notification::Update { old, new } => {
                self.object(instance, new).await;
                if !matches!(self.how, Enqueue::OwnKey) {
                    self.object(instance, old).await;
                }
            }
            Notification::Synced => {}
        }
    }

    async fn object(&self, instance: &PluginInstance, obj: &ObjRef) {
        let queue = self.reconciling.queue();
        for key in keys(&self.how, self.reconciling.resource(), instance, self.watch, obj).await {
            queue.add(&key);
        }
    }
}

/// The keys of the queue's resource (`queue`: apiVersion, kind) that an
/// event about `obj`, from the watch number `watch` whose events feed the
/// queue `how`, adds (`wink run`'s and `wink test`'s one rule).
pub async fn keys(
    how: &Enqueue,
    queue: (&str, &str),
    instance: &PluginInstance,
    watch: u32,
    obj: &ObjRef,
) -> Vec<String> {
    let (api_version, kind) = queue;
    match how {
        Enqueue::None => Vec::new(),
        Enqueue::OwnKey => {
            let own = obj.api_version() == api_version && obj.kind() == kind;
            own.then(|| obj.key()).into_iter().collect()
        }
        Enqueue::ControllerOwner => controller_owner(obj, api_version, kind).into_iter().collect(),
        Enqueue::ByIndex(index) => {
            let Some(store) = instance.cache_scope().granted(api_version, kind) else {
                return Vec::new();
            };
            store.index_keys(index, &obj.key()).unwrap_or_else(|e| {
                tracing::warn!(plugin = %instance.name(), "cannot enqueue by index {index:?}: {e}");
                Vec::new()
            })
        }
        Enqueue::Mapped => {
            let mut keys = instance.map_to_keys(watch, obj).await.unwrap_or_default();
            keys.retain(|k| !k.is_empty() && k.len() <= crate::capabilities::MAX_KEY);
            keys
        }
    }
}

#[derive(Deserialize)]
struct Owned {
    #[serde(default)]
    metadata: OwnedMeta,
}

#[derive(Deserialize, Default)]
struct OwnedMeta {
    #[serde(default, rename = "ownerReferences")]
    owner_references: Vec<OwnerReference>,
}

#[derive(Deserialize)]
struct OwnerReference {
    #[serde(default, rename = "apiVersion")]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    controller: bool,
}

/// The key of `obj`'s controller (its owner reference with `controller:
/// true`) when that is an `api_version` `kind`, in `obj`'s namespace.
pub(super) fn controller_owner(obj: &ObjRef, api_version: &str, kind: &str) -> Option<String> {
    let owned: Owned = serde_json::from_str(&obj.json()).ok()?;
    let owner = owned
        .metadata
        .owner_references
        .into_iter()
        .find(|r| r.controller)?;
    (owner.api_version == api_version && owner.kind == kind && !owner.name.is_empty())
        .then(|| wink_informer::object::key_of(obj.namespace(), &owner.name))
}

/// The informer-side handler that feeds a plugin's work queue from one
/// watch: a listener of its own, so the keys of events that arrive while
/// the plugin is busy (a reconcile holds its instance) are added at once,
/// as client-go's handlers add them, not one per call the instance makes.
pub(super) struct FeedHandler {
    pub(super) instance: Arc<PluginInstance>,
    pub(super) feed: Feed,
    pub(super) filter: crate::filter::UpdateFilter,
    pub(super) leadership: crate::leadership::Leadership,
    pub(super) scope: crate::scope::ScopeCell,
    /// The operator's exceptions, when honoured: what they except adds no key.
    pub(super) exceptions: Option<crate::exceptions::ExceptionSet>,
}

impl FeedHandler {
    /// Whether `n` adds a key. An initial list (or the cache replayed to a
    /// new instance) adds nothing here: every key of the queue's resource
    /// is enqueued once the plugin has synced.
    fn passes(&self, n: &Notification) -> bool {
        let now = std::time::SystemTime::now();
        let excepted = |o: &ObjRef| {
            self.exceptions
                .as_ref()
                .is_some_and(|x| x.excepting_obj(self.instance.name(), o, now).is_some())
        };
        let admits = |o: &ObjRef| self.scope.admits(o) && !excepted(o);
        match n {
            Notification::Update { old, new } => {
                self.filter.delivers(old, new) && (admits(new) || admits(old))
            }
            Notification::Add { in_initial_list, obj } => !in_initial_list && admits(obj),
            Notification::Synced => false,
            Notification::Delete { obj, .. } => admits(obj),
        }
    }

    async fn handle(&self, n: &Notification) {
        if self.passes(n) && self.leadership.is_leading() {
            self.feed.notified(&self.instance, n).await;
        }
    }
}

impl EventHandler for FeedHandler {
    fn on_add(&self, obj: &ObjRef, in_initial_list: bool) {
        let n = Notification::Add {
            obj: obj.clone(),
            in_initial_list,
        };
        futures::executor::block_on(self.handle(&n))
    }
    fn on_update(&self, old: &ObjRef, new: &ObjRef) {
        let n = Notification::Update {
            old: old.clone(),
            new: new.clone(),
        };
        futures::executor::block_on(self.handle(&n))
    }
    fn on_delete(&self, obj: &ObjRef, final_state_unknown: bool) {
        let n = Notification::Delete {
            obj: obj.clone(),
            final_state_unknown,
        };
        futures::executor::block_on(self.handle(&n))
    }
    fn on_synced(&self) {}
    fn is_async(&self) -> bool {
        true
    }
    fn wants(&self, n: &Notification) -> bool {
        self.passes(n)
    }
    fn deliver_async(self: Arc<Self>, n: Notification) -> Option<DeliveryFuture> {
        Some(Box::pin(async move { self.handle(&n).await }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_owners(owners: serde_json::Value) -> ObjRef {
        let json = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"namespace": "ns", "name": "p", "uid": "u", "ownerReferences": owners},
        });
        let obj: kube::api::DynamicObject = serde_json::from_value(json).unwrap();
        let ar = kube::api::ApiResource::erase::<k8s_openapi::api::core::v1::Pod>(&());
        wink_informer::CachedObject::from_dynamic(obj, &ar, Default::default())
    }

    #[test]
    fn the_controller_owner_of_the_queue_resource_is_enqueued() {
        let obj = with_owners(serde_json::json!([
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "other", "uid": "1"},
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "2", "controller": true},
        ]));
        assert_eq!(
            controller_owner(&obj, "apps/v1", "ReplicaSet").as_deref(),
            Some("ns/web")
        );
        assert_eq!(
            controller_owner(&obj, "v1", "ConfigMap"),
            None,
            "not the controller"
        );
        assert_eq!(
            controller_owner(&obj, "apps/v1", "Deployment"),
            None,
            "another kind"
        );
        let none = with_owners(serde_json::json!([]));
        assert_eq!(controller_owner(&none, "apps/v1", "ReplicaSet"), None);
    }
}
