//! Crash recovery of the [`PluginManager`]: a trapped instance is replaced by
//! a fresh one (from the same compiled component, on the same engine) after
//! an exponential backoff, with the cache replayed to it through the usual
//! hand-over; too many consecutive crashes quarantine the plugin until its
//! file changes. Owns only that policy; loading and attaching stay in the
//! manager.

use super::PluginManager;
use super::lifecycle::AfterCrash;
use crate::instance::{CrashReport, PluginInstance};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedReceiver;

impl PluginManager {
    pub(super) async fn supervise(
        manager: std::sync::Weak<Self>,
        mut crashes: UnboundedReceiver<CrashReport>,
    ) {
        while let Some(report) = crashes.recv().await {
            let Some(manager) = manager.upgrade() else { return };
            tokio::spawn(async move { manager.restart_after_crash(report).await });
        }
    }

    async fn restart_after_crash(&self, report: CrashReport) {
        let name = report.plugin.to_string();
        let mut reason = report.reason;
        loop {
            let Some((crashed, delay)) = self.count_crash(&name, report.instance, &reason).await else {
                return;
            };
            tracing::warn!(plugin = %name, delay_ms = delay.as_millis() as u64, "restarting plugin after a crash");
            tokio::time::sleep(delay).await;
            // A failed start (init traps or refuses, registration fails)
            // counts as one more crash of the series.
            let started = match self
                .start_instance(
                    report.plugin.clone(),
                    crashed.pre().clone(),
                    crashed.engine(),
                    crashed.config().to_string(),
                    crashed.limits(),
                )
                .await
            {
                Ok((instance, registration)) => match self.resolve(&name, &registration).await {
                    Ok(resolution) => Ok((instance, resolution)),
                    Err(e) => Err(format!("plugin could not be re-registered: {e:#}")),
                },
                Err(e) => Err(format!("plugin could not be restarted: {e:#}")),
            };
            let mut plugins = self.plugins.lock().await;
            let Some(r) = plugins.get_mut(&name) else { return };
            if r.instance.id() != report.instance {
                return; // reloaded or unloaded meanwhile
            }
            match started {
                Ok((instance, resolution)) => {
                    r.registered = self.attach(&instance, resolution, Some(&r.registered));
                    r.instance = instance;
                    r.lifecycle.restarted(Instant::now());
                    tracing::info!(plugin = %name, restarts = r.lifecycle.restarts(), "plugin restarted; the cache is replayed to it");
                    return;
                }
                Err(e) => {
                    tracing::error!(plugin = %name, "{e}");
                    reason = e;
                }
            }
        }
    }

    /// Count one crash of the instance `instance` of `name`: quarantine it
    /// after too many in a row, else return what to restart it from and the
    /// backoff. None when there is nothing to restart (stale report,
    /// unloaded, quarantined).
    async fn count_crash(
        &self,
        name: &str,
        instance: usize,
        reason: &str,
    ) -> Option<(Arc<PluginInstance>, Duration)> {
        let mut plugins = self.plugins.lock().await;
        let r = plugins.get_mut(name)?;
        if r.instance.id() != instance {
            return None; // stale: already replaced
        }
        let delay = match r
            .lifecycle
            .crashed(&self.options.crash_policy(), reason, Instant::now())
        {
            AfterCrash::RestartIn(delay) => delay,
            AfterCrash::Quarantine(why) => {
                tracing::error!(plugin = %name, "plugin quarantined ({why}); it gets no events until its file changes");
                for reg in std::mem::take(&mut r.registered) {
                    self.factory.release(&reg.spec, reg.listener_id);
                }
                return None;
            }
            AfterCrash::Nothing => return None,
        };
        Some((r.instance.clone(), delay))
    }
}
