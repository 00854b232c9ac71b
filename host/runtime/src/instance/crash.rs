//! An instance's trap: counted, said in the log (what, where, on which
//! object, the wasm backtrace) and reported to the manager, which starts
//! a fresh instance. Owns only the telling; the calls are the instance's.

use super::{CrashReport, PluginInstance};
use std::sync::atomic::Ordering;
use wink_informer::ObjRef;

impl PluginInstance {
    /// A call trapped (its Store already dropped): count it, say what,
    /// where and on which object, and tell the manager.
    pub(super) fn crashed_in(&self, call: &str, obj: Option<&ObjRef>, err: &wasmtime::Error) {
        self.traps.fetch_add(1, Ordering::Relaxed);
        self.crashed.store(true, Ordering::Release);
        let summary = trap_summary(err);
        let backtrace = err
            .downcast_ref::<wasmtime::WasmBacktrace>()
            .map(|bt| format!("\n{bt}"))
            .unwrap_or_default();
        // One line says what, where and on which object; the wasm backtrace
        // (the last field) follows on the next lines.
        tracing::error!(
            plugin = %self.name,
            call = %call,
            object = %obj.map_or_else(String::new, |o| o.key()),
            resource_version = %obj.map_or("", |o| o.resource_version()),
            backtrace = %backtrace,
            "plugin trapped: {summary}"
        );
        let on = obj.map_or_else(String::new, |o| format!(" of {}", o.key()));
        let reason = format!("{summary}\nin {call}{on}\n{err:?}");
        if let Some(tx) = &self.crash_tx {
            let _ = tx.send(CrashReport {
                plugin: self.name.clone(),
                instance: self.id(),
                reason,
            });
        }
    }
}

/// What went wrong in one line: the trap's name (`interrupt` for a deadline,
/// `call stack exhausted`, `wasm \`unreachable\` instruction executed` for a
/// panic or an allocation failure), else the root cause.
pub(super) fn trap_summary(err: &wasmtime::Error) -> String {
    let what = match err.downcast_ref::<wasmtime::Trap>() {
        Some(trap) => trap.to_string(),
        None => err.root_cause().to_string(),
    };
    what.lines().next().unwrap_or("").to_string()
}
