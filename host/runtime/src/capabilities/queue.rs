//! The `queue` import: keys a plugin adds to its own work queue. Owns the
//! answer to a plugin without a queue; this host serves no work queues yet
//! (a registration asking for one is refused at load), so every add is
//! answered with that error, never a trap.

use super::HostState;
use crate::bindings::wink::plugin::queue;

/// The answer to an add from a plugin that registered no queue.
fn no_queue(key: &str) -> String {
    format!("cannot enqueue {key:?}: this plugin registered no queue")
}

impl queue::Host for HostState {
    fn add(&mut self, key: String) -> wasmtime::Result<Result<(), String>> {
        Ok(Err(no_queue(&key)))
    }

    fn add_after(&mut self, key: String, _delay_ms: u64) -> wasmtime::Result<Result<(), String>> {
        Ok(Err(no_queue(&key)))
    }
}
