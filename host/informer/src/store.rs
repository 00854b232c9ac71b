//! The store of one informer: client-go's thread-safe store with indexes
//! (the Indexer), split as kube-runtime splits it into a [`Writer`] and a
//! read-only [`Store`].
//!
//! Owns the objects of one informer, keyed `namespace/name` (or `name`), and
//! the named indexes over them (`index name -> indexed value -> keys`; the
//! built-in `namespace` index holds each namespace's objects in key order,
//! so a namespace is queried without a lookup per object). Only
//! the informer holds the [`Writer`]; everything else (plugins' cache
//! queries, the cache view) holds a [`Store`] and can only read, so the type
//! says who may change the cache. It never talks to the API server and never
//! notifies anyone (that is the informer's and the processor's job).

use super::object::{CachedObject, ObjRef};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, RwLock};
use wink_selector::{LabelSelector, LabelSummary};

/// A multi-value index function: the values an object is indexed under.
/// An error leaves the object out of that index and is reported, never fatal.
pub type IndexFunc = Arc<dyn Fn(&CachedObject) -> Result<Vec<String>, String> + Send + Sync>;

/// The built-in index every store has: objects by namespace.
pub const NAMESPACE_INDEX: &str = "namespace";

/// Errors a store query or index registration can give.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StoreError {
    #[error("no index named {0:?}")]
    UnknownIndex(String),
    #[error("index {0:?} already exists")]
    IndexExists(String),
    #[error("index {name:?} already exists as {existing}, not {requested}")]
    IndexConflict {
        name: String,
        existing: String,
        requested: String,
    },
}

/// An object's key (`namespace/name`, or `name`), held once per object:
/// the items map and every index set share it.
pub type Key = Arc<str>;

/// Maps keyed by object keys or index values: foldhash (randomly seeded per
/// map) instead of SipHash, as every query and event hashes a key.
pub type KeyMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// The objects by key.
pub type Items = KeyMap<Key, ObjRef>;

/// One index: indexed value -> keys of the objects indexed under it.
type Index = KeyMap<String, BTreeSet<Key>>;

/// The built-in namespace index: namespace -> its objects in key order.
/// It holds the objects themselves, not only their keys, so a query of one
/// namespace walks them without a lookup in `items` per object, and beside
/// each the summary of its labels, so a walk for `key=value` passes over
/// most objects without reading their labels.
type Namespaces = KeyMap<String, BTreeMap<Key, InNamespace>>;

/// One object in the namespace index.
#[derive(Clone)]
struct InNamespace {
    obj: ObjRef,
    labels: LabelSummary,
}

impl InNamespace {
    fn new(obj: &ObjRef) -> Self {
        InNamespace {
            obj: obj.clone(),
            labels: LabelSummary::of(obj.labels()),
        }
    }
}

#[derive(Default)]
struct Inner {
    items: Items,
    namespaces: Namespaces,
    indexers: HashMap<String, IndexFunc>,
    indices: HashMap<String, Index>,
    definitions: HashMap<String, String>,
    index_errors: u64,
    /// A key being built (no allocation per event for known keys).
    scratch: String,
}

type Shared = Arc<RwLock<Inner>>;

fn read(shared: &Shared) -> std::sync::RwLockReadGuard<'_, Inner> {
    shared.read().unwrap_or_else(|e| e.into_inner())
}

fn write(shared: &Shared) -> std::sync::RwLockWriteGuard<'_, Inner> {
    shared.write().unwrap_or_else(|e| e.into_inner())
}

/// Whether `obj` is in `namespace` (any, when none) and its labels satisfy
/// `selector` (any, when none): the filter of every list.
pub fn selected(obj: &CachedObject, namespace: Option<&str>, selector: Option<&LabelSelector>) -> bool {
    namespace.is_none_or(|ns| obj.namespace() == Some(ns)) && selector.is_none_or(|s| s.matches(obj))
}

/// The values `func` indexes `obj` under; a failure is counted and leaves
/// the object out of that index.
fn index_values(func: &IndexFunc, name: &str, obj: &CachedObject, errors: &mut u64) -> Vec<String> {
    match func(obj) {
        Ok(values) => values,
        Err(err) => {
            *errors += 1;
            tracing::warn!(index = name, key = %obj.key(), "index function failed: {err}");
            Vec::new()
        }
    }
}

impl Inner {
    /// The index `name`, or the error every query gives for an unknown one.
    fn index(&self, name: &str) -> Result<&Index, StoreError> {
        self.indices
            .get(name)
            .ok_or_else(|| StoreError::UnknownIndex(name.to_string()))
    }

    /// Whether index `name` exists (the namespace index always does).
    fn has_index(&self, name: &str) -> bool {
        name == NAMESPACE_INDEX || self.indexers.contains_key(name)
    }

    /// Sorted keys indexed under `value` in index `name`.
    fn keys(&self, name: &str, value: &str) -> Result<Keys<'_>, StoreError> {
        if name == NAMESPACE_INDEX {
            return Ok(Keys::Namespace(self.namespaces.get(value).map(BTreeMap::keys)));
        }
        Ok(Keys::Set(self.index(name)?.get(value).map(BTreeSet::iter)))
    }

    /// The objects of `namespace` that `selector` may select (all when
    /// none), in key order: those whose label summary rules them out are
    /// passed over; the rest still need [`selected`].
    fn in_namespace<'a>(
        &'a self,
        namespace: &str,
        selector: Option<&LabelSelector>,
    ) -> impl Iterator<Item = &'a ObjRef> + use<'a> {
        let needed = selector.map_or(0, LabelSelector::summary_bits);
        self.namespaces
            .get(namespace)
            .into_iter()
            .flat_map(BTreeMap::values)
            .filter(move |e| e.labels.may_match(needed))
            .map(|e| &e.obj)
    }

    /// Keep the namespace index in step with `key` going from `old` to
    /// `new` (its namespace is part of the key, so it never moves).
    fn update_namespaces(&mut self, key: &Key, old: Option<&CachedObject>, new: Option<&ObjRef>) {
        let Some(ns) = new
            .map(|n| n.namespace())
            .unwrap_or_else(|| old.and_then(|o| o.namespace()))
        else {
            return;
        };
        match new {
            Some(new) => match self.namespaces.get_mut(ns) {
                Some(objects) => {
                    objects.insert(key.clone(), InNamespace::new(new));
                }
                None => {
                    self.namespaces.insert(
                        ns.to_string(),
                        BTreeMap::from([(key.clone(), InNamespace::new(new))]),
                    );
                }
            },
            None => {
                if let Some(objects) = self.namespaces.get_mut(ns) {
                    objects.remove(key);
                    if objects.is_empty() {
                        self.namespaces.remove(ns);
                    }
                }
            }
        }
    }

    /// Build the namespace index from `items`, each namespace's map from
    /// all its objects at once (sorted, then packed into full nodes).
    fn rebuild_namespaces(&mut self) {
        let mut groups: KeyMap<&str, Vec<(Key, InNamespace)>> = KeyMap::default();
        for (key, obj) in &self.items {
            if let Some(ns) = obj.namespace() {
                groups
                    .entry(ns)
                    .or_default()
                    .push((key.clone(), InNamespace::new(obj)));
            }
        }
        let namespaces: Namespaces = groups
            .into_iter()
            .map(|(ns, mut objects)| {
                objects.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                (ns.to_string(), objects.into_iter().collect())
            })
            .collect();
        self.namespaces = namespaces;
    }

    /// The stored key equal to `obj`'s key, or a new one.
    fn key_for(&mut self, obj: &CachedObject) -> Key {
        self.scratch.clear();
        super::object::push_key_of(&mut self.scratch, obj.namespace(), obj.name());
        match self.items.get_key_value(self.scratch.as_str()) {
            Some((key, _)) => key.clone(),
            None => Key::from(self.scratch.as_str()),
        }
    }

    /// Move `key` in every index from what `old` is indexed under to what
    /// `new` is. Values both have are left alone (an update that keeps its
    /// namespace and labels touches no set).
    fn update_indices(&mut self, key: &Key, old: Option<&CachedObject>, new: Option<&CachedObject>) {
        let errors = &mut self.index_errors;
        for (name, func) in &self.indexers {
            let old_values = old
                .map(|o| index_values(func, name, o, errors))
                .unwrap_or_default();
            let new_values = new
                .map(|n| index_values(func, name, n, errors))
                .unwrap_or_default();
            if old_values == new_values {
                continue;
            }
            let index = self.indices.entry(name.clone()).or_default();
            for v in old_values.iter().filter(|v| !new_values.contains(v)) {
                if let Some(set) = index.get_mut(v) {
                    set.remove(key);
                    if set.is_empty() {
                        index.remove(v);
                    }
                }
            }
            for v in new_values.into_iter().filter(|v| !old_values.contains(v)) {
                index.entry(v).or_default().insert(key.clone());
            }
        }
    }

    /// Build index `name` over every object from scratch.
    fn rebuild_index(&mut self, name: &str) {
        let func = &self.indexers[name];
        let mut groups: KeyMap<String, Vec<Key>> = KeyMap::default();
        for (key, obj) in &self.items {
            for v in index_values(func, name, obj, &mut self.index_errors) {
                groups.entry(v).or_default().push(key.clone());
            }
        }
        // Each set is built from all its keys at once (sorted, then packed
        // into full nodes), not grown one insertion at a time.
        let index: Index = groups
            .into_iter()
            .map(|(v, keys)| (v, keys.into_iter().collect()))
            .collect();
        self.indices.insert(name.to_string(), index);
    }
}

/// The write side of one informer's store: held by the informer alone
/// (and by tests and benchmarks that fill a store by hand).
pub struct Writer {
    shared: Shared,
}

impl Default for Writer {
    fn default() -> Self {
        Self::new()
    }
}

impl Writer {
    /// An empty store with the built-in `namespace` index.
    pub fn new() -> Self {
        Writer {
            shared: Shared::default(),
        }
    }

    /// A read-only handle to this store.
    pub fn reader(&self) -> Store {
        Store {
            shared: self.shared.clone(),
        }
    }

    /// Add a named index; existing objects are indexed at once.
    pub fn add_index(&self, name: &str, func: IndexFunc) -> Result<(), StoreError> {
        let mut inner = write(&self.shared);
        if inner.has_index(name) {
            return Err(StoreError::IndexExists(name.to_string()));
        }
        inner.indexers.insert(name.to_string(), func);
        inner.rebuild_index(name);
        Ok(())
    }

    /// Add a declared index unless one of the same name and `definition`
    /// exists; the same name with another definition is an error.
    pub fn ensure_index(&self, name: &str, definition: &str, func: IndexFunc) -> Result<(), StoreError> {
        if let Some(existing) = read(&self.shared).definitions.get(name) {
            return if existing == definition {
                Ok(())
            } else {
                Err(StoreError::IndexConflict {
                    name: name.to_string(),
                    existing: existing.clone(),
                    requested: definition.to_string(),
                })
            };
        }
        match self.add_index(name, func) {
            Ok(()) => {
                write(&self.shared)
                    .definitions
                    .insert(name.to_string(), definition.to_string());
                Ok(())
            }
            Err(StoreError::IndexExists(_)) => Err(StoreError::IndexConflict {
                name: name.to_string(),
                existing: "a built-in index".to_string(),
                requested: definition.to_string(),
            }),
            Err(e) => Err(e),
        }
    }

    /// Insert or replace an object; returns the previous version.
    pub fn upsert(&self, obj: ObjRef) -> Option<ObjRef> {
        let mut inner = write(&self.shared);
        let key = inner.key_for(&obj);
        let old = inner.items.insert(key.clone(), obj.clone());
        inner.update_namespaces(&key, old.as_deref(), Some(&obj));
        inner.update_indices(&key, old.as_deref(), Some(&obj));
        old
    }

    /// Remove an object; returns what was cached.
    pub fn remove(&self, key: &str) -> Option<ObjRef> {
        let mut inner = write(&self.shared);
        let (key, old) = inner.items.remove_entry(key)?;
        inner.update_namespaces(&key, Some(&old), None);
        inner.update_indices(&key, Some(&old), None);
        Some(old)
    }

    /// Replace the whole content atomically (a relist); returns the previous
    /// content. Readers see either the old or the new complete state.
    pub fn replace(&self, objects: Vec<ObjRef>) -> Items {
        let mut inner = write(&self.shared);
        let mut items = Items::with_capacity_and_hasher(objects.len(), Default::default());
        for o in objects {
            // A relisted object keeps the key its cached version has.
            let key = inner.key_for(&o);
            items.insert(key, o);
        }
        let old = std::mem::replace(&mut inner.items, items);
        inner.rebuild_namespaces();
        let names: Vec<String> = inner.indexers.keys().cloned().collect();
        for name in names {
            inner.rebuild_index(&name);
        }
        old
    }
}

/// A read-only handle to one informer's store: cheap to clone, shared by
/// every reader (plugins' cache queries, the cache view).
#[derive(Clone)]
pub struct Store {
    shared: Shared,
}

impl Store {
    /// Whether an index of that name exists.
    pub fn has_index(&self, name: &str) -> bool {
        read(&self.shared).has_index(name)
    }

    /// The object under `key`.
    pub fn get(&self, key: &str) -> Option<ObjRef> {
        read(&self.shared).items.get(key).cloned()
    }

    /// The objects in `namespace` (every namespace when none) whose labels
    /// satisfy `selector` (all when none), sorted by key. A namespace is
    /// looked up in the namespace index, not scanned for.
    pub fn list(&self, namespace: Option<&str>, selector: Option<&LabelSelector>) -> Vec<ObjRef> {
        let inner = read(&self.shared);
        let pick = |o: &ObjRef| selected(o, None, selector);
        match namespace {
            Some(ns) => inner
                .in_namespace(ns, selector)
                .filter(|o| pick(o))
                .cloned()
                .collect(),
            None => {
                // Sort the stored keys (no key strings built per comparison).
                let mut all: Vec<(&Key, &ObjRef)> = inner.items.iter().filter(|(_, o)| pick(o)).collect();
                all.sort_unstable_by(|a, b| a.0.cmp(b.0));
                all.into_iter().map(|(_, o)| o.clone()).collect()
            }
        }
    }

    /// The first, in key order, of what [`Store::list`] would answer, found
    /// without collecting the rest: a namespace's keys are walked in order
    /// and the first match ends the walk; across namespaces every object is
    /// looked at once and the least matching key kept.
    pub fn first(&self, namespace: Option<&str>, selector: Option<&LabelSelector>) -> Option<ObjRef> {
        let inner = read(&self.shared);
        let pick = |o: &ObjRef| selected(o, None, selector);
        match namespace {
            Some(ns) => inner.in_namespace(ns, selector).find(|o| pick(o)).cloned(),
            None => inner
                .items
                .iter()
                .filter(|(_, o)| pick(o))
                .min_by(|a, b| a.0.cmp(b.0))
                .map(|(_, o)| o.clone()),
        }
    }

    /// Every key, sorted.
    pub fn list_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = read(&self.shared).items.keys().map(|k| k.to_string()).collect();
        keys.sort();
        keys
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        read(&self.shared).items.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Objects whose index `index` holds `value`, sorted by key.
    pub fn by_index(&self, index: &str, value: &str) -> Result<Vec<ObjRef>, StoreError> {
        let inner = read(&self.shared);
        Ok(inner
            .keys(index, value)?
            .filter_map(|k| inner.items.get(k).cloned())
            .collect())
    }

    /// Keys whose index `index` holds `value`, sorted.
    pub fn index_keys(&self, index: &str, value: &str) -> Result<Vec<String>, StoreError> {
        Ok(read(&self.shared)
            .keys(index, value)?
            .map(|k| k.to_string())
            .collect())
    }

    /// Every value index `index` currently holds, sorted.
    pub fn list_index_values(&self, index: &str) -> Result<Vec<String>, StoreError> {
        let inner = read(&self.shared);
        let mut values: Vec<String> = match index {
            NAMESPACE_INDEX => inner.namespaces.keys().cloned().collect(),
            _ => inner.index(index)?.keys().cloned().collect(),
        };
        values.sort();
        Ok(values)
    }

    /// How often an index function failed.
    pub fn index_errors(&self) -> u64 {
        read(&self.shared).index_errors
    }

    /// Heap bytes held by the cached objects (not the index sets).
    pub fn object_bytes(&self) -> usize {
        read(&self.shared).items.values().map(|o| o.heap_bytes()).sum()
    }
}

/// The sorted keys under one value of an index.
enum Keys<'a> {
    Set(Option<std::collections::btree_set::Iter<'a, Key>>),
    Namespace(Option<std::collections::btree_map::Keys<'a, Key, InNamespace>>),
}

impl<'a> Iterator for Keys<'a> {
    type Item = &'a Key;

    fn next(&mut self) -> Option<&'a Key> {
        match self {
            Keys::Set(keys) => keys.as_mut()?.next(),
            Keys::Namespace(keys) => keys.as_mut()?.next(),
        }
    }
}

#[cfg(test)]
mod tests;
