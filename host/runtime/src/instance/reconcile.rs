//! Reconciler calls into an instance: `reconciler.reconcile(key)` and
//! `reconciler.map-to-keys(watch, obj)`, through the instance's one lock
//! (so they never overlap its event calls), under the same deadline. A trap
//! poisons the instance and is reported to the manager like any other
//! (it counts toward quarantine). Owns only the calls; which key is
//! reconciled, and what its answer does to the queue, is the manager's.

use super::{Guest, Live, PluginInstance, trap_summary};
use crate::bindings::reconciler::Action;
use crate::capabilities::CallClock;
use std::sync::atomic::Ordering;
use wasmtime::component::Resource;
use wink_informer::ObjRef;

impl PluginInstance {
    /// Ask the guest to reconcile `key`. An error is its own, or why it gave
    /// no answer (a trap, its deadline, an instance being replaced).
    pub async fn reconcile(&self, key: &str) -> Result<Action, String> {
        let _turn = self.within_share().await;
        let mut live = self.live.lock().await;
        let Some(l) = live.as_mut() else {
            return Err("the instance is being replaced".into());
        };
        let Guest::Current(plugin) = &l.plugin else {
            return Err("a wink:plugin@0.3.0 component cannot reconcile".into());
        };
        let running = self.begin(&mut l.store);
        let call = plugin.wink_plugin_reconciler().call_reconcile(&mut l.store, key);
        let (result, cpu) = self.metered(call).await;
        drop(running);
        self.ended(l, cpu);
        match result {
            Ok(answer) => {
                l.store.data_mut().commit_reports(self.id);
                answer
            }
            Err(err) => Err(self.trapped(&mut live, "reconcile", key, err)),
        }
    }

    /// Ask the guest which keys of its queue's resource `obj`, of its
    /// watch number `watch`, concerns. None when it gave no answer (a trap,
    /// an instance being replaced).
    pub async fn map_to_keys(&self, watch: u32, obj: &ObjRef) -> Option<Vec<String>> {
        let mut live = self.live.lock().await;
        let l = live.as_mut()?;
        let Guest::Current(plugin) = &l.plugin else {
            return None;
        };
        let running = self.begin(&mut l.store);
        let rep = l.store.data_mut().objects.insert(obj.clone());
        let call =
            plugin
                .wink_plugin_reconciler()
                .call_map_to_keys(&mut l.store, watch, Resource::new_borrow(rep));
        let (result, cpu) = self.metered(call).await;
        drop(running);
        self.ended(l, cpu);
        l.store.data_mut().objects.remove(rep);
        match result {
            Ok(keys) => {
                // Mapping gives no policy results.
                l.store.data_mut().discard_reports();
                Some(keys)
            }
            Err(err) => {
                self.trapped(&mut live, "map-to-keys", &obj.key(), err);
                None
            }
        }
    }

    /// A call starts: counted, its deadline and clock set.
    fn begin(
        &self,
        store: &mut wasmtime::Store<crate::capabilities::HostState>,
    ) -> crate::ticker::RunningCall<'_> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let running = self.engine.call_started();
        self.engine.arm(store, &self.limits);
        store.data_mut().clock = CallClock::start();
        running
    }

    /// A call ended: its time observed (and its CPU time `cpu` charged to
    /// its CPU share).
    fn ended(&self, l: &Live, cpu: std::time::Duration) {
        self.used(&l.store.data().clock, cpu);
    }

    /// The call trapped: drop the poisoned Store, report the crash to the
    /// manager (a restart, or quarantine after too many), and say why.
    fn trapped(&self, live: &mut Option<Live>, call: &str, key: &str, err: wasmtime::Error) -> String {
        if let Some(l) = live.as_mut() {
            l.store.data_mut().discard_reports();
        }
        *live = None;
        self.traps.fetch_add(1, Ordering::Relaxed);
        self.crashed.store(true, Ordering::Release);
        let summary = trap_summary(&err);
        tracing::error!(plugin = %self.name, call, key, "plugin trapped: {summary}");
        if let Some(tx) = &self.crash_tx {
            let _ = tx.send(super::CrashReport {
                plugin: self.name.clone(),
                instance: self.id(),
                reason: format!("{summary}\n{err:?}"),
            });
        }
        format!("trapped: {summary}")
    }
}
