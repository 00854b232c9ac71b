//! [`Object`]: one Kubernetes object as a handler receives it or the cache
//! returns it. It wraps a host handle (WIT `resource object`): nothing is
//! copied into the plugin until an accessor asks, and each answer is kept, so
//! asking twice crosses the boundary once. The key (hence name and namespace)
//! comes with every event and every cache answer, so reading it costs no call.

use crate::bindings::wink::plugin::types;
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
    /// One object of a list answer; its own handle is made on first use.
    InList {
        list: Rc<types::ObjectList>,
        index: u32,
        handle: OnceCell<types::Object>,
    },
}

/// An object's key: its own string, or a slice of a list answer's keys
/// (shared, so an answer of N objects allocates its keys once).
#[derive(Clone)]
enum Key {
    Own(String),
    Shared(Rc<str>, u32, u32),
}

impl Key {
    fn as_str(&self) -> &str {
        match self {
            Key::Own(k) => k,
            Key::Shared(all, start, end) => &all[*start as usize..*end as usize],
        }
    }
}

/// A Kubernetes object delivered to a handler or returned by the cache.
///
/// In a handler it is lent for the duration of the call; `clone()` it to keep
/// it longer (the clone is an owned handle to the same object version).
pub struct Object {
    handle: Handle,
    key: OnceCell<Key>,
    /// What was fetched beyond the key; boxed, so an object whose handler
    /// reads only its key or name stays small and cheap to build.
    fetched: OnceCell<Box<Fetched>>,
}

/// The answers an [`Object`] fetched from the host, kept for the next ask.
#[derive(Clone, Default)]
struct Fetched {
    uid: OnceCell<String>,
    resource_version: OnceCell<String>,
    meta: OnceCell<types::ObjectMeta>,
    json: OnceCell<String>,
}

impl Object {
    fn new(handle: Handle, key: Option<Key>) -> Self {
        Object {
            handle,
            key: key.map(OnceCell::from).unwrap_or_default(),
            fetched: OnceCell::new(),
        }
    }

    /// An object the plugin owns, with its key when the caller knows it.
    #[doc(hidden)]
    pub fn from_owned(handle: types::Object, key: Option<String>) -> Self {
        Object::new(Handle::Owned(handle), key.map(Key::Own))
    }

    /// The objects of a list answer, each with its key.
    #[doc(hidden)]
    pub fn from_answer(answer: types::Answer) -> Vec<Object> {
        let list = Rc::new(answer.objects);
        let keys: Rc<str> = Rc::from(answer.keys);
        let mut objects = Vec::new();
        let mut start = 0;
        for (index, end) in keys.match_indices('\n').map(|(i, _)| i).enumerate() {
            let handle = Handle::InList {
                list: list.clone(),
                index: index as u32,
                handle: OnceCell::new(),
            };
            let key = Key::Shared(keys.clone(), start as u32, end as u32);
            objects.push(Object::new(handle, Some(key)));
            start = end + 1;
        }
        objects
    }

    /// An object lent by the host for one handler call.
    ///
    /// # Safety
    /// `handle` must be a borrowed handle valid until this value is dropped,
    /// which must happen before the handler call returns.
    #[doc(hidden)]
    pub unsafe fn lent(handle: u32, key: String) -> Self {
        // SAFETY: the caller guarantees the borrow outlives this value; the
        // ManuallyDrop keeps it from being dropped as if it were ours.
        let handle = ManuallyDrop::new(unsafe { types::Object::from_handle(handle) });
        Object::new(Handle::Lent(handle), Some(Key::Own(key)))
    }

    fn handle(&self) -> &types::Object {
        match &self.handle {
            Handle::Lent(h) => h,
            Handle::Owned(h) => h,
            Handle::InList { list, index, handle } => {
                handle.get_or_init(|| list.get(*index).expect("an answer keeps every object it listed"))
            }
        }
    }

    /// The cache key: `namespace/name`, or `name` when cluster-scoped.
    pub fn key(&self) -> &str {
        self.key.get_or_init(|| Key::Own(self.handle().key())).as_str()
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
        self.key().split_once('/').map(|(ns, _)| ns)
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        let key = self.key();
        key.split_once('/').map_or(key, |(_, name)| name)
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
            Handle::InList { list, index, .. } => Handle::InList {
                list: list.clone(),
                index: *index,
                handle: OnceCell::new(),
            },
            _ => Handle::Owned(self.handle().duplicate()),
        };
        Object {
            handle,
            key: self.key.clone(),
            fetched: self.fetched.clone(),
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
