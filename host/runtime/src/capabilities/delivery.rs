//! The `delivery` import: which event of a batch the guest is handling.
//! The host delivers events one per call today (it never calls
//! `handler.on-batch`), so every event is a call of its own and a position
//! a guest reports changes nothing.

use super::HostState;
use crate::bindings::wink::plugin::delivery;

impl delivery::Host for HostState {
    fn begin(&mut self, _index: u32) -> wasmtime::Result<()> {
        Ok(())
    }
}
