//! The reflector: turns `kube::runtime::watcher` events into [`Delta`]s for
//! the informer.
//!
//! List, watch, paging, bookmarks, 410 relists and backoff all belong to
//! kube-runtime's `watcher`; this module only buffers a (re)list between
//! `Init` and `InitDone` so the store can swap atomically, converts objects
//! (decoded as [`RawObject`]s: their text, not a tree) into their cached
//! form once, and drops objects of the wrong kind. It never
//! touches the store or the listeners.

use super::object::{CachePolicy, CachedObject, ObjRef, RawObject, TypeName};
use kube::api::ApiResource;
use kube::runtime::watcher::Event;
use std::sync::Arc;

/// A change for the informer to apply.
#[derive(Debug)]
pub enum Delta {
    /// A complete (re)list: the new full content.
    Replace(Vec<ObjRef>),
    /// Added or modified.
    Apply(ObjRef),
    /// Deleted, with its final state.
    Delete(ObjRef),
}

/// Buffers relists and converts watcher events.
pub struct Reflector {
    resource: ApiResource,
    /// apiVersion and kind, shared by every object this reflector caches.
    type_name: Arc<TypeName>,
    policy: CachePolicy,
    relist: Option<Vec<ObjRef>>,
    dropped: u64,
}

impl Reflector {
    /// A reflector for objects of `resource`.
    pub fn new(resource: ApiResource, policy: CachePolicy) -> Self {
        Reflector {
            type_name: TypeName::of(&resource),
            resource,
            policy,
            relist: None,
            dropped: 0,
        }
    }

    /// Objects dropped because they were not of the watched kind.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    fn convert(&mut self, obj: RawObject) -> Option<ObjRef> {
        if let Some(types) = &obj.types
            && (types.kind != self.resource.kind || types.api_version != self.resource.api_version)
        {
            self.dropped += 1;
            tracing::warn!(
                expected = %format!("{}/{}", self.resource.api_version, self.resource.kind),
                got = %format!("{}/{}", types.api_version, types.kind),
                name = obj.metadata.name.as_deref().unwrap_or(""),
                "dropping an object of the wrong kind"
            );
            return None;
        }
        Some(CachedObject::from_raw(obj, &self.type_name, self.policy))
    }

    /// Feed one watcher event; returns a delta when one is complete.
    pub fn handle(&mut self, event: Event<RawObject>) -> Option<Delta> {
        match event {
            Event::Init => {
                self.relist = Some(Vec::new());
                None
            }
            Event::InitApply(obj) => {
                let obj = self.convert(obj)?;
                self.relist.get_or_insert_with(Vec::new).push(obj);
                None
            }
            Event::InitDone => Some(Delta::Replace(self.relist.take().unwrap_or_default())),
            Event::Apply(obj) => self.convert(obj).map(Delta::Apply),
            Event::Delete(obj) => self.convert(obj).map(Delta::Delete),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::informer::object::tests::pod_resource;

    fn dyn_pod(name: &str, kind: &str) -> RawObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": kind,
            "metadata": {"namespace": "d", "name": name, "resourceVersion": "1"}
        }))
        .unwrap()
    }

    #[test]
    fn buffers_a_relist_until_init_done() {
        let mut r = Reflector::new(pod_resource(), CachePolicy::default());
        assert!(r.handle(Event::Init).is_none());
        assert!(r.handle(Event::InitApply(dyn_pod("a", "Pod"))).is_none());
        assert!(r.handle(Event::InitApply(dyn_pod("b", "Pod"))).is_none());
        match r.handle(Event::InitDone) {
            Some(Delta::Replace(objs)) => assert_eq!(objs.len(), 2),
            other => panic!("expected a replace, got {other:?}"),
        }
        assert!(matches!(
            r.handle(Event::Apply(dyn_pod("c", "Pod"))),
            Some(Delta::Apply(_))
        ));
        assert!(matches!(
            r.handle(Event::Delete(dyn_pod("c", "Pod"))),
            Some(Delta::Delete(_))
        ));
    }

    #[test]
    fn drops_wrong_kind() {
        let mut r = Reflector::new(pod_resource(), CachePolicy::default());
        assert!(r.handle(Event::Apply(dyn_pod("x", "ConfigMap"))).is_none());
        assert_eq!(r.dropped(), 1);
        assert!(r.handle(Event::Apply(dyn_pod("y", "Pod"))).is_some());
    }
}
