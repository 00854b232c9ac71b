//! [`Store`]: client-go's thread-safe store with indexes (the Indexer).
//!
//! Owns the objects of one informer, keyed `namespace/name` (or `name`), and
//! the named indexes over them (`index name -> indexed value -> keys`). It
//! applies changes and answers queries; it never talks to the API server and
//! never notifies anyone (that is the informer's and the processor's job).

use super::object::{CachedObject, ObjRef};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, RwLock};

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

/// Maps keyed by object keys or index values: foldhash (randomly seeded per
/// map) instead of SipHash, as every query and event hashes a key.
pub type KeyMap<V> = HashMap<String, V, foldhash::fast::RandomState>;

type Index = KeyMap<BTreeSet<String>>;

#[derive(Default)]
struct Inner {
    items: KeyMap<ObjRef>,
    indexers: HashMap<String, IndexFunc>,
    indices: HashMap<String, Index>,
    definitions: HashMap<String, String>,
    index_errors: u64,
}

/// Thread-safe store of one informer's objects, with indexes.
pub struct Store {
    inner: RwLock<Inner>,
}

impl Default for Store {
    fn default() -> Self {
        Self::new()
    }
}

fn namespace_index(obj: &CachedObject) -> Result<Vec<String>, String> {
    Ok(obj.namespace().map(str::to_string).into_iter().collect())
}

impl Inner {
    fn index_values(&mut self, name: &str, obj: &CachedObject) -> Vec<String> {
        match (self.indexers[name])(obj) {
            Ok(values) => values,
            Err(err) => {
                self.index_errors += 1;
                tracing::warn!(index = name, key = %obj.key(), "index function failed: {err}");
                Vec::new()
            }
        }
    }

    fn update_indices(&mut self, key: &str, old: Option<&CachedObject>, new: Option<&CachedObject>) {
        let names: Vec<String> = self.indexers.keys().cloned().collect();
        for name in names {
            let old_values = old.map(|o| self.index_values(&name, o)).unwrap_or_default();
            let new_values = new.map(|n| self.index_values(&name, n)).unwrap_or_default();
            let index = self.indices.entry(name).or_default();
            for v in old_values.iter().filter(|v| !new_values.contains(v)) {
                if let Some(set) = index.get_mut(v) {
                    set.remove(key);
                    if set.is_empty() {
                        index.remove(v);
                    }
                }
            }
            for v in new_values {
                index.entry(v).or_default().insert(key.to_string());
            }
        }
    }
}

impl Store {
    /// An empty store with the built-in `namespace` index.
    pub fn new() -> Self {
        let store = Store {
            inner: RwLock::new(Inner::default()),
        };
        store
            .add_index(NAMESPACE_INDEX, Arc::new(namespace_index))
            .expect("a new store has no indexes");
        store
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Add a named index; existing objects are indexed at once.
    pub fn add_index(&self, name: &str, func: IndexFunc) -> Result<(), StoreError> {
        let mut inner = self.write();
        if inner.indexers.contains_key(name) {
            return Err(StoreError::IndexExists(name.to_string()));
        }
        inner.indexers.insert(name.to_string(), func);
        let objects: Vec<(String, ObjRef)> =
            inner.items.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        inner.indices.insert(name.to_string(), Index::default());
        for (key, obj) in objects {
            let values = inner.index_values(name, &obj);
            let index = inner.indices.get_mut(name).expect("just inserted");
            for v in values {
                index.entry(v).or_default().insert(key.clone());
            }
        }
        Ok(())
    }

    /// Add a declared index unless one of the same name and `definition`
    /// exists; the same name with another definition is an error.
    pub fn ensure_index(&self, name: &str, definition: &str, func: IndexFunc) -> Result<(), StoreError> {
        if let Some(existing) = self.read().definitions.get(name) {
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
                self.write()
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

    /// Whether an index of that name exists.
    pub fn has_index(&self, name: &str) -> bool {
        self.read().indexers.contains_key(name)
    }

    /// Insert or replace an object; returns the previous version.
    pub fn upsert(&self, obj: ObjRef) -> Option<ObjRef> {
        let key = obj.key();
        let mut inner = self.write();
        let old = inner.items.insert(key.clone(), obj.clone());
        inner.update_indices(&key, old.as_deref(), Some(&obj));
        old
    }

    /// Remove an object; returns what was cached.
    pub fn remove(&self, key: &str) -> Option<ObjRef> {
        let mut inner = self.write();
        let old = inner.items.remove(key)?;
        inner.update_indices(key, Some(&old), None);
        Some(old)
    }

    /// Replace the whole content atomically (a relist); returns the previous
    /// content. Readers see either the old or the new complete state.
    pub fn replace(&self, objects: Vec<ObjRef>) -> KeyMap<ObjRef> {
        let items: KeyMap<ObjRef> = objects.into_iter().map(|o| (o.key(), o)).collect();
        let mut inner = self.write();
        let old = std::mem::replace(&mut inner.items, items);
        let names: Vec<String> = inner.indexers.keys().cloned().collect();
        let all: Vec<(String, ObjRef)> = inner.items.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        for name in names {
            let mut index = Index::default();
            for (key, obj) in &all {
                for v in inner.index_values(&name, obj) {
                    index.entry(v).or_default().insert(key.clone());
                }
            }
            inner.indices.insert(name, index);
        }
        old
    }

    /// The object under `key`.
    pub fn get(&self, key: &str) -> Option<ObjRef> {
        self.read().items.get(key).cloned()
    }

    /// Every object, sorted by key.
    pub fn list(&self) -> Vec<ObjRef> {
        let inner = self.read();
        // Sort the stored keys (no key strings built per comparison).
        let mut all: Vec<(&String, &ObjRef)> = inner.items.iter().collect();
        all.sort_unstable_by(|a, b| a.0.cmp(b.0));
        all.into_iter().map(|(_, o)| o.clone()).collect()
    }

    /// Every key, sorted.
    pub fn list_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.read().items.keys().cloned().collect();
        keys.sort();
        keys
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.read().items.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Objects whose index `index` holds `value`, sorted by key.
    pub fn by_index(&self, index: &str, value: &str) -> Result<Vec<ObjRef>, StoreError> {
        let inner = self.read();
        let idx = inner
            .indices
            .get(index)
            .ok_or_else(|| StoreError::UnknownIndex(index.to_string()))?;
        Ok(idx
            .get(value)
            .map(|keys| keys.iter().filter_map(|k| inner.items.get(k).cloned()).collect())
            .unwrap_or_default())
    }

    /// Keys whose index `index` holds `value`, sorted.
    pub fn index_keys(&self, index: &str, value: &str) -> Result<Vec<String>, StoreError> {
        let inner = self.read();
        let idx = inner
            .indices
            .get(index)
            .ok_or_else(|| StoreError::UnknownIndex(index.to_string()))?;
        Ok(idx
            .get(value)
            .map(|keys| keys.iter().cloned().collect())
            .unwrap_or_default())
    }

    /// Every value index `index` currently holds, sorted.
    pub fn list_index_values(&self, index: &str) -> Result<Vec<String>, StoreError> {
        let inner = self.read();
        let idx = inner
            .indices
            .get(index)
            .ok_or_else(|| StoreError::UnknownIndex(index.to_string()))?;
        let mut values: Vec<String> = idx.keys().cloned().collect();
        values.sort();
        Ok(values)
    }

    /// How often an index function failed.
    pub fn index_errors(&self) -> u64 {
        self.read().index_errors
    }

    /// Heap bytes held by the cached objects (not the index sets).
    pub fn object_bytes(&self) -> usize {
        self.read().items.values().map(|o| o.heap_bytes()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::informer::object::tests::pod;

    fn label_index(label: &'static str) -> IndexFunc {
        Arc::new(move |o: &CachedObject| Ok(o.label(label).map(str::to_string).into_iter().collect()))
    }

    #[test]
    fn upsert_get_remove_and_namespace_index() {
        let s = Store::new();
        assert!(s.upsert(pod("a", "p1", 1, &[])).is_none());
        s.upsert(pod("b", "p2", 2, &[]));
        let old = s.upsert(pod("a", "p1", 3, &[])).unwrap();
        assert_eq!(old.resource_version(), "1");
        assert_eq!(s.get("a/p1").unwrap().resource_version(), "3");
        assert_eq!(s.index_keys(NAMESPACE_INDEX, "a").unwrap(), vec!["a/p1"]);
        assert_eq!(s.list_index_values(NAMESPACE_INDEX).unwrap(), vec!["a", "b"]);
        assert!(s.remove("a/p1").is_some());
        assert!(s.remove("a/p1").is_none());
        assert_eq!(s.list_index_values(NAMESPACE_INDEX).unwrap(), vec!["b"]);
        assert_eq!(s.list_keys(), vec!["b/p2"]);
    }

    #[test]
    fn index_moves_when_label_changes_and_empty_sets_go() {
        let s = Store::new();
        s.add_index("app", label_index("app")).unwrap();
        s.upsert(pod("d", "p1", 1, &[("app", "web")]));
        s.upsert(pod("d", "p2", 2, &[("app", "web")]));
        s.upsert(pod("d", "p1", 3, &[("app", "db")]));
        assert_eq!(s.index_keys("app", "web").unwrap(), vec!["d/p2"]);
        assert_eq!(s.index_keys("app", "db").unwrap(), vec!["d/p1"]);
        s.upsert(pod("d", "p2", 4, &[]));
        assert_eq!(s.list_index_values("app").unwrap(), vec!["db"]);
        assert_eq!(s.by_index("app", "db").unwrap()[0].name(), "p1");
    }

    #[test]
    fn adding_an_index_indexes_existing_objects_and_duplicates_fail() {
        let s = Store::new();
        s.upsert(pod("d", "p1", 1, &[("app", "web")]));
        s.add_index("app", label_index("app")).unwrap();
        assert_eq!(s.index_keys("app", "web").unwrap(), vec!["d/p1"]);
        assert_eq!(
            s.add_index("app", label_index("app")),
            Err(StoreError::IndexExists("app".into()))
        );
        assert_eq!(
            s.by_index("nope", "x").unwrap_err(),
            StoreError::UnknownIndex("nope".into())
        );
    }

    #[test]
    fn ensure_index_shares_same_definition_and_rejects_another() {
        let s = Store::new();
        s.ensure_index("app", "label:app", label_index("app")).unwrap();
        s.ensure_index("app", "label:app", label_index("app")).unwrap();
        assert!(matches!(
            s.ensure_index("app", "label:tier", label_index("tier")),
            Err(StoreError::IndexConflict { .. })
        ));
        assert!(matches!(
            s.ensure_index(NAMESPACE_INDEX, "label:x", label_index("x")),
            Err(StoreError::IndexConflict { .. })
        ));
    }

    #[test]
    fn failing_index_function_is_counted_not_fatal() {
        let s = Store::new();
        s.add_index("bad", Arc::new(|_: &CachedObject| Err("boom".to_string())))
            .unwrap();
        s.upsert(pod("d", "p1", 1, &[]));
        assert_eq!(s.len(), 1);
        assert!(s.index_errors() >= 1);
        assert!(s.list_index_values("bad").unwrap().is_empty());
    }

    #[test]
    fn replace_swaps_content_and_rebuilds_indexes() {
        let s = Store::new();
        s.add_index("app", label_index("app")).unwrap();
        s.upsert(pod("d", "gone", 1, &[("app", "web")]));
        let old = s.replace(vec![pod("d", "new", 2, &[("app", "db")])]);
        assert!(old.contains_key("d/gone"));
        assert_eq!(s.list_keys(), vec!["d/new"]);
        assert_eq!(s.list_index_values("app").unwrap(), vec!["db"]);
    }
}
