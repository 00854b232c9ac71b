//! Object storage of the simulated API server: one global, strictly
//! increasing resourceVersion, per-resource tables of current objects, a
//! bounded per-resource event history, and consistent (MVCC) list snapshots
//! reconstructed from that history.
//!
//! Owns: [`Store`], [`State`], [`Obj`], [`Event`], commits, list pages,
//! history reads and compaction. Must not touch: HTTP, request semantics
//! (validation, defaulting, finalizers live in `write`), watch streams.

use super::fields::Fields;
use super::resources::{Registry, ResourceDef};
use super::status::ApiError;
use bytes::Bytes;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::watch;
use wink_selector::LabelSelector;

/// One stored version of an object: the value and its JSON, serialized once.
#[derive(Debug)]
pub struct Obj {
    pub value: Value,
    pub json: Bytes,
    pub rv: u64,
}

impl Obj {
    /// Stamp `rv` into `metadata.resourceVersion` and serialize.
    pub fn new(mut value: Value, rv: u64) -> Arc<Obj> {
        value["metadata"]["resourceVersion"] = Value::String(rv.to_string());
        let json = Bytes::from(serde_json::to_vec(&value).expect("json value serializes"));
        Arc::new(Obj { value, json, rv })
    }

    pub fn name(&self) -> &str {
        self.value
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvType {
    Added,
    Modified,
    Deleted,
}

impl EvType {
    pub fn as_str(self) -> &'static str {
        match self {
            EvType::Added => "ADDED",
            EvType::Modified => "MODIFIED",
            EvType::Deleted => "DELETED",
        }
    }
}

/// One committed write. For `Deleted`, `obj` is the last state stamped with
/// the deletion's resourceVersion; `prev` is the state before the write.
#[derive(Debug)]
pub struct Event {
    pub rv: u64,
    pub ty: EvType,
    pub key: Arc<str>,
    pub obj: Arc<Obj>,
    pub prev: Option<Arc<Obj>>,
}

/// The objects and event history of one resource type.
#[derive(Debug)]
pub struct Table {
    pub def: Arc<ResourceDef>,
    pub objects: BTreeMap<Arc<str>, Arc<Obj>>,
    pub history: VecDeque<Arc<Event>>,
    /// Oldest resourceVersion a new watch or continue token may start from.
    pub compacted_rv: u64,
    /// Events newer than this are all in `history` (live watches need only that).
    pub lost_rv: u64,
    pub notify: watch::Sender<u64>,
}

impl Table {
    fn new(def: Arc<ResourceDef>, rv: u64) -> Self {
        Table {
            def,
            objects: BTreeMap::new(),
            history: VecDeque::new(),
            compacted_rv: rv,
            lost_rv: rv,
            notify: watch::channel(rv).0,
        }
    }

    /// Index of the first event newer than `rv`.
    fn first_after(&self, rv: u64) -> usize {
        self.history.partition_point(|e| e.rv <= rv)
    }
}

/// The storage key of an object: `ns/name` or `name`.
pub fn key(ns: Option<&str>, name: &str) -> Arc<str> {
    match ns {
        Some(ns) => format!("{ns}/{name}").into(),
        None => name.into(),
    }
}

/// One page of a list.
#[derive(Debug)]
pub struct Page {
    pub items: Vec<Arc<Obj>>,
    /// The snapshot's resourceVersion.
    pub rv: u64,
    /// Key of the last item when more items follow.
    pub more_after: Option<Arc<str>>,
}

/// A list request against one table.
#[derive(Debug, Default)]
pub struct ListQuery<'a> {
    pub ns: Option<&'a str>,
    pub labels: Option<&'a LabelSelector>,
    pub fields: Option<&'a Fields>,
    /// Snapshot resourceVersion; None = current.
    pub snapshot: Option<u64>,
    pub start_after: Option<&'a str>,
    pub limit: Option<usize>,
}

/// Everything behind the store lock.
#[derive(Debug)]
pub struct State {
    pub rv: u64,
    pub registry: Registry,
    pub tables: HashMap<String, Table>,
    pub history_cap: usize,
    /// How the write being served asked to be made (reset after it).
    pub mode: WriteMode,
    /// The control plane runs (`control`): deletes honour propagationPolicy
    /// and namespaces go Terminating instead of going at once.
    pub control_plane: bool,
    /// The resourceVersion of the last commit to any table (what the
    /// controllers wait on).
    pub changes: watch::Sender<u64>,
}

/// How a write request asked to be made: `dryRun=All` validates as for a
/// real write and persists nothing (no event, no new resourceVersion); a
/// `fieldManager` is recorded in `metadata.managedFields`.
#[derive(Debug, Clone, Default)]
pub struct WriteMode {
    pub dry_run: bool,
    /// The manager and its operation (`Update` or `Apply`).
    pub field_manager: Option<(String, &'static str)>,
    /// The request named its manager (`fieldManager`), rather than the
    /// User-Agent naming it (what admission's options carry).
    pub manager_named: bool,
    /// The apiVersion the write came through, which its managedFields
    /// entry names (None: the object's own).
    pub api_version: Option<String>,
}

/// The store locked for one write in a [`WriteMode`], reset when dropped.
pub struct WriteGuard<'a>(MutexGuard<'a, State>);

impl std::ops::Deref for WriteGuard<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        &self.0
    }
}

impl std::ops::DerefMut for WriteGuard<'_> {
    fn deref_mut(&mut self) -> &mut State {
        &mut self.0
    }
}

impl Drop for WriteGuard<'_> {
    fn drop(&mut self) {
        self.0.mode = WriteMode::default();
    }
}

impl State {
    /// The names of the tables that hold namespaced objects (what a
    /// namespace's deletion empties).
    pub fn namespaced_tables(&self) -> Vec<String> {
        self.tables
            .iter()
            .filter(|(_, t)| t.def.namespaced)
            .map(|(q, _)| q.clone())
            .collect()
    }

    /// Built-in tables, empty, starting after `rv`.
    pub fn new(history_cap: usize, rv: u64) -> Self {
        let registry = Registry::with_builtins();
        let tables = registry
            .all()
            .filter(|d| d.storage() == d.qualified())
            .map(|d| (d.qualified(), Table::new(d.clone(), rv)))
            .collect();
        State {
            rv,
            registry,
            tables,
            history_cap: history_cap.max(1),
            mode: WriteMode::default(),
            control_plane: false,
            changes: watch::channel(rv).0,
        }
    }

    pub fn table(&self, qualified: &str) -> Option<&Table> {
        self.tables.get(qualified)
    }

    pub fn add_table(&mut self, def: ResourceDef) -> Arc<ResourceDef> {
        let def = self.registry.insert(def);
        let rv = self.rv;
        self.tables
            .entry(def.qualified())
            .and_modify(|t| t.def = def.clone())
            .or_insert_with(|| Table::new(def.clone(), rv));
        def
    }

    /// Unregister a type; its watchers see their stream end.
    pub fn remove_table(&mut self, qualified: &str) {
        self.registry.remove(qualified);
        self.tables.remove(qualified);
    }

    pub fn namespace_exists(&self, ns: &str) -> bool {
        self.tables
            .get("namespaces")
            .is_some_and(|t| t.objects.contains_key(ns))
    }

    /// Commit one write at the next resourceVersion and record its event.
    /// `value` is the new state (for `Deleted`: the last state).
    pub fn commit(&mut self, qualified: &str, key: Arc<str>, ty: EvType, mut value: Value) -> Arc<Obj> {
        if let (Some((manager, operation)), false) = (&self.mode.field_manager, ty == EvType::Deleted) {
            let table = self.tables.get(qualified);
            let writer = super::managed::Writer {
                manager,
                operation,
                api_version: self.mode.api_version.as_deref(),
                has_status: table.is_some_and(|t| t.def.has_status),
            };
            let old = table.and_then(|t| t.objects.get(&key)).map(|o| &o.value);
            super::managed::record(&mut value, old, &writer);
        }
        if self.mode.dry_run {
            // What the write would have stored, at the version it has now
            // (none for a create); nothing changes.
            let current = self
                .tables
                .get(qualified)
                .and_then(|t| t.objects.get(&key))
                .map(|o| o.rv);
            let Some(rv) = current else {
                if let Some(m) = value["metadata"].as_object_mut() {
                    m.remove("resourceVersion");
                }
                let json = Bytes::from(serde_json::to_vec(&value).expect("json value serializes"));
                return Arc::new(Obj { value, json, rv: 0 });
            };
            return Obj::new(value, rv);
        }
        self.rv += 1;
        let rv = self.rv;
        let obj = Obj::new(value, rv);
        let table = self.tables.get_mut(qualified).expect("table of a known resource");
        let prev = match ty {
            EvType::Deleted => table.objects.remove(&key),
            _ => table.objects.insert(key.clone(), obj.clone()),
        };
        table.history.push_back(Arc::new(Event {
            rv,
            ty,
            key,
            obj: obj.clone(),
            prev,
        }));
        while table.history.len() > self.history_cap {
            let old = table.history.pop_front().expect("non-empty history");
            table.compacted_rv = table.compacted_rv.max(old.rv);
            table.lost_rv = table.lost_rv.max(old.rv);
        }
        table.notify.send_replace(rv);
        self.changes.send_replace(rv);
        obj
    }

    /// Drop every table's history: every resourceVersion handed out so far
    /// becomes too old to resume from (the global resourceVersion moves on
    /// by one so fresh lists give a resumable one).
    pub fn compact(&mut self) {
        self.rv += 1;
        for t in self.tables.values_mut() {
            // A live watch past this table's last event loses nothing.
            if let Some(last) = t.history.back() {
                t.lost_rv = t.lost_rv.max(last.rv);
            }
            t.history.clear();
            t.compacted_rv = self.rv;
        }
    }

    /// Events of a table newer than `after`, at most `max`. `live` watches
    /// only need nothing lost; new watches must start inside the window.
    pub fn events_after(
        &self,
        qualified: &str,
        after: u64,
        max: usize,
        live: bool,
    ) -> Result<Vec<Arc<Event>>, ApiError> {
        let Some(t) = self.tables.get(qualified) else {
            return Ok(Vec::new());
        };
        let floor = if live { t.lost_rv } else { t.compacted_rv };
        if after < floor {
            return Err(ApiError::too_old(after, floor));
        }
        let start = t.first_after(after);
        Ok(t.history.range(start..).take(max).cloned().collect())
    }

    /// One page of a consistent list: the table as of `q.snapshot`,
    /// reconstructed by undoing the newer events of the history.
    pub fn list(&self, qualified: &str, q: &ListQuery) -> Result<Page, ApiError> {
        let t = self.tables.get(qualified).ok_or_else(ApiError::no_route)?;
        let snapshot = q.snapshot.unwrap_or(self.rv);
        if snapshot < t.compacted_rv {
            return Err(ApiError::continue_expired());
        }
        // Each key's state at the snapshot when a newer event touched it.
        let mut overlay: BTreeMap<Arc<str>, Option<Arc<Obj>>> = BTreeMap::new();
        for e in t.history.range(t.first_after(snapshot)..) {
            overlay.entry(e.key.clone()).or_insert_with(|| e.prev.clone());
        }
        let prefix = q.ns.map(|ns| format!("{ns}/"));
        let lower: Bound<&str> = match (q.start_after, &prefix) {
            (Some(s), _) => Bound::Excluded(s),
            (None, Some(p)) => Bound::Included(p.as_str()),
            (None, None) => Bound::Unbounded,
        };
        let range = (lower, Bound::Unbounded);
        let mut cur = t.objects.range::<str, _>(range).peekable();
        let mut ov = overlay.range::<str, _>(range).peekable();
        let limit = q.limit.filter(|l| *l > 0).unwrap_or(usize::MAX);
        let mut items = Vec::new();
        let mut last_key: Option<Arc<str>> = None;
        let mut more = false;
        loop {
            let next = match (cur.peek(), ov.peek()) {
                (None, None) => break,
                (Some((ck, _)), Some((ok, _))) if ck < ok => cur.next().map(|(k, v)| (k, Some(v))),
                (Some(_), None) => cur.next().map(|(k, v)| (k, Some(v))),
                (Some((ck, _)), Some((ok, _))) if ck == ok => {
                    cur.next();
                    ov.next().map(|(k, v)| (k, v.as_ref()))
                }
                _ => ov.next().map(|(k, v)| (k, v.as_ref())),
            };
            let Some((k, v)) = next else { break };
            if let Some(p) = &prefix
                && !k.starts_with(p.as_str())
            {
                break;
            }
            let Some(obj) = v else { continue };
            if q.labels.is_some_and(|s| !s.matches(&obj.value))
                || q.fields.is_some_and(|s| !s.matches(&obj.value))
            {
                continue;
            }
            if items.len() == limit {
                more = true;
                break;
            }
            items.push(obj.clone());
            last_key = Some(k.clone());
        }
        Ok(Page {
            items,
            rv: snapshot,
            more_after: if more { last_key } else { None },
        })
    }
}

/// The store: state behind one lock.
#[derive(Debug)]
pub struct Store {
    state: Mutex<State>,
}

impl Store {
    pub fn new(state: State) -> Self {
        Store {
            state: Mutex::new(state),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Lock for one write made in `mode`.
    pub fn lock_for_write(&self, mode: WriteMode) -> WriteGuard<'_> {
        let mut guard = self.lock();
        guard.mode = mode;
        WriteGuard(guard)
    }

    pub fn current_rv(&self) -> u64 {
        self.lock().rv
    }
}

/// The JSON of a bookmark event's object.
pub fn bookmark_object(api_version: &str, kind: &str, rv: u64, initial_end: bool) -> Value {
    let mut meta = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    json!({"kind": kind, "apiVersion": api_version, "metadata": meta})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(st: &mut State, name: &str, ty: EvType) {
        let v =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "d"}});
        st.commit("configmaps", key(Some("d"), name), ty, v);
    }

    fn names(p: &Page) -> Vec<&str> {
        p.items.iter().map(|o| o.name()).collect()
    }

    #[test]
    fn list_snapshots_undo_newer_events() {
        let mut st = State::new(100, 0);
        for n in ["a", "b", "c"] {
            put(&mut st, n, EvType::Added);
        }
        let snap = st.rv;
        put(&mut st, "b", EvType::Deleted);
        put(&mut st, "bb", EvType::Added);
        put(&mut st, "a", EvType::Modified);
        let q = |start: Option<&'static str>| ListQuery {
            ns: Some("d"),
            snapshot: Some(snap),
            limit: Some(2),
            start_after: start,
            ..Default::default()
        };
        let p1 = st.list("configmaps", &q(None)).unwrap();
        assert_eq!(names(&p1), ["a", "b"]);
        assert_eq!(p1.items[0].rv, 1, "a as of the snapshot");
        assert_eq!(p1.more_after.as_deref(), Some("d/b"));
        let p2 = st.list("configmaps", &q(Some("d/b"))).unwrap();
        assert_eq!(names(&p2), ["c"]);
        assert!(p2.more_after.is_none());
        let now = st.list("configmaps", &ListQuery::default()).unwrap();
        assert_eq!(names(&now), ["a", "bb", "c"]);
        assert!(
            st.list(
                "secrets",
                &ListQuery {
                    ns: Some("d"),
                    ..Default::default()
                }
            )
            .unwrap()
            .items
            .is_empty()
        );
    }

    #[test]
    fn history_window_and_compaction() {
        let mut st = State::new(2, 0);
        for n in ["a", "b", "c"] {
            put(&mut st, n, EvType::Added);
        }
        assert_eq!(st.events_after("configmaps", 0, 10, false).unwrap_err().code, 410);
        assert_eq!(st.events_after("configmaps", 1, 10, false).unwrap().len(), 2);
        assert_eq!(st.events_after("configmaps", 2, 1, true).unwrap()[0].rv, 3);
        st.compact();
        assert_eq!(st.rv, 4);
        assert_eq!(
            st.events_after("configmaps", 3, 10, false).unwrap_err().message,
            "too old resource version: 3 (4)"
        );
        assert!(
            st.events_after("configmaps", 3, 10, true).unwrap().is_empty(),
            "live watchers lost nothing"
        );
        assert!(
            st.events_after("configmaps", 1, 10, true).is_err(),
            "a live watcher behind dropped events lost them"
        );
        assert!(
            st.events_after("secrets", 0, 10, true).unwrap().is_empty(),
            "a live watcher of a quiet resource lost nothing"
        );
        assert!(st.events_after("configmaps", 4, 10, false).is_ok());
        let e = st
            .list(
                "configmaps",
                &ListQuery {
                    snapshot: Some(3),
                    ..Default::default()
                },
            )
            .unwrap_err();
        assert_eq!((e.code, e.reason), (410, "Expired"));
    }
}
