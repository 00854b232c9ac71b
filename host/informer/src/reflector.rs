//! The reflector: turns `kube::runtime::watcher` events into [`Delta`]s for
//! the informer.
//!
//! List, watch, paging, bookmarks, 410 relists and backoff all belong to
//! kube-runtime's `watcher`; this module only buffers a (re)list between
//! `Init` and `InitDone` so the store can swap atomically, converts objects
//! (decoded as [`RawObject`]s: their text, not a tree) into their cached
//! form once (or, in a relist, reuses the cached version of an unchanged
//! object), and drops objects of the wrong kind. It reads the
//! store (for that reuse), never writes it, and never touches the listeners.

use super::object::{CachePolicy, CachedObject, CompressionGate, ObjRef, RawObject, TypeName};
use super::store::Store;
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
    /// Stops trying LZ4 on a stream that does not compress.
    gate: CompressionGate,
    relist: Option<Vec<ObjRef>>,
    dropped: u64,
    /// The informer's store, read (never written) so that a relist reuses
    /// the cached version of every object that did not change.
    known: Option<Store>,
    reused: u64,
}

impl Reflector {
    /// A reflector for objects of `resource`.
    pub fn new(resource: ApiResource, policy: CachePolicy) -> Self {
        Reflector {
            type_name: TypeName::of(&resource),
            resource,
            policy,
            gate: CompressionGate::default(),
            relist: None,
            dropped: 0,
            known: None,
            reused: 0,
        }
    }

    /// Reuse the versions `store` holds: a relisted object whose uid and
    /// resourceVersion are the cached ones is that same version, so it is
    /// not decoded into a second copy (a relist of 100,000 unchanged objects
    /// then costs no second cache).
    pub fn reuse_from(&mut self, store: Store) {
        self.known = Some(store);
    }

    /// Relisted objects that were the cached version already.
    pub fn reused(&self) -> u64 {
        self.reused
    }

    fn cached_version(&self, obj: &RawObject) -> Option<ObjRef> {
        let store = self.known.as_ref()?;
        let m = &obj.metadata;
        let key = super::object::key_of(m.namespace.as_deref(), m.name.as_deref()?);
        let cached = store.get(&key)?;
        let same = Some(cached.resource_version()) == m.resource_version.as_deref()
            && Some(cached.uid()) == m.uid.as_deref()
            && obj
                .types
                .as_ref()
                .is_none_or(|t| t.kind == cached.kind() && t.api_version == cached.api_version());
        same.then_some(cached)
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
        let policy = self.gate.policy(self.policy);
        let cached = CachedObject::from_raw(obj, &self.type_name, policy);
        self.gate.record(policy, cached.is_compressed());
        Some(cached)
    }

    /// Feed one watcher event; returns a delta when one is complete.
    pub fn handle(&mut self, event: Event<RawObject>) -> Option<Delta> {
        match event {
            Event::Init => {
                self.relist = Some(Vec::new());
                None
            }
            Event::InitApply(obj) => {
                let obj = match self.cached_version(&obj) {
                    Some(cached) => {
                        self.reused += 1;
                        cached
                    }
                    None => self.convert(obj)?,
                };
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
    use crate::object::tests::pod_resource;

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
    fn a_relist_reuses_the_cached_version_of_unchanged_objects() {
        let raw = |name: &str, rv: &str| -> RawObject {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"namespace": "d", "name": name, "resourceVersion": rv, "uid": format!("u-{name}")}
            }))
            .unwrap()
        };
        let mut r = Reflector::new(pod_resource(), CachePolicy::default());
        r.handle(Event::Init);
        r.handle(Event::InitApply(raw("a", "1")));
        r.handle(Event::InitApply(raw("b", "1")));
        let Some(Delta::Replace(first)) = r.handle(Event::InitDone) else {
            panic!("a replace")
        };
        let writer = crate::store::Writer::new();
        writer.replace(first.clone());
        r.reuse_from(writer.reader());
        r.handle(Event::Init);
        r.handle(Event::InitApply(raw("a", "1")));
        r.handle(Event::InitApply(raw("b", "2")));
        let Some(Delta::Replace(second)) = r.handle(Event::InitDone) else {
            panic!("a replace")
        };
        assert!(
            Arc::ptr_eq(&first[0], &second[0]),
            "a is unchanged: the same version"
        );
        assert!(!Arc::ptr_eq(&first[1], &second[1]), "b changed");
        assert_eq!(second[1].resource_version(), "2");
        assert_eq!(r.reused(), 1);
    }

    #[test]
    fn drops_wrong_kind() {
        let mut r = Reflector::new(pod_resource(), CachePolicy::default());
        assert!(r.handle(Event::Apply(dyn_pod("x", "ConfigMap"))).is_none());
        assert_eq!(r.dropped(), 1);
        assert!(r.handle(Event::Apply(dyn_pod("y", "Pod"))).is_some());
    }
}
