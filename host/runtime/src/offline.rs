//! Registrations read without a cluster: each component of a plugin
//! directory compiled (Winch, fast), instantiated once and its `init`
//! called, for what it declares (`wink manifests`). Nothing is delivered
//! and nothing reaches an API server.

use super::bindings::types::Registration;
use super::engine::{Compiler, Limits, WinkEngine};
use super::instance::PluginInstance;
use super::{loader, plugin_file};
use std::path::Path;

/// What a plugin declares, read offline.
pub struct Declaration {
    pub name: String,
    pub registration: Registration,
    /// Whether it imports `report` (gives policy results).
    pub reports: bool,
}

/// Every plugin of `dir` with its registration; a component that does not
/// load or whose `init` refuses is an error naming it.
pub fn registrations(dir: &Path) -> anyhow::Result<Vec<Declaration>> {
    let engine = WinkEngine::with_compiler(Compiler::Winch)?;
    let linker = loader::linker(&engine)?;
    let mut out = Vec::new();
    for path in plugin_file::component_files(dir)? {
        let files = plugin_file::read_plugin(&path)?;
        let loaded = loader::load_bytes(&engine, &linker, None, &path, &files.component)?;
        let reports = loader::imports_report(&loaded.pre, &engine);
        let (_, registration) = PluginInstance::start(
            loaded.name.clone(),
            loaded.pre,
            &engine,
            files.config,
            Limits::default().for_language(loaded.language),
            None,
        )?;
        out.push(Declaration {
            name: files.name,
            registration,
            reports,
        });
    }
    Ok(out)
}
