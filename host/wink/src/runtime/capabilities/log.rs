//! The `log` import: a guest's log lines into the host's structured log,
//! prefixed with the plugin's name.

use super::HostState;
use crate::runtime::bindings::types::Level;
use crate::runtime::bindings::wink::plugin::log;

impl log::Host for HostState {
    fn log(&mut self, level: Level, message: String) -> wasmtime::Result<()> {
        if !self.log_budget.admit() {
            return Ok(());
        }
        let p = &self.plugin;
        let message = crate::runtime::stdio::printable(&message);
        match level {
            Level::Trace => tracing::trace!(target: "wink::plugin", "[{p}] {message}"),
            Level::Debug => tracing::debug!(target: "wink::plugin", "[{p}] {message}"),
            Level::Info => tracing::info!(target: "wink::plugin", "[{p}] {message}"),
            Level::Warn => tracing::warn!(target: "wink::plugin", "[{p}] {message}"),
            Level::Error => tracing::error!(target: "wink::plugin", "[{p}] {message}"),
        }
        Ok(())
    }
}
