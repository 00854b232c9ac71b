//! Admission calls into an instance: `admission.validate` and
//! `admission.mutate` with the request's objects lent to the guest, under the
//! same deadline, trap and poisoning rules as event calls. Owns only the
//! call; which instance is asked, and what a failure means, is decided by
//! [`crate::admission`].

use super::{Guest, InitError, PluginInstance, trap_summary};
use crate::admission::review;
use crate::bindings::admission::{Mutation, Verdict};
use crate::call_times::CallCounts;
use crate::capabilities::CallClock;
use crate::engine::Limits;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use wasmtime::component::Resource;
use wink_informer::ObjRef;

/// Which admission export to call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    Validate,
    Mutate,
}

/// A guest's answer: a verdict, and for a mutation the changed object.
pub type Answer = (Verdict, Option<String>);

/// Why an instance gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoAnswer {
    /// The call was not made: the instance was being replaced (a call of
    /// it trapped, or was stopped at its deadline, while this request
    /// waited for it). Another instance may answer.
    #[error("the instance is being replaced")]
    Replaced,
    /// The call was made and gave no answer: a trap, its deadline, or a
    /// component that cannot admit.
    #[error("{0}")]
    Failed(String),
}

/// The request as the guest gets it: the AdmissionRequest's JSON, its
/// operation, and its objects as cache objects, to be lent for the call.
pub struct Asked<'a> {
    pub request: &'a serde_json::Value,
    pub operation: crate::bindings::types::Operation,
    /// `options` as JSON text, or empty.
    pub options: String,
    pub object: Option<ObjRef>,
    pub old_object: Option<ObjRef>,
}

/// A call under way: dropped before it returns (the request was answered
/// by its failure policy at the webhook's deadline, and its future
/// dropped), it leaves the store unusable (wasmtime poisons a store whose
/// call was cancelled), so the instance is marked crashed and its pool
/// replaces it before the next request.
/// Its time until then is counted as a call's.
struct Unfinished<'a>(&'a PluginInstance, Door, std::time::Instant);

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        let Unfinished(instance, door, started) = self;
        instance.handler_time.record(started.elapsed());
        instance.traps.fetch_add(1, Ordering::Relaxed);
        instance.crashed.store(true, Ordering::Release);
        tracing::warn!(plugin = %instance.name, call = ?door, "admission call stopped at its webhook's deadline; the instance is replaced");
    }
}

impl PluginInstance {
    /// Another instance of `handler`'s plugin for admission calls: the same
    /// component, config and memory limit, its own call deadline, answering cache queries from the same
    /// stores; no writes, Events or reports, and its traps are its caller's
    /// to handle. Its calls are counted and timed in `counts`.
    pub fn start_sharing(
        handler: &PluginInstance,
        call_deadline: std::time::Duration,
        counts: &CallCounts,
    ) -> Result<Arc<Self>, InitError> {
        let limits = Limits {
            call_deadline,
            ..handler.limits
        };
        let (instance, _) = Self::start_in(
            handler.name.clone(),
            handler.pre.clone(),
            &handler.engine,
            handler.config.clone(),
            limits,
            None,
            (handler.cache.clone(), counts.clone(), handler.log.clone()),
        )?;
        instance.set_synced();
        Ok(instance)
    }

    /// Where this plugin's policy results go, once connected.
    pub(crate) fn report_sink(&self) -> Option<std::sync::Arc<crate::reports::aggregate::Aggregator>> {
        self.reports.get().cloned()
    }

    /// Ask the guest through `door`. An error is why it gave no answer (a
    /// trap, its deadline, a 0.3.0 component); a trap poisons the instance,
    /// which the caller replaces, and so does dropping this future while
    /// the guest runs.
    pub async fn admit(&self, door: Door, asked: Asked<'_>) -> Result<Answer, NoAnswer> {
        let mut live = self.live.lock().await;
        // Crashed while this request waited for the lock: its store is
        // unusable.
        let Some(l) = live.as_mut().filter(|_| !self.is_crashed()) else {
            return Err(NoAnswer::Replaced);
        };
        let Guest::Current(plugin) = &l.plugin else {
            return Err(NoAnswer::Failed(
                "a wink:plugin@0.3.0 component cannot admit".into(),
            ));
        };
        self.calls.fetch_add(1, Ordering::Relaxed);
        let running = self.engine.call_started();
        self.engine.arm(&mut l.store, &self.limits);
        l.store.data_mut().clock = CallClock::start();
        let objects = &mut l.store.data_mut().objects;
        let lent: Vec<u32> = [&asked.object, &asked.old_object]
            .into_iter()
            .map(|o| o.as_ref().map_or(u32::MAX, |o| objects.insert(o.clone())))
            .collect();
        let borrow = |rep: u32| (rep != u32::MAX).then(|| Resource::new_borrow(rep));
        let groups = review::groups(asked.request);
        let extra_values = review::extra(asked.request);
        let extra: Vec<(&str, &[&str])> = extra_values.iter().map(|(k, v)| (*k, v.as_slice())).collect();
        let request = review::request(&asked, &groups, &extra, borrow(lent[0]), borrow(lent[1]));
        let admission = plugin.wink_plugin_admission();
        let unfinished = Unfinished(self, door, std::time::Instant::now());
        let result = match door {
            Door::Validate => admission
                .call_validate(&mut l.store, request)
                .await
                .map(|v| (v, None)),
            Door::Mutate => admission
                .call_mutate(&mut l.store, request)
                .await
                .map(|Mutation { verdict, object }| (verdict, object)),
        };
        std::mem::forget(unfinished);
        drop(running);
        self.handler_time.record(l.store.data().clock.elapsed());
        match result {
            Ok(answer) => {
                for rep in lent.into_iter().filter(|&r| r != u32::MAX) {
                    l.store.data_mut().objects.remove(rep);
                }
                // Admission calls give no policy results.
                l.store.data_mut().discard_reports();
                Ok(answer)
            }
            Err(err) => {
                *live = None;
                self.traps.fetch_add(1, Ordering::Relaxed);
                self.crashed.store(true, Ordering::Release);
                let summary = trap_summary(&err);
                tracing::error!(plugin = %self.name, call = ?door, "plugin trapped in an admission call: {summary}");
                Err(NoAnswer::Failed(summary))
            }
        }
    }
}
