//! The store of one informer: client-go's thread-safe store with indexes
//! (the Indexer), split as kube-runtime splits it into a [`Writer`] and a
//! read-only [`Store`].
//!
//! Owns the objects of one informer, keyed `namespace/name` (or `name`), and
//! the named indexes over them (`index name -> indexed value -> keys`). Only
//! the informer holds the [`Writer`]; everything else (plugins' cache
//! queries, the cache view) holds a [`Store`] and can only read, so the type
//! says who may change the cache. It never talks to the API server and never
//! notifies anyone (that is the informer's and the processor's job).

use super::object::{CachedObject, ObjRef};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, RwLock};
use wink_selector::LabelSelector;

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

#[derive(Default)]
struct Inner {
    items: Items,
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

fn namespace_index(obj: &CachedObject) -> Result<Vec<String>, String> {
    Ok(obj.namespace().map(str::to_string).into_iter().collect())
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

    /// Sorted keys indexed under `value` in index `name`.
    fn keys(&self, name: &str, value: &str) -> Result<impl Iterator<Item = &Key>, StoreError> {
        Ok(self.index(name)?.get(value).into_iter().flatten())
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
            // The namespace is part of the key: an update cannot move it.
            if name == NAMESPACE_INDEX && old.is_some() && new.is_some() {
                continue;
            }
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
        let writer = Writer {
            shared: Shared::default(),
        };
        writer
            .add_index(NAMESPACE_INDEX, Arc::new(namespace_index))
            .expect("a new store has no indexes");
        writer
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
        if inner.indexers.contains_key(name) {
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
        inner.update_indices(&key, old.as_deref(), Some(&obj));
        old
    }

    /// Remove an object; returns what was cached.
    pub fn remove(&self, key: &str) -> Option<ObjRef> {
        let mut inner = write(&self.shared);
        let (key, old) = inner.items.remove_entry(key)?;
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
        read(&self.shared).indexers.contains_key(name)
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
            Some(ns) => {
                // Two passes: the key lookups first, then the label checks.
                // Each pass is a tight loop whose memory reads do not depend
                // on each other, so the processor overlaps their cache
                // misses (a namespace's objects lie all over the heap).
                let found: Vec<&ObjRef> = inner
                    .keys(NAMESPACE_INDEX, ns)
                    .expect("every store has the namespace index")
                    .filter_map(|k| inner.items.get(k))
                    .collect();
                found.into_iter().filter(|o| pick(o)).cloned().collect()
            }
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
            Some(ns) => inner
                .keys(NAMESPACE_INDEX, ns)
                .expect("every store has the namespace index")
                .filter_map(|k| inner.items.get(k))
                .find(|o| pick(o))
                .cloned(),
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
        let mut values: Vec<String> = read(&self.shared).index(index)?.keys().cloned().collect();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::tests::pod;

    fn label_index(label: &'static str) -> IndexFunc {
        Arc::new(move |o: &CachedObject| Ok(o.label(label).map(str::to_string).into_iter().collect()))
    }

    #[test]
    fn first_is_the_first_of_what_list_answers() {
        let w = Writer::new();
        let s = w.reader();
        for (ns, name, app) in [
            ("b", "p3", "web"),
            ("a", "p9", "web"),
            ("a", "p2", "db"),
            ("a", "p5", "web"),
        ] {
            w.upsert(pod(ns, name, 1, &[("app", app)]));
        }
        let web = LabelSelector::parse("app=web").unwrap();
        let none = LabelSelector::parse("app=cache").unwrap();
        for ns in [Some("a"), Some("b"), Some("c"), None] {
            for selector in [None, Some(&web), Some(&none)] {
                let listed = s.list(ns, selector).first().map(|o| o.key().to_string());
                let first = s.first(ns, selector).map(|o| o.key().to_string());
                assert_eq!(first, listed, "namespace {ns:?}, selector {selector:?}");
            }
        }
        assert_eq!(s.first(Some("a"), Some(&web)).unwrap().key(), "a/p5");
        assert_eq!(s.first(None, None).unwrap().key(), "a/p2");
        assert!(s.first(Some("a"), Some(&none)).is_none());
    }

    #[test]
    fn upsert_get_remove_and_namespace_index() {
        let w = Writer::new();
        let s = w.reader();
        assert!(w.upsert(pod("a", "p1", 1, &[])).is_none());
        w.upsert(pod("b", "p2", 2, &[]));
        let old = w.upsert(pod("a", "p1", 3, &[])).unwrap();
        assert_eq!(old.resource_version(), "1");
        assert_eq!(s.get("a/p1").unwrap().resource_version(), "3");
        assert_eq!(s.index_keys(NAMESPACE_INDEX, "a").unwrap(), vec!["a/p1"]);
        assert_eq!(s.list_index_values(NAMESPACE_INDEX).unwrap(), vec!["a", "b"]);
        assert!(w.remove("a/p1").is_some());
        assert!(w.remove("a/p1").is_none());
        assert_eq!(s.list_index_values(NAMESPACE_INDEX).unwrap(), vec!["b"]);
        assert_eq!(s.list_keys(), vec!["b/p2"]);
    }

    #[test]
    fn index_moves_when_label_changes_and_empty_sets_go() {
        let w = Writer::new();
        let s = w.reader();
        w.add_index("app", label_index("app")).unwrap();
        w.upsert(pod("d", "p1", 1, &[("app", "web")]));
        w.upsert(pod("d", "p2", 2, &[("app", "web")]));
        w.upsert(pod("d", "p1", 3, &[("app", "db")]));
        assert_eq!(s.index_keys("app", "web").unwrap(), vec!["d/p2"]);
        assert_eq!(s.index_keys("app", "db").unwrap(), vec!["d/p1"]);
        w.upsert(pod("d", "p2", 4, &[]));
        assert_eq!(s.list_index_values("app").unwrap(), vec!["db"]);
        assert_eq!(s.by_index("app", "db").unwrap()[0].name(), "p1");
    }

    #[test]
    fn adding_an_index_indexes_existing_objects_and_duplicates_fail() {
        let w = Writer::new();
        let s = w.reader();
        w.upsert(pod("d", "p1", 1, &[("app", "web")]));
        w.add_index("app", label_index("app")).unwrap();
        assert_eq!(s.index_keys("app", "web").unwrap(), vec!["d/p1"]);
        assert_eq!(
            w.add_index("app", label_index("app")),
            Err(StoreError::IndexExists("app".into()))
        );
        assert_eq!(
            s.by_index("nope", "x").unwrap_err(),
            StoreError::UnknownIndex("nope".into())
        );
    }

    #[test]
    fn ensure_index_shares_same_definition_and_rejects_another() {
        let w = Writer::new();
        w.ensure_index("app", "label:app", label_index("app")).unwrap();
        w.ensure_index("app", "label:app", label_index("app")).unwrap();
        assert!(matches!(
            w.ensure_index("app", "label:tier", label_index("tier")),
            Err(StoreError::IndexConflict { .. })
        ));
        assert!(matches!(
            w.ensure_index(NAMESPACE_INDEX, "label:x", label_index("x")),
            Err(StoreError::IndexConflict { .. })
        ));
    }

    #[test]
    fn failing_index_function_is_counted_not_fatal() {
        let w = Writer::new();
        let s = w.reader();
        w.add_index("bad", Arc::new(|_: &CachedObject| Err("boom".to_string())))
            .unwrap();
        w.upsert(pod("d", "p1", 1, &[]));
        assert_eq!(s.len(), 1);
        assert!(s.index_errors() >= 1);
        assert!(s.list_index_values("bad").unwrap().is_empty());
    }

    #[test]
    fn replace_swaps_content_and_rebuilds_indexes() {
        let w = Writer::new();
        let s = w.reader();
        w.add_index("app", label_index("app")).unwrap();
        w.upsert(pod("d", "gone", 1, &[("app", "web")]));
        let old = w.replace(vec![pod("d", "new", 2, &[("app", "db")])]);
        assert!(old.contains_key("d/gone"));
        assert_eq!(s.list_keys(), vec!["d/new"]);
        assert_eq!(s.list_index_values("app").unwrap(), vec!["db"]);
    }
}
