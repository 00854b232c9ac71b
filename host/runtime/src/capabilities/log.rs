//! The `log` import: a guest's log lines into the host's structured log,
//! prefixed with the plugin's name.

use super::HostState;
use crate::bindings::types::Level;
use crate::bindings::wink::plugin::log;

impl log::Host for HostState {
    fn log(&mut self, level: Level, message: String) -> wasmtime::Result<()> {
        if !self.log_budget.admit() {
            return Ok(());
        }
        let level = match level {
            Level::Trace => tracing::Level::TRACE,
            Level::Debug => tracing::Level::DEBUG,
            Level::Info => tracing::Level::INFO,
            Level::Warn => tracing::Level::WARN,
            Level::Error => tracing::Level::ERROR,
        };
        crate::stdio::guest_line(&self.plugin, level, &message);
        Ok(())
    }
}
