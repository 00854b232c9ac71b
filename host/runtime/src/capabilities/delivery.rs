//! The `delivery` import: which event of a batch (`handler.on-batch`) the
//! guest is handling. When the guest starts an event, the results of the
//! events before it are handed to the aggregator (they are done, whatever
//! happens next), the call deadline starts again (each event has the
//! deadline a call of its own would have), and a trap from here on is
//! reported on this event. Outside a batch `begin` changes nothing.
//! Owns only that position; the batch itself is the instance's.

use super::{CallClock, HostState};
use crate::bindings::wink::plugin::delivery;

/// Where the guest is in the batch being delivered.
#[derive(Debug, Default)]
pub struct Position {
    /// The delivering instance, while a batch is in progress.
    instance: Option<usize>,
    /// The event being handled.
    current: u32,
    /// How many events the batch has.
    events: u32,
}

impl Position {
    /// A batch of `events` from `instance` starts.
    pub fn start(&mut self, instance: usize, events: u32) {
        *self = Position {
            instance: Some(instance),
            current: 0,
            events,
        };
    }

    /// The batch has ended; returns the event the guest was in.
    pub fn end(&mut self) -> u32 {
        let current = self.current;
        *self = Position::default();
        current
    }
}

impl delivery::Host for HostState {
    fn begin(&mut self, index: u32) -> wasmtime::Result<()> {
        let Some(instance) = self.delivery.instance else {
            return Ok(());
        };
        // Only forward: an index out of order or out of range is ignored.
        if index <= self.delivery.current || index >= self.delivery.events {
            return Ok(());
        }
        self.commit_reports(instance);
        self.delivery.current = index;
        self.clock = CallClock::start();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_moves_forward_only_within_its_batch() {
        let mut p = Position::default();
        p.start(7, 3);
        assert_eq!((p.instance, p.current, p.events), (Some(7), 0, 3));
        assert_eq!(p.end(), 0);
        assert_eq!(p.instance, None, "ended");
    }
}
