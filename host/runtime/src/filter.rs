//! Update filters (`watch.updates-when`): whether an update changes what a
//! plugin said it cares about, decided on the host before any call into the
//! guest (controller-runtime's predicates). Owns only that decision; the
//! cache has applied the update whatever it says.
//!
//! Labels and the generation are compared on the metadata the informer
//! already scanned, with no parse. The other predicates read both versions
//! parsed, and an update is parsed once for every plugin that filters it:
//! the listeners of one informer get the same two objects, and the parsed
//! pair of the last [`RECENT`] updates is kept (with the objects, so no
//! address is reused while it is kept).

use crate::bindings::types::Change;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use wink_informer::ObjRef;

/// How many updates' parsed versions are kept for the other plugins.
pub const RECENT: usize = 32;

/// An update's two versions, parsed.
type Parsed = Arc<(Value, Value)>;

static PARSED: Mutex<VecDeque<(ObjRef, ObjRef, Parsed)>> = Mutex::new(VecDeque::new());

/// The update from `old` to `new`, parsed: by this call, or by another
/// plugin's filter of the same update.
fn parsed(old: &ObjRef, new: &ObjRef) -> Parsed {
    let same = |(o, n, _): &&(ObjRef, ObjRef, Parsed)| Arc::ptr_eq(o, old) && Arc::ptr_eq(n, new);
    if let Some((_, _, p)) = PARSED.lock().unwrap_or_else(|e| e.into_inner()).iter().find(same) {
        return p.clone();
    }
    let p: Parsed = Arc::new((parse(old), parse(new)));
    let mut recent = PARSED.lock().unwrap_or_else(|e| e.into_inner());
    if recent.len() >= RECENT {
        recent.pop_front();
    }
    recent.push_back((old.clone(), new.clone(), p.clone()));
    p
}

/// What an update must change to be delivered; empty delivers every update.
#[derive(Debug, Clone, Default)]
pub struct UpdateFilter {
    changes: Vec<Change>,
}

impl UpdateFilter {
    /// The filter of a watch's `updates-when`.
    pub fn new(changes: Vec<Change>) -> Self {
        UpdateFilter { changes }
    }

    /// Whether the filter lets every update through.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// Whether the update from `old` to `new` is delivered. A resync (the
    /// same version on both sides) always is: its meaning is "look again".
    pub fn delivers(&self, old: &ObjRef, new: &ObjRef) -> bool {
        if self.changes.is_empty() || old.resource_version() == new.resource_version() {
            return true;
        }
        let docs: std::cell::OnceCell<Parsed> = std::cell::OnceCell::new();
        let doc = || {
            let p = docs.get_or_init(|| parsed(old, new));
            (&p.0, &p.1)
        };
        self.changes.iter().any(|change| match change {
            Change::Labels => !old.labels().eq(new.labels()),
            Change::Label(key) => old.label(key) != new.label(key),
            Change::Generation => old.generation() != new.generation(),
            Change::Annotations => {
                let (o, n) = doc();
                o.pointer("/metadata/annotations") != n.pointer("/metadata/annotations")
            }
            Change::Annotation(key) => {
                let (o, n) = doc();
                let get = |v: &Value| {
                    v.pointer("/metadata/annotations")
                        .and_then(|a| a.get(key))
                        .cloned()
                };
                get(o) != get(n)
            }
            Change::Field(path) => {
                let (o, n) = doc();
                let pointer = field_pointer(path);
                o.pointer(&pointer) != n.pointer(&pointer)
            }
        })
    }
}

fn parse(obj: &ObjRef) -> Value {
    serde_json::from_str(&obj.json()).unwrap_or(Value::Null)
}

/// `spec.template` → `/spec/template` (JSON Pointer escapes applied).
fn field_pointer(path: &str) -> String {
    path.split('.')
        .filter(|s| !s.is_empty())
        .map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::{ApiResource, DynamicObject};
    use kube::core::GroupVersionKind;
    use wink_informer::object::{CachePolicy, CachedObject};

    fn obj(rv: u64, labels: &[(&str, &str)], generation: u64, phase: &str) -> ObjRef {
        let labels: serde_json::Map<String, Value> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), Value::from(*v)))
            .collect();
        let obj: DynamicObject = serde_json::from_value(serde_json::json!({
            "metadata": {"namespace": "ns", "name": "p", "uid": "u", "resourceVersion": rv.to_string(),
                         "labels": labels, "generation": generation, "annotations": {"a": phase}},
            "spec": {"nodeName": "node-1"},
            "status": {"phase": phase},
        }))
        .unwrap();
        let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Pod"), "pods");
        CachedObject::from_dynamic(obj, &ar, CachePolicy::default())
    }

    #[test]
    fn filters_deliver_only_what_changed_what_they_name() {
        let old = obj(1, &[("app", "web")], 1, "Pending");
        let status_only = obj(2, &[("app", "web")], 1, "Running");
        let relabeled = obj(3, &[("app", "db")], 1, "Pending");
        let respec = obj(4, &[("app", "web")], 2, "Pending");
        let f = |c: Vec<Change>| UpdateFilter::new(c);
        assert!(f(vec![]).delivers(&old, &status_only));
        assert!(!f(vec![Change::Generation]).delivers(&old, &status_only));
        assert!(f(vec![Change::Generation]).delivers(&old, &respec));
        assert!(!f(vec![Change::Labels]).delivers(&old, &status_only));
        assert!(f(vec![Change::Labels]).delivers(&old, &relabeled));
        assert!(f(vec![Change::Label("app".into())]).delivers(&old, &relabeled));
        assert!(!f(vec![Change::Label("tier".into())]).delivers(&old, &relabeled));
        assert!(f(vec![Change::Field("status.phase".into())]).delivers(&old, &status_only));
        assert!(f(vec![Change::Annotation("a".into())]).delivers(&old, &status_only));
        assert!(!f(vec![Change::Annotation("b".into())]).delivers(&old, &status_only));
        assert!(!f(vec![Change::Field("spec".into())]).delivers(&old, &status_only));
        // A resync is always delivered.
        assert!(f(vec![Change::Generation]).delivers(&old, &old));
    }

    #[test]
    fn an_update_is_parsed_once_for_every_filter_of_it() {
        let old = obj(1, &[("app", "web")], 1, "Pending");
        let new = obj(2, &[("app", "web")], 1, "Running");
        let filters = [
            UpdateFilter::new(vec![Change::Generation]),
            UpdateFilter::new(vec![Change::Annotations]),
            UpdateFilter::new(vec![Change::Field("status.phase".into())]),
            UpdateFilter::new(vec![Change::Labels]),
        ];
        let first = parsed(&old, &new);
        let answers: Vec<bool> = (0..25)
            .flat_map(|_| filters.iter().map(|f| f.delivers(&old, &new)))
            .collect();
        assert_eq!(&answers[..4], [false, true, true, false]);
        assert!(answers.chunks(4).all(|c| c == &answers[..4]));
        assert!(
            Arc::ptr_eq(&first, &parsed(&old, &new)),
            "every filter read the one parse"
        );
        // Another update is another parse.
        let again = obj(3, &[("app", "web")], 2, "Running");
        assert!(!Arc::ptr_eq(&first, &parsed(&new, &again)));
        assert!(filters[0].delivers(&new, &again));
    }

    #[test]
    fn field_paths_become_json_pointers() {
        assert_eq!(
            field_pointer("metadata.ownerReferences"),
            "/metadata/ownerReferences"
        );
        assert_eq!(field_pointer("a/b.c~d"), "/a~1b/c~0d");
    }
}
