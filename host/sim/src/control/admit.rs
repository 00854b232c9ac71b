//! The ReplicaSet controller's Pod creates through admission, as
//! kube-controller-manager's go through the API: while any webhook
//! configuration exists, `replicaset` queues the Pods it wants
//! ([`Admissions::queue`]) instead of writing them; after the round the
//! loop hands them to [`admit`] on a blocking thread (webhook calls are
//! blocking HTTPS calls, made without the store's lock), as the service
//! account `kube-system/replicaset-controller`; the outcomes come back to
//! the loop, which [`apply`]s them under the lock: an admitted (possibly
//! mutated) Pod is written if its ReplicaSet, the same one, still wants
//! it; a refused one records a `FailedCreate` Warning Event on the
//! ReplicaSet (`Error creating: <message>`; the same message again counts
//! up the same Event), sets its `ReplicaFailure` condition, and holds the
//! ReplicaSet's creates back for a backoff (1 s, doubling to 30 s) after
//! which it is synced again. A ReplicaSet whose creates are being admitted
//! creates nothing more until they are back.
//!
//! Owns: the queued creates, their admission, the backoff, the FailedCreate
//! Events and the ReplicaFailure condition. Must not touch: which Pods a
//! ReplicaSet wants (`replicaset`), the webhooks' dispatching (`admission`).

use super::super::Shared;
use super::super::admission::{self, flow};
use super::super::meta::now;
use super::super::status::ApiError;
use super::super::store::WriteMode;
use super::super::write;
use super::{Ctx, controller_uid, def, deleting, name, namespace, replicas, uid};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The service account the ReplicaSet controller writes as.
pub const CONTROLLER: &str = "replicaset-controller";
const FIRST_DELAY: Duration = Duration::from_secs(1);
const MAX_DELAY: Duration = Duration::from_secs(30);

/// One Pod a ReplicaSet wants created.
#[derive(Debug, Clone)]
pub struct Create {
    /// The ReplicaSet's store key and uid.
    pub rs: Arc<str>,
    pub rs_uid: String,
    pub ns: Option<String>,
    pub pod: Value,
}

/// A create and what admission made of it: the Pod to store, or the refusal.
#[derive(Debug)]
pub struct Admitted {
    pub create: Create,
    pub result: Result<Value, ApiError>,
}

/// A ReplicaSet whose last create was refused.
#[derive(Debug)]
struct Backoff {
    delay: Duration,
    until: Instant,
    /// Synced again since `until` passed.
    requeued: bool,
    /// The Event recorded for the last refusal: (name, message).
    event: Option<(String, String)>,
}

/// The creates waiting for admission, being admitted, and held back.
#[derive(Debug, Default)]
pub struct Admissions {
    queued: Vec<Create>,
    /// Creates being admitted, per ReplicaSet.
    in_flight: BTreeMap<Arc<str>, usize>,
    backoff: BTreeMap<Arc<str>, Backoff>,
}

impl Admissions {
    /// Whether the ReplicaSet `rs` may create Pods at `now`: none of its
    /// creates is being admitted and no backoff holds it.
    pub fn may_create(&self, rs: &str, now: Instant) -> bool {
        !self.in_flight.contains_key(rs) && self.backoff.get(rs).is_none_or(|b| b.until <= now)
    }

    /// Queue `c` for admission after the round.
    pub fn queue(&mut self, c: Create) {
        *self.in_flight.entry(c.rs.clone()).or_default() += 1;
        self.queued.push(c);
    }

    /// The creates queued since the last call.
    pub fn take(&mut self) -> Vec<Create> {
        std::mem::take(&mut self.queued)
    }

    /// `rs` created a Pod, or has the Pods it wants: no backoff any more.
    pub fn succeeded(&mut self, rs: &str) {
        self.backoff.remove(rs);
    }

    /// The ReplicaSets whose backoff ended by `now` (each once).
    pub fn due(&mut self, now: Instant) -> Vec<Arc<str>> {
        self.backoff
            .iter_mut()
            .filter(|(_, b)| !b.requeued && b.until <= now)
            .map(|(k, b)| {
                b.requeued = true;
                k.clone()
            })
            .collect()
    }

    /// When the next backoff ends, if one is running.
    pub fn next_wake(&self) -> Option<Instant> {
        self.backoff
            .values()
            .filter(|b| !b.requeued)
            .map(|b| b.until)
            .min()
    }

    /// A refusal of `rs`'s create at `now`: the backoff starts, or doubles
    /// when it had ended (the retry was refused; refusals of one batch of
    /// creates count once). The Event of the previous refusal, if any.
    fn refused(&mut self, rs: &Arc<str>, now: Instant) -> Option<(String, String)> {
        let b = self.backoff.entry(rs.clone()).or_insert(Backoff {
            delay: Duration::ZERO,
            until: now,
            requeued: false,
            event: None,
        });
        if b.until <= now {
            b.delay = (b.delay * 2).clamp(FIRST_DELAY, MAX_DELAY);
            b.until = now + b.delay;
            b.requeued = false;
        }
        b.event.clone()
    }

    fn landed(&mut self, rs: &Arc<str>) {
        if let Some(n) = self.in_flight.get_mut(rs) {
            *n -= 1;
            if *n == 0 {
                self.in_flight.remove(rs);
            }
        }
    }
}

/// Admit `creates` as kube-apiserver admits a client's create (mutating,
/// then validating webhooks), as the ReplicaSet controller's service
/// account. Makes blocking calls: run it on a blocking thread, without the
/// store's lock.
pub fn admit(shared: &Arc<Shared>, creates: Vec<Create>) -> Vec<Admitted> {
    let ctx = admission::Ctx::for_controller(shared, CONTROLLER);
    let pods = def(&shared.store.lock(), "pods");
    let mode = WriteMode::default();
    creates
        .into_iter()
        .map(|c| {
            let result = match &ctx {
                // The configurations went since the create was queued.
                None => Ok(c.pod.clone()),
                Some(ctx) => {
                    let t = flow::Target {
                        def: &pods,
                        version: "v1",
                        sub: None,
                        ns: c.ns.as_deref(),
                        mode: &mode,
                    };
                    flow::create(shared, ctx, &t, c.pod.clone())
                }
            };
            Admitted { create: c, result }
        })
        .collect()
}

/// Store an admitted Pod if its ReplicaSet still wants it, or record the
/// refusal (a store's refusal of the Pod counts as one).
pub fn apply(cx: &mut Ctx, a: Admitted, at: Instant) {
    let c = &a.create;
    cx.admit.landed(&c.rs);
    let rs = cx
        .get("replicasets.apps", &c.rs)
        .filter(|rs| uid(rs) == c.rs_uid && !deleting(rs));
    let Some(rs) = rs else { return };
    let result = a.result.and_then(|pod| {
        let mine = cx
            .dependents(&c.rs_uid, "pods")
            .iter()
            .filter(|p| controller_uid(p) == Some(&c.rs_uid) && !deleting(p))
            .count();
        if mine >= replicas(&rs).max(0) as usize {
            return Ok(());
        }
        let pods = def(cx.st, "pods");
        write::create(cx.st, &pods, c.ns.as_deref(), "v1", pod).map(|_| ())
    });
    match result {
        Ok(()) => cx.admit.succeeded(&c.rs),
        Err(e) => {
            let previous = cx.admit.refused(&c.rs, at);
            let event = record(cx, &rs, &format!("Error creating: {}", e.message), previous);
            if let Some(b) = cx.admit.backoff.get_mut(&c.rs) {
                b.event = event;
            }
            replica_failure(cx, &rs, &e.message);
        }
    }
}

/// Record the Warning Event `FailedCreate` on `rs` as kube-controller-manager's
/// event recorder does: the same message as `previous` counts it up. Its (name, message).
fn record(
    cx: &mut Ctx,
    rs: &Value,
    message: &str,
    previous: Option<(String, String)>,
) -> Option<(String, String)> {
    let ns = namespace(rs);
    let t = now();
    let events = def(cx.st, "events");
    if let Some((ev, msg)) = previous.filter(|(_, m)| m == message) {
        let key = super::store_key(ns, &ev);
        if let Some(mut e) = cx.get("events", &key) {
            e["count"] = json!(e["count"].as_i64().unwrap_or(1) + 1);
            e["lastTimestamp"] = json!(t);
            if write::update(cx.st, &events, ns, &ev, e, false).is_ok() {
                return Some((ev, msg));
            }
        }
    }
    let nanos = chrono::Utc::now().timestamp_nanos_opt().unwrap_or_default();
    let ev = format!("{}.{nanos:x}", name(rs));
    let event = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": ev, "namespace": ns},
        "involvedObject": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": ns,
            "name": name(rs), "uid": uid(rs), "resourceVersion": rs["metadata"]["resourceVersion"]},
        "reason": "FailedCreate", "message": message, "type": "Warning",
        "source": {"component": CONTROLLER},
        "firstTimestamp": t, "lastTimestamp": t, "count": 1,
        "reportingComponent": CONTROLLER, "reportingInstance": "",
    });
    match write::create(cx.st, &events, ns, "v1", event) {
        Ok(_) => Some((ev, message.to_string())),
        Err(e) => {
            tracing::debug!("control: event of {}: {}", name(rs), e.message);
            None
        }
    }
}

/// Set `rs`'s `ReplicaFailure` condition (reason FailedCreate) unless it has one.
fn replica_failure(cx: &mut Ctx, rs: &Value, message: &str) {
    let mut status = rs.get("status").cloned().unwrap_or(json!({}));
    let mut conditions = status["conditions"].as_array().cloned().unwrap_or_default();
    if conditions.iter().any(|c| c["type"] == "ReplicaFailure") {
        return;
    }
    conditions.push(
        json!({"type": "ReplicaFailure", "status": "True", "lastTransitionTime": now(),
        "reason": "FailedCreate", "message": message}),
    );
    status["conditions"] = json!(conditions);
    super::set_status(cx.st, "replicasets.apps", rs, status);
}

/// `status` without a `ReplicaFailure` condition (the creates succeed again).
pub fn without_failure(status: &mut Value) {
    let Some(cs) = status.get_mut("conditions").and_then(Value::as_array_mut) else {
        return;
    };
    cs.retain(|c| c["type"] != "ReplicaFailure");
    if cs.is_empty()
        && let Some(m) = status.as_object_mut()
    {
        m.remove("conditions");
    }
}

#[cfg(test)]
#[path = "admit_tests.rs"]
mod tests;
