//! A batch of events delivered in one guest entry (`handler.on-batch`): the
//! events in order, each event's objects as owned handles the guest drops
//! when it is done with them. The guest says which event it is handling
//! (`delivery.begin`, see [`crate::capabilities`]), so each event keeps the
//! meaning of a call of its own: its own deadline, its results handed over
//! when the next event starts (what ran before a trap stays done), and a
//! trap reported on the event that trapped. A 0.3.0 component (which has no
//! `on-batch`) and a batch of one get one call per event.
//!
//! Owns only this delivery; which events a batch holds is the listener's.

use super::{Guest, PluginInstance};
use crate::bindings::exports::wink::plugin::handler::{Added, Deleted, Event, Updated};
use crate::capabilities::CallClock;
use std::sync::atomic::Ordering;
use wasmtime::component::Resource;
use wink_informer::{Notification, ObjRef};

/// The objects of `n`, in the order `on-batch` hands them over.
fn objects(n: &Notification) -> impl Iterator<Item = &ObjRef> {
    let (a, b) = match n {
        Notification::Add { obj, .. } | Notification::Delete { obj, .. } => (Some(obj), None),
        Notification::Update { old, new } => (Some(old), Some(new)),
        Notification::Synced => (None, None),
    };
    a.into_iter().chain(b)
}

/// The object an event is about (an update's new state).
fn subject(n: &Notification) -> Option<&ObjRef> {
    match n {
        Notification::Add { obj, .. } | Notification::Delete { obj, .. } => Some(obj),
        Notification::Update { new, .. } => Some(new),
        Notification::Synced => None,
    }
}

/// The key of the object `n` is about.
fn key(n: &Notification) -> String {
    let mut key = String::new();
    if let Some(o) = subject(n) {
        wink_informer::object::push_key_of(&mut key, o.namespace(), o.name());
    }
    key
}

/// `n` as a batch event from watch `watch`, its key `key`.
fn event<'a>(watch: u32, n: &Notification, key: &'a str) -> Option<Event<'a>> {
    Some(match n {
        Notification::Add { in_initial_list, .. } => Event::Add(Added {
            watch,
            key,
            in_initial_list: *in_initial_list,
        }),
        Notification::Update { .. } => Event::Update(Updated { watch, key }),
        Notification::Delete {
            final_state_unknown, ..
        } => Event::Delete(Deleted {
            watch,
            key,
            final_state_unknown: *final_state_unknown,
        }),
        Notification::Synced => return None,
    })
}

impl PluginInstance {
    /// Deliver `batch` (events of the plugin's watch number `watch`, in
    /// order, no sync marker) in one guest entry when the guest has
    /// `on-batch`; the future ends when the guest's call has.
    pub async fn deliver_batch(&self, watch: u32, batch: &[Notification]) {
        // A turn before the instance's lock, as every call takes them.
        let turn = match batch.len() >= 2 {
            true => self.within_share().await,
            false => None,
        };
        let mut live = self.live.lock().await;
        let batches = matches!(live.as_ref().map(|l| &l.plugin), Some(Guest::Current(_)));
        if batch.len() < 2 || !batches {
            drop(live);
            // Each event's call takes its own turn.
            drop(turn);
            for n in batch {
                self.deliver(watch, n).await;
            }
            return;
        }
        for n in batch {
            self.count_delivery(n);
        }
        let Some(l) = live.as_mut() else { return };
        let Guest::Current(plugin) = &l.plugin else {
            unreachable!("checked above; only a new instance changes the guest")
        };
        self.calls.fetch_add(1, Ordering::Relaxed);
        let running = self.engine.call_started();
        let state = l.store.data_mut();
        let keys: Vec<String> = batch.iter().map(key).collect();
        let events: Vec<Event> = batch
            .iter()
            .zip(&keys)
            .filter_map(|(n, k)| event(watch, n, k))
            .collect();
        let lent: Vec<Resource<_>> = batch
            .iter()
            .flat_map(objects)
            .map(|o| Resource::new_own(state.objects.insert(o.clone())))
            .collect();
        state.delivery.start(self.id, events.len() as u32);
        state.clock = CallClock::start();
        self.engine.arm(&mut l.store, &self.limits);
        let batch_call = plugin
            .wink_plugin_handler()
            .call_on_batch(&mut l.store, &events, &lent);
        let (result, cpu) = self.metered(batch_call).await;
        drop(running);
        let state = l.store.data_mut();
        let current = state.delivery.end() as usize;
        self.handler_time.record(state.clock.elapsed());
        self.charge(cpu);
        match result {
            Ok(()) => {
                state.commit_reports(self.id);
                drop(live);
                for n in batch {
                    if let Notification::Delete { obj, .. } = n {
                        self.delivered_deletion(obj);
                    }
                }
            }
            Err(err) => {
                state.discard_reports();
                *live = None;
                let at = batch.get(current);
                // Named as the event's own call would be.
                let call = match at {
                    Some(Notification::Add { .. }) => "on-add",
                    Some(Notification::Update { .. }) => "on-update",
                    Some(Notification::Delete { .. }) => "on-delete",
                    _ => "on-batch",
                };
                // The deletions before the event that trapped were handled.
                for n in &batch[..current.min(batch.len())] {
                    if let Notification::Delete { obj, .. } = n {
                        self.delivered_deletion(obj);
                    }
                }
                self.crashed_in(call, at.and_then(subject), &err);
            }
        }
    }
}
