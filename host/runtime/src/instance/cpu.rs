//! An instance's CPU share ([`crate::cpu_share`]): its event, batch and
//! reconcile calls wait for a turn and until its team is within its share, and each
//! call's guest time is charged to it. Owns only that bookkeeping around
//! a call; the calls are the instance's.

use super::PluginInstance;
use crate::capabilities::CallClock;
use crate::cpu_share::{CpuShare, Turn};
use std::sync::Arc;

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

    /// A call ended: its time observed, and its guest time (less the
    /// host's I/O for it) charged to its team's CPU share.
    pub(super) fn used(&self, clock: &CallClock) {
        self.handler_time.record(clock.elapsed());
        self.charge(clock.guest_time());
    }

    /// Charge `took` to its team's CPU share (a batch's whole call: its
    /// clock restarts at each event).
    pub(super) fn charge(&self, took: std::time::Duration) {
        if let Some(s) = self.cpu.get() {
            s.charge(took, std::time::Instant::now());
        }
    }
}
