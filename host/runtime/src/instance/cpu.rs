//! An instance's CPU share ([`crate::cpu_share`]): its event, batch and
//! reconcile calls wait for a turn and until its team is within its share,
//! and each call's CPU time ([`crate::cpu_time`]) is charged to it. Owns
//! only that bookkeeping around a call; the calls are the instance's.

use super::PluginInstance;
use crate::capabilities::CallClock;
use crate::cpu_share::{CpuShare, Turn};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

impl PluginInstance {
    /// Hold this plugin's calls to `share` from now on.
    pub fn share_cpu(&self, share: Arc<CpuShare>) {
        let _ = self.cpu.set(share);
    }

    /// Wait for a turn among its team's calls and until the team is
    /// within its CPU share (none: at once); the turn is held until the
    /// answer is dropped, after the call.
    pub(super) async fn within_share(&self) -> Option<Turn> {
        match self.cpu.get() {
            Some(s) => Some(s.hold().await),
            None => None,
        }
    }

    /// Run the guest call `call`: its answer, and the CPU time it took
    /// when the instance has a share to charge it to (zero otherwise: the
    /// OS is not asked).
    pub(super) async fn metered<F: Future>(&self, call: F) -> (F::Output, Duration) {
        match self.cpu.get() {
            Some(_) => crate::cpu_time::on_cpu(call).await,
            None => (call.await, Duration::ZERO),
        }
    }

    /// A call ended: its time observed, and its CPU time `cpu` charged to
    /// its team's CPU share.
    pub(super) fn used(&self, clock: &CallClock, cpu: Duration) {
        self.handler_time.record(clock.elapsed());
        self.charge(cpu);
    }

    /// Charge `cpu` to its team's CPU share.
    pub(super) fn charge(&self, cpu: Duration) {
        if let Some(s) = self.cpu.get() {
            s.charge(cpu, std::time::Instant::now());
        }
    }
}
