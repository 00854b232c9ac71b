//! The simulated control plane (KWOK is the model): controllers that act
//! on the store as kube-controller-manager, the scheduler and kubelets act
//! through the API. Each pass runs every controller once; a controller
//! reads the current objects and writes through `write` (create, update,
//! `/status` update, delete), so every change is an ordinary commit that
//! watchers see, with its own resourceVersion. The loop runs passes until
//! one writes nothing, then waits for the next commit (`State::changes`).
//!
//! Controllers: `nodes` (simulated Nodes), `deployment` (ReplicaSets of a
//! Deployment, rollouts, Deployment status), `replicaset` (Pods of a
//! ReplicaSet, its status), `scheduler` (binds Pods to Nodes), `kubelet`
//! (runs bound Pods), `gc` (ownerReferences: background, foreground and
//! orphan deletion), `namespace` (empties Terminating namespaces).
//!
//! Owns: the loop and what the controllers share. Must not touch: HTTP,
//! the store's internals (only `write` and reads of `State::tables`).

mod deployment;
mod gc;
mod kubelet;
mod namespace;
mod nodes;
mod replicaset;
mod scheduler;

use super::Shared;
use super::resources::ResourceDef;
use super::store::State;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// Passes after one wake-up before yielding the lock to requests.
const MAX_PASSES: usize = 16;

/// Run the controllers until the simulator stops.
pub async fn run(shared: Arc<Shared>) {
    loop {
        let mut changes = {
            let mut st = shared.store.lock();
            for _ in 0..MAX_PASSES {
                if !pass(&mut st) {
                    break;
                }
            }
            // Subscribed under the lock: no commit after the pass is missed.
            st.changes.subscribe()
        };
        // A restart replaces the state (and its sender): look again soon.
        let _ = tokio::time::timeout(Duration::from_secs(1), changes.changed()).await;
    }
}

/// Run every controller once; true if any of them wrote.
pub fn pass(st: &mut State) -> bool {
    let before = st.rv;
    nodes::reconcile(st);
    deployment::reconcile(st);
    replicaset::reconcile(st);
    scheduler::reconcile(st);
    kubelet::reconcile(st);
    gc::reconcile(st);
    namespace::reconcile(st);
    st.rv != before
}

/// The current objects of a table (qualified plural), in key order.
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
    //! A state with the control plane on, and passes run to quiescence.
    use super::super::store::State;
    use super::super::write;
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

    /// Run passes until one writes nothing (at most 100).
    pub fn settle(st: &mut State) {
        for _ in 0..100 {
            if !super::pass(st) {
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
