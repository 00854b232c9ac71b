//! A batch handed over whole, for a handler that takes batches in one call
//! ([`EventHandler::takes_batches`](super::EventHandler::takes_batches)): up
//! to [`BATCH`] notifications taken from the queue at once, in order, and
//! delivered by one future; a `Synced` marker ends the batch and is
//! delivered after it, alone. A stop takes effect between batches (a batch
//! handed over is delivered whole). Owns only this loop; the queue and its
//! states are the listener's.

use super::{BATCH, Listener, ListenerState, Notification};
use std::sync::Arc;
use std::sync::atomic::Ordering;

impl Listener {
    /// One whole batch, then the batch ends (and is scheduled again when
    /// more is queued).
    pub(super) async fn run_whole_batch(self: Arc<Self>) {
        let Some(first) = self.begin_batch(None) else {
            return;
        };
        let mut batch = vec![first];
        {
            let mut q = self.queue.lock().unwrap();
            while batch.len() < BATCH
                && !matches!(batch.last(), Some(Notification::Synced))
                && !matches!(q.state, ListenerState::Stopped(_))
            {
                match q.items.pop() {
                    Some(n) => batch.push(n),
                    None => break,
                }
            }
        }
        let synced = matches!(batch.last(), Some(Notification::Synced));
        if synced {
            batch.pop();
        }
        let events = batch.len() as u64;
        if events > 0 {
            if let Some(delivery) = self.handler.clone().deliver_batch_async(batch) {
                delivery.await;
            }
            self.delivered.fetch_add(events, Ordering::Relaxed);
        }
        if synced {
            self.synced.store(true, Ordering::Release);
            if let Some(delivery) = self.handler.clone().deliver_async(Notification::Synced) {
                delivery.await;
            }
        }
        self.next_in_batch(false);
    }
}
