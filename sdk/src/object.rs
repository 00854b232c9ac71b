//! [`Object`]: one Kubernetes object as a handler receives it or the cache
//! returns it. It wraps a host handle (WIT `resource object`): nothing is
//! copied into the plugin until an accessor asks, and each answer is kept, so
//! asking twice crosses the boundary once. The key (hence name and namespace)
//! comes with every event and every cache answer, so reading it costs no call.

use crate::bindings::wink::plugin::types;
use crate::keys::{self, Span};
use serde::de::DeserializeOwned;
use std::cell::OnceCell;
use std::mem::ManuallyDrop;
use std::rc::Rc;

/// Where an [`Object`]'s host handle comes from.
enum Handle {
    /// Lent by the host for one handler call: never dropped by us.
    Lent(ManuallyDrop<types::Object>),
    /// Ours (a `get` answer, or a clone).
    Owned(types::Object),
    /// One object of a list answer: its key is a slice of the answer's keys,
    /// its own handle is made on first use.
    InList {
        answer: Rc<Answer>,
        index: u32,
        key: Span,
        handle: OnceCell<types::Object>,
    },
}

/// A list answer, shared by the objects made from it: all their keys in one
/// string, and the host's handle to the list.
struct Answer {
    keys: String,
    list: types::ObjectList,
}

/// A Kubernetes object delivered to a handler or returned by the cache.
///
/// In a handler it is lent for the duration of the call; `clone()` it to keep
/// it longer (the clone is an owned handle to the same object version).
pub struct Object {
    handle: Handle,
    /// The key of a lent or owned object (a list member's is in its answer).
    key: OnceCell<String>,
    /// What was fetched beyond the key; boxed, so an object whose handler
    /// reads only its key or name stays small and cheap to build.
    fetched: OnceCell<Box<Fetched>>,
    /// The watch a delivered object came from ([`NO_WATCH`] for others).
    watch: u32,
}

/// The `watch` of an object that was not delivered (a cache answer).
const NO_WATCH: u32 = u32::MAX;

/// The answers an [`Object`] fetched from the host, kept for the next ask.
#[derive(Clone, Default)]
struct Fetched {
    uid: OnceCell<String>,
    resource_version: OnceCell<String>,
    meta: OnceCell<types::ObjectMeta>,
    json: OnceCell<String>,
}

impl Object {
    fn new(handle: Handle, key: Option<String>) -> Self {
        Object {
            handle,
            key: key.map(OnceCell::from).unwrap_or_default(),
            fetched: OnceCell::new(),
            watch: NO_WATCH,
        }
    }

    /// An object the plugin owns, with its key when the caller knows it.
    #[doc(hidden)]
    pub fn from_owned(handle: types::Object, key: Option<String>) -> Self {
        Object::new(Handle::Owned(handle), key)
    }

    /// The objects of a list answer, each with its key. They share the
    /// answer: one allocation for all of them besides the vector.
    #[doc(hidden)]
    pub fn from_answer(answer: types::Answer) -> Vec<Object> {
        let mut objects = Vec::with_capacity(keys::count(&answer.keys));
        let answer = Rc::new(Answer {
            keys: answer.keys,
            list: answer.objects,
        });
        keys::spans(&answer.keys, |key| {
            let handle = Handle::InList {
                answer: answer.clone(),
                index: objects.len() as u32,
                key,
                handle: OnceCell::new(),
            };
            objects.push(Object::new(handle, None));
        });
        objects
    }

    /// An object lent by the host for one handler call; an empty `key` is
    /// read from the object when asked for.
    ///
    /// # Safety
    /// `handle` must be a borrowed handle valid until this value is dropped,
    /// which must happen before the handler call returns.
    #[doc(hidden)]
    pub unsafe fn lent(handle: u32, key: String, watch: u32) -> Self {
        // SAFETY: the caller guarantees the borrow outlives this value; the
        // ManuallyDrop keeps it from being dropped as if it were ours.
        let handle = ManuallyDrop::new(unsafe { types::Object::from_handle(handle) });
        // An empty key (none given) is read from the object when asked for.
        let key = (!key.is_empty()).then_some(key);
        Object {
            watch,
            ..Object::new(Handle::Lent(handle), key)
        }
    }

    /// For an object handed to a handler: the number of the watch it came
    /// from, in the order of the registration's [`watch`](crate::Registration::watch)
    /// calls (0 for the first). None for an object from the cache or a write.
    pub fn watch(&self) -> Option<u32> {
        (self.watch != NO_WATCH).then_some(self.watch)
    }

    pub(crate) fn handle(&self) -> &types::Object {
        match &self.handle {
            Handle::Lent(h) => h,
            Handle::Owned(h) => h,
            Handle::InList {
                answer,
                index,
                handle,
                ..
            } => handle.get_or_init(|| {
                answer
                    .list
                    .get(*index)
                    .expect("an answer keeps every object it listed")
            }),
        }
    }

    /// The cache key: `namespace/name`, or `name` when cluster-scoped.
    pub fn key(&self) -> &str {
        match &self.handle {
            Handle::InList { answer, key, .. } => &answer.keys[key.start as usize..key.end as usize],
            _ => self.key.get_or_init(|| self.handle().key()),
        }
    }

    /// `apiVersion`, e.g. `apps/v1`.
    pub fn api_version(&self) -> &str {
        &self.meta().api_version
    }

    /// `kind`, e.g. `Pod`.
    pub fn kind(&self) -> &str {
        &self.meta().kind
    }

    /// `metadata.namespace`, none when cluster-scoped.
    pub fn namespace(&self) -> Option<&str> {
        match &self.handle {
            Handle::InList { answer, key, .. } => {
                (key.name > key.start).then(|| &answer.keys[key.start as usize..key.name as usize - 1])
            }
            _ => {
                let key = self.key();
                keys::slash(key).map(|i| &key[..i])
            }
        }
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        match &self.handle {
            Handle::InList { answer, key, .. } => &answer.keys[key.name as usize..key.end as usize],
            _ => {
                let key = self.key();
                keys::slash(key).map_or(key, |i| &key[i + 1..])
            }
        }
    }

    fn fetched(&self) -> &Fetched {
        self.fetched.get_or_init(Box::default)
    }

    /// `metadata.uid`.
    pub fn uid(&self) -> &str {
        let f = self.fetched();
        match f.meta.get() {
            Some(m) => &m.uid,
            None => f.uid.get_or_init(|| self.handle().uid()),
        }
    }

    /// `metadata.resourceVersion` (opaque: compare for equality only).
    pub fn resource_version(&self) -> &str {
        let f = self.fetched();
        match f.meta.get() {
            Some(m) => &m.resource_version,
            None => f
                .resource_version
                .get_or_init(|| self.handle().resource_version()),
        }
    }

    /// `metadata.labels` as (key, value) pairs sorted by key.
    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        self.meta().labels.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// One label's value.
    pub fn label(&self, key: &str) -> Option<&str> {
        let labels = &self.meta().labels;
        labels
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .ok()
            .map(|i| labels[i].1.as_str())
    }

    /// The whole object as JSON text.
    pub fn json(&self) -> &str {
        self.fetched().json.get_or_init(|| self.handle().json())
    }

    /// Decode the whole object into a typed value, e.g.
    /// `k8s_openapi::api::core::v1::Pod` or a struct of your own.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.json())
    }

    /// All metadata in one crossing, fetched on first use.
    fn meta(&self) -> &types::ObjectMeta {
        self.fetched().meta.get_or_init(|| self.handle().meta())
    }
}

impl Clone for Object {
    /// An owned handle to the same object version (a list answer's member
    /// shares the answer instead); what was already fetched is copied along.
    fn clone(&self) -> Self {
        let handle = match &self.handle {
            Handle::InList {
                answer, index, key, ..
            } => Handle::InList {
                answer: answer.clone(),
                index: *index,
                key: *key,
                handle: OnceCell::new(),
            },
            _ => Handle::Owned(self.handle().duplicate()),
        };
        Object {
            handle,
            key: self.key.clone(),
            fetched: self.fetched.clone(),
            watch: self.watch,
        }
    }
}

impl std::fmt::Debug for Object {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Object")
            .field("key", &self.key())
            .field("resource_version", &self.resource_version())
            .finish()
    }
}
