//! The simulated control plane (KWOK is the model): controllers that act
//! on the store as kube-controller-manager, the scheduler and kubelets act
//! through the API. Each controller writes through `write` (create, update,
//! `/status` update, delete), so every change is an ordinary commit that
//! watchers see, with its own resourceVersion.
//!
//! As the real controllers do (informers + work queues), the controllers
//! work per change: [`Controllers`] reads the store's events since it last
//! looked, keeps its indexes (`index`: objects by uid, dependents by owner,
//! Pods by node) from them, and queues the keys each controller has to
//! look at; a round works the queues, and the writes it makes are the next
//! round's events. With nothing queued nothing runs: the loop sleeps until
//! the next commit (`State::changes`). History it can no longer read (a
//! restart, a compaction, a CRD's table added or removed) makes it look at
//! everything once (a resync).
//!
//! Controllers: `nodes` (simulated Nodes), `deployment` (ReplicaSets of a
//! Deployment, rollouts, Deployment status), `replicaset` (Pods of a
//! ReplicaSet, its status), `scheduler` (binds Pods to Nodes), `kubelet`
//! (runs bound Pods), `gc` (ownerReferences: background, foreground and
//! orphan deletion), `namespace` (empties Terminating namespaces).
//!
//! Admission: the ReplicaSet controller's Pod creates go through the
//! admission webhooks, as kube-controller-manager's go through the API
//! (`admit`): queued in the round, admitted on a blocking thread with the
//! lock released, and their outcomes applied under the lock at the start
//! of a later pass; the loop also wakes when a refused ReplicaSet's backoff
//! ends. Every other controller write (ReplicaSets of a Deployment,
//! bindings, Pod status, deletions) is stored directly, without admission.
//!
//! Owns: the loop, the queues and what the controllers share. Must not
//! touch: HTTP, the store's internals (only `write`, reads of
//! `State::tables` and `State::events_after`), the webhooks' dispatching
//! (`admission`).

mod admit;
mod deployment;
mod gc;
mod index;
mod kubelet;
mod namespace;
mod nodes;
mod replicaset;
mod scheduler;

use super::Shared;
use super::resources::ResourceDef;
use super::store::{EvType, State};
use index::{Index, Place, controller_of, owner_uids};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

/// Rounds after one wake-up before yielding the lock to requests.
const MAX_ROUNDS: usize = 16;

/// Run the controllers until the simulator stops.
pub async fn run(shared: Arc<Shared>) {
    let mut controllers = Controllers::default();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<admit::Admitted>>();
    let mut landed = Vec::new();
    loop {
        let (more, mut changes, creates, wake) = {
            let mut st = shared.store.lock();
            while let Ok(mut a) = rx.try_recv() {
                landed.append(&mut a);
            }
            let now = Instant::now();
            controllers.admitted(&mut st, std::mem::take(&mut landed), now);
            let more = controllers.step_at(&mut st, now);
            shared
                .stats
                .control_worked(controllers.rounds, controllers.visits);
            // Subscribed under the lock: no commit after the step is missed.
            let (creates, wake) = (controllers.admit.take(), controllers.admit.next_wake());
            (more, st.changes.subscribe(), creates, wake)
        };
        if !creates.is_empty() {
            let (shared, tx) = (shared.clone(), tx.clone());
            tokio::task::spawn_blocking(move || {
                let _ = tx.send(admit::admit(&shared, creates));
            });
        }
        if more {
            tokio::task::yield_now().await;
            continue;
        }
        let backoff = async {
            match wake {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        // A restart replaces the state: its sender goes, and `changed` returns.
        tokio::select! {
            _ = changes.changed() => {}
            Some(mut a) = rx.recv() => landed.append(&mut a),
            () = backoff => {}
        }
    }
}

/// Keys each controller has to look at, each once (a work queue).
#[derive(Debug, Default)]
struct Queues {
    nodes: bool,
    deployments: BTreeSet<Arc<str>>,
    replicasets: BTreeSet<Arc<str>>,
    /// Pods to bind (scheduler) and to run (kubelet).
    schedule: BTreeSet<Arc<str>>,
    run: BTreeSet<Arc<str>>,
    /// Dependents whose owners may be gone (gc).
    orphans: BTreeSet<Place>,
    /// Owners deleted in the foreground or orphaning (gc).
    owners: BTreeSet<Place>,
    namespaces: BTreeSet<Arc<str>>,
}

impl Queues {
    fn is_empty(&self) -> bool {
        !self.nodes
            && self.deployments.is_empty()
            && self.replicasets.is_empty()
            && self.schedule.is_empty()
            && self.run.is_empty()
            && self.orphans.is_empty()
            && self.owners.is_empty()
            && self.namespaces.is_empty()
    }
}

/// The controllers' state between rounds: where they are in the store's
/// history, their indexes, their queues, and how much they have done.
#[derive(Debug, Default)]
pub struct Controllers {
    /// Events up to this resourceVersion are seen; None: look at everything.
    seen: Option<u64>,
    /// The tables seen: one that goes (a CRD deleted) takes its events with it.
    tables: BTreeSet<String>,
    index: Index,
    queues: Queues,
    /// Pod creates going through admission.
    admit: admit::Admissions,
    /// Rounds run (a round works every non-empty queue once).
    pub rounds: u64,
    /// Stored objects read (each a deep copy) by the controllers.
    pub visits: u64,
}

/// What a controller works with: the store, the indexes, the visit count.
pub struct Ctx<'a> {
    pub st: &'a mut State,
    pub ix: &'a mut Index,
    visits: &'a mut u64,
    admit: &'a mut admit::Admissions,
    /// Whether any admission webhook configuration exists.
    webhooks: bool,
    now: Instant,
}

impl Ctx<'_> {
    /// The stored object at `key` of `table`, read (a copy).
    fn get(&mut self, table: &str, key: &str) -> Option<Value> {
        let v = self.st.table(table)?.objects.get(key)?.value.clone();
        *self.visits += 1;
        Some(v)
    }

    /// The objects of `table` whose ownerReferences name `owner_uid`.
    fn dependents(&mut self, owner_uid: &str, table: &str) -> Vec<Value> {
        let places = self.ix.dependents(owner_uid);
        places
            .iter()
            .filter(|(t, _)| t == table)
            .filter_map(|(t, k)| self.get(t, k))
            .collect()
    }
}

impl Controllers {
    /// Look at what changed and work the queues, round after round, until
    /// nothing is left (true: work remains after [`MAX_ROUNDS`] rounds).
    #[cfg(test)]
    pub fn step(&mut self, st: &mut State) -> bool {
        self.step_at(st, Instant::now())
    }

    /// [`Controllers::step`] at `now` (when backoffs end).
    pub fn step_at(&mut self, st: &mut State, now: Instant) -> bool {
        self.queues.replicasets.extend(self.admit.due(now));
        for _ in 0..MAX_ROUNDS {
            self.observe(st);
            if self.queues.is_empty() {
                return false;
            }
            self.rounds += 1;
            self.work(st, now);
        }
        self.observe(st);
        !self.queues.is_empty()
    }

    /// Queue what the events since the last look ask for (everything, when
    /// they cannot all be read).
    fn observe(&mut self, st: &State) {
        let Some(after) = self.seen.filter(|s| *s <= st.rv) else {
            return self.resync(st);
        };
        if after == st.rv {
            return;
        }
        if st.tables.len() != self.tables.len() || !st.tables.keys().all(|q| self.tables.contains(q)) {
            return self.resync(st);
        }
        let mut events = Vec::new();
        for (q, _) in st.tables.iter() {
            match st.events_after(q, after, usize::MAX, true) {
                Ok(evs) => events.extend(evs.into_iter().map(|e| (q.clone(), e))),
                Err(_) => return self.resync(st),
            }
        }
        events.sort_by_key(|(_, e)| e.rv);
        for (q, e) in &events {
            let new = (e.ty != EvType::Deleted).then_some(&e.obj.value);
            let old = match e.ty {
                EvType::Deleted => e.prev.as_ref().map(|p| &p.value).or(Some(&e.obj.value)),
                _ => e.prev.as_ref().map(|p| &p.value),
            };
            self.dispatch(st, q, &e.key, old, new);
        }
        self.seen = Some(st.rv);
    }

    /// Rebuild the indexes and queue every object.
    fn resync(&mut self, st: &State) {
        self.index = Index::default();
        self.tables = st.tables.keys().cloned().collect();
        self.queues = Queues {
            nodes: true,
            ..Default::default()
        };
        for (q, t) in &st.tables {
            for (k, o) in &t.objects {
                self.visits += 1;
                self.dispatch(st, q, k, None, Some(&o.value));
            }
        }
        self.seen = Some(st.rv);
    }

    /// One change of the object at (`table`, `key`) into the indexes and
    /// the queues of the controllers that watch it.
    fn dispatch(
        &mut self,
        st: &State,
        table: &str,
        key: &Arc<str>,
        old: Option<&Value>,
        new: Option<&Value>,
    ) {
        self.index.apply(table, key, old, new);
        let (ix, qs) = (&self.index, &mut self.queues);
        let both = || old.into_iter().chain(new);
        let place = || (table.to_string(), key.clone());
        match table {
            "deployments.apps" => {
                qs.deployments.insert(key.clone());
            }
            "replicasets.apps" => {
                qs.replicasets.insert(key.clone());
                for v in both() {
                    if let Some(d) = controller_of(v, "Deployment") {
                        qs.deployments.insert(store_key(namespace(v), d));
                    }
                }
            }
            "pods" => {
                for v in both() {
                    if let Some(rs) = controller_of(v, "ReplicaSet") {
                        qs.replicasets.insert(store_key(namespace(v), rs));
                    }
                }
                if let Some(p) =
                    new.filter(|p| !deleting(p) && matches!(s(p, "/status/phase"), "" | "Pending"))
                {
                    match s(p, "/spec/nodeName") {
                        "" => qs.schedule.insert(key.clone()),
                        _ => qs.run.insert(key.clone()),
                    };
                }
            }
            "nodes" => {
                qs.nodes |= new.is_none();
                // A node that comes or changes may take the unbound Pods and run its own.
                qs.schedule.extend(ix.unbound());
                qs.run.extend(ix.pods_on(old.or(new).map(name).unwrap_or("")));
            }
            "namespaces" if new.is_some_and(deleting) => {
                qs.namespaces.insert(key.clone());
            }
            _ => {}
        }
        // The garbage collector: dependents, and owners deleted in the
        // foreground or orphaning.
        if let Some(n) = new {
            if !owner_uids(n).is_empty() {
                qs.orphans.insert(place());
            }
            if deleting(n) && (has_finalizer(n, "foregroundDeletion") || has_finalizer(n, "orphan")) {
                qs.owners.insert(place());
            }
        }
        if let (Some(o), None) = (old, new) {
            qs.orphans.extend(ix.dependents(uid(o)));
            qs.owners
                .extend(owner_uids(o).into_iter().filter_map(|u| ix.place_of(u).cloned()));
        }
        // The namespace controller: a change inside a Terminating namespace.
        if table != "namespaces"
            && let Some((ns, _)) = key.split_once('/')
            && st
                .table("namespaces")
                .and_then(|t| t.objects.get(ns))
                .is_some_and(|n| deleting(&n.value))
        {
            qs.namespaces.insert(ns.into());
        }
    }

    /// Store or refuse the Pods admission is done with (see `admit`).
    pub fn admitted(&mut self, st: &mut State, landed: Vec<admit::Admitted>, now: Instant) {
        for a in landed {
            // The indexes as of now: each Pod stored counts for the next.
            self.observe(st);
            self.queues.replicasets.insert(a.create.rs.clone());
            let mut cx = self.ctx(st, now);
            admit::apply(&mut cx, a, now);
        }
    }

    fn ctx<'a>(&'a mut self, st: &'a mut State, now: Instant) -> Ctx<'a> {
        let webhooks = super::admission::config::any(st);
        Ctx {
            st,
            ix: &mut self.index,
            visits: &mut self.visits,
            admit: &mut self.admit,
            webhooks,
            now,
        }
    }

    /// One round: every controller works its queue once.
    fn work(&mut self, st: &mut State, now: Instant) {
        let q = std::mem::take(&mut self.queues);
        let mut cx = self.ctx(st, now);
        if q.nodes {
            nodes::reconcile(&mut cx);
        }
        for k in &q.deployments {
            deployment::sync(&mut cx, k);
        }
        for k in &q.replicasets {
            replicaset::sync(&mut cx, k);
        }
        scheduler::schedule(&mut cx, &q.schedule);
        for k in &q.run {
            kubelet::run(&mut cx, k);
        }
        gc::collect(&mut cx, &q.orphans, &q.owners);
        for ns in &q.namespaces {
            namespace::sync(&mut cx, ns);
        }
    }
}

fn store_key(ns: Option<&str>, name: &str) -> Arc<str> {
    super::store::key(ns, name)
}

/// The current objects of a table (qualified plural), in key order.
#[cfg(test)]
fn objects(st: &State, qualified: &str) -> Vec<Value> {
    st.table(qualified)
        .map(|t| t.objects.values().map(|o| o.value.clone()).collect())
        .unwrap_or_default()
}

fn def(st: &State, qualified: &str) -> Arc<ResourceDef> {
    st.registry.get(qualified).cloned().expect("a built-in resource")
}

fn s<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

fn name(v: &Value) -> &str {
    s(v, "/metadata/name")
}

fn namespace(v: &Value) -> Option<&str> {
    v.pointer("/metadata/namespace").and_then(Value::as_str)
}

fn uid(v: &Value) -> &str {
    s(v, "/metadata/uid")
}

fn deleting(v: &Value) -> bool {
    v.pointer("/metadata/deletionTimestamp").is_some()
}

fn has_finalizer(v: &Value, f: &str) -> bool {
    v.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|x| x == f))
}

/// The uid of the object's controller (the ownerReference with `controller: true`).
fn controller_uid(v: &Value) -> Option<&str> {
    v.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r["controller"] == true)
        .and_then(|r| r["uid"].as_str())
}

/// An ownerReference to `owner` as its controller.
fn controller_ref(owner: &Value) -> Value {
    json!({"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": name(owner),
        "uid": uid(owner), "controller": true, "blockOwnerDeletion": true})
}

/// A replica count field (`spec.replicas` defaults to 1).
fn count(v: &Value, ptr: &str) -> i64 {
    v.pointer(ptr).and_then(Value::as_i64).unwrap_or(0)
}

fn replicas(v: &Value) -> i64 {
    v.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1)
}

/// Whether a Pod is Ready (its Ready condition is True).
fn pod_ready(p: &Value) -> bool {
    p.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

/// Write `status` through the `/status` subresource when it changed.
fn set_status(st: &mut State, qualified: &str, obj: &Value, status: Value) {
    if obj.get("status") == Some(&status) {
        return;
    }
    let mut new = obj.clone();
    new["status"] = status;
    let d = def(st, qualified);
    if let Err(e) = super::write::update(st, &d, namespace(obj), name(obj), new, true) {
        tracing::debug!("control: status of {qualified} {}: {}", name(obj), e.message);
    }
}

/// Write a changed object (main resource) when it differs.
fn update(st: &mut State, qualified: &str, old: &Value, new: Value) {
    if *old == new {
        return;
    }
    let d = def(st, qualified);
    if let Err(e) = super::write::update(st, &d, namespace(old), name(old), new, false) {
        tracing::debug!("control: update of {qualified} {}: {}", name(old), e.message);
    }
}

#[cfg(test)]
pub mod testing {
    //! A state with the control plane on, and the controllers run to quiescence.
    use super::super::store::State;
    use super::super::write;
    use super::Controllers;
    use serde_json::{Value, json};

    pub fn state() -> State {
        let mut st = State::new(10_000, 0);
        st.control_plane = true;
        let ns = st.registry.get("namespaces").cloned().unwrap();
        for n in ["default", "team"] {
            write::create(&mut st, &ns, None, "v1", json!({"metadata": {"name": n}})).unwrap();
        }
        st
    }

    /// Run fresh controllers (they look at everything) until nothing is left.
    pub fn settle(st: &mut State) {
        settle_with(&mut Controllers::default(), st);
    }

    /// Run these controllers until nothing is left (at most 100 steps).
    pub fn settle_with(c: &mut Controllers, st: &mut State) {
        for _ in 0..100 {
            if !c.step(st) {
                return;
            }
        }
        panic!("the controllers did not settle");
    }

    pub fn create(st: &mut State, qualified: &str, ns: Option<&str>, api_version: &str, v: Value) -> Value {
        let d = st.registry.get(qualified).cloned().unwrap();
        write::create(st, &d, ns, api_version, v).unwrap().value.clone()
    }

    pub fn all(st: &State, qualified: &str) -> Vec<Value> {
        super::objects(st, qualified)
    }
}

#[cfg(test)]
mod tests {
    use super::super::store::State;
    use super::Controllers;
    use super::testing::*;
    use serde_json::json;

    /// `n` Deployments of 0 replicas in `default`, the controllers settled.
    fn deployments(n: usize) -> (State, Controllers) {
        let mut st = state();
        for i in 0..n {
            let d = json!({"metadata": {"name": format!("d{i}")}, "spec": {"replicas": 0,
                "selector": {"matchLabels": {"app": "a"}},
                "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
            create(&mut st, "deployments.apps", Some("default"), "apps/v1", d);
        }
        let mut c = Controllers::default();
        settle_with(&mut c, &mut st);
        assert_eq!(all(&st, "replicasets.apps").len(), n);
        (st, c)
    }

    #[test]
    fn idle_controllers_do_nothing() {
        let (mut st, mut c) = deployments(50);
        let before = (c.rounds, c.visits);
        for _ in 0..5 {
            assert!(!c.step(&mut st));
        }
        assert_eq!((c.rounds, c.visits), before);
    }

    #[test]
    fn one_change_costs_the_same_whatever_else_there_is() {
        let work = |n: usize| {
            let (mut st, mut c) = deployments(n);
            let (rounds, visits) = (c.rounds, c.visits);
            let mut d = all(&st, "deployments.apps")
                .into_iter()
                .find(|d| d["metadata"]["name"] == "d1")
                .unwrap();
            d["spec"]["replicas"] = json!(2);
            let def = st.registry.get("deployments.apps").cloned().unwrap();
            super::super::write::update(&mut st, &def, Some("default"), "d1", d, false).unwrap();
            settle_with(&mut c, &mut st);
            assert_eq!(all(&st, "pods").len(), 2);
            (c.rounds - rounds, c.visits - visits)
        };
        let (few, many) = (work(5), work(200));
        assert!(few.1 > 0);
        assert_eq!(few, many, "rounds and objects read for one change");
    }
}
