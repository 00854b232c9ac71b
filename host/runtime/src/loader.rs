//! The component loader: turns a file into a checked, instantiable plugin
//! component, or into one clear error naming the file and the reason.
//!
//! Owns compiling and type-checking against the `plugin` world of the
//! contract version the component was built against (imports satisfiable,
//! exports present); files are read through
//! [`plugin_file`](super::plugin_file). Only the binary component format is
//! accepted. It never runs guest code.

use super::bindings::{PluginPre, v3};
use super::capabilities::HostState;
use super::engine::WinkEngine;
use super::language::Language;
use super::plugin_file::{self, FileError};
use super::precompiled::Precompiled;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use wasmtime::component::{Component, HasSelf, Linker};

/// Why a file could not become a plugin.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error("{path}: not a valid WebAssembly component: {reason}")]
    NotAComponent { path: PathBuf, reason: String },
    #[error(
        "{path}: not a wink:plugin@{CONTRACT_VERSION} (or @{PREVIOUS_CONTRACT_VERSION}) component: {reason}"
    )]
    WrongWorld { path: PathBuf, reason: String },
}

/// A compiled, type-checked plugin component ready to instantiate.
#[derive(Clone)]
pub struct LoadedComponent {
    pub path: PathBuf,
    pub name: Arc<str>,
    pub pre: ComponentPre,
    /// BLAKE3 of the file's bytes, hex (as `b3sum` prints it).
    pub digest: String,
    /// Whether the compiled code came from the precompiled directory (logged
    /// as `cache_hit`).
    pub cache_hit: bool,
    /// What it was written in (its limits may depend on it).
    pub language: Language,
}

/// A component ready to instantiate, by the contract version it was built
/// against.
#[derive(Clone)]
pub enum ComponentPre {
    /// `wink:plugin@0.4.0`.
    Current(PluginPre<HostState>),
    /// `wink:plugin@0.3.0`, served through [`crate::compat`].
    V3(v3::PluginPre<HostState>),
}

impl ComponentPre {
    /// The compiled component.
    pub fn component(&self) -> &Component {
        match self {
            ComponentPre::Current(p) => p.instance_pre().component(),
            ComponentPre::V3(p) => p.instance_pre().component(),
        }
    }

    /// The contract version it was built against.
    pub fn contract(&self) -> &'static str {
        match self {
            ComponentPre::Current(_) => CONTRACT_VERSION,
            ComponentPre::V3(_) => PREVIOUS_CONTRACT_VERSION,
        }
    }
}

/// The linker every plugin is instantiated with: WASI p2 (closed by the
/// per-Store context) plus the imports of both contract versions served.
pub fn linker(engine: &WinkEngine) -> anyhow::Result<Linker<HostState>> {
    let mut linker = Linker::new(engine.engine());
    // WASI asynchronously: its host calls then await instead of entering a
    // runtime of their own, on whatever thread the guest runs.
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    super::bindings::Plugin::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)?;
    v3::Plugin::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)?;
    Ok(linker)
}

/// The BLAKE3 of a component's bytes, hex (as `b3sum` prints it): its
/// identity for reloads and its key in the precompiled directory. A
/// cryptographic hash that reads 5 GB/s here, where sha256 reads 1.3 GB/s:
/// a 17 MiB Python component hashes in 3 ms instead of 13.
pub fn digest(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

fn chain(e: &wasmtime::Error) -> String {
    format!("{e:#}")
}

/// Load one component file: read (checked and capped), compile, check the world.
pub fn load(
    engine: &WinkEngine,
    linker: &Linker<HostState>,
    precompiled: Option<&Precompiled>,
    path: &Path,
) -> Result<LoadedComponent, LoadError> {
    let bytes = plugin_file::read_regular(path, plugin_file::MAX_COMPONENT_BYTES, "component")?;
    load_bytes(engine, linker, precompiled, path, &bytes)
}

/// Load a component from bytes already read from `path`.
pub fn load_bytes(
    engine: &WinkEngine,
    linker: &Linker<HostState>,
    precompiled: Option<&Precompiled>,
    path: &Path,
    bytes: &[u8],
) -> Result<LoadedComponent, LoadError> {
    load_digested(engine, linker, precompiled, path, bytes, digest(bytes))
}

/// [`load_bytes`] for a caller that already has the bytes' [`digest`] (the
/// digest of a large component is worth computing once per load).
pub fn load_digested(
    engine: &WinkEngine,
    linker: &Linker<HostState>,
    precompiled: Option<&Precompiled>,
    path: &Path,
    bytes: &[u8],
    digest: String,
) -> Result<LoadedComponent, LoadError> {
    let not_component = |reason: String| LoadError::NotAComponent {
        path: path.to_path_buf(),
        reason,
    };
    let name = plugin_file::plugin_name(path)?;
    if !bytes.starts_with(b"\0asm") {
        // wasmtime would also take WebAssembly text; a plugin is a binary.
        return Err(not_component(
            "it does not start with the binary `\\0asm` header (only binary components are accepted)".into(),
        ));
    }
    if wasmparser_is_core_module(bytes) {
        return Err(not_component(
            "this is a core wasm module, not a component (build with --target wasm32-wasip2)".into(),
        ));
    }
    // Compiling takes seconds for a large component (Python, JS): say so
    // before, and how long it took after.
    let compiles = precompiled.is_none_or(|dir| !dir.contains(&digest));
    let started = std::time::Instant::now();
    if compiles {
        let (kib, compiler) = (bytes.len() >> 10, engine.compiler());
        tracing::info!(plugin = %name, kib, ?compiler, "compiling the plugin's component");
    }
    let (component, cache_hit) = match precompiled {
        Some(dir) => dir.component(engine.engine(), bytes, &digest),
        None => Component::from_binary(engine.engine(), bytes).map(|c| (c, false)),
    }
    .map_err(|e| not_component(chain(&e)))?;
    if compiles {
        let compile_ms = started.elapsed().as_millis() as u64;
        tracing::info!(plugin = %name, compile_ms, "compiled the plugin's component in {compile_ms} ms");
    }
    let wrong_world = |reason: String| LoadError::WrongWorld {
        path: path.to_path_buf(),
        reason,
    };
    let version = contract_version(&component, engine);
    if let Some(other) = version
        .as_deref()
        .filter(|v| ![CONTRACT_VERSION, PREVIOUS_CONTRACT_VERSION].contains(v))
    {
        return Err(wrong_world(format!(
            "it was built against wink:plugin@{other}; this host serves wink:plugin@{CONTRACT_VERSION} \
             and @{PREVIOUS_CONTRACT_VERSION}: rebuild it with a wink-sdk for {CONTRACT_VERSION} \
             (cargo build --release --target wasm32-wasip2)"
        )));
    }
    let pre = linker
        .instantiate_pre(&component)
        .map_err(|e| wrong_world(chain(&e)))?;
    let pre = if version.as_deref() == Some(PREVIOUS_CONTRACT_VERSION) {
        ComponentPre::V3(v3::PluginPre::new(pre).map_err(|e| wrong_world(chain(&e)))?)
    } else {
        ComponentPre::Current(PluginPre::new(pre).map_err(|e| wrong_world(chain(&e)))?)
    };
    Ok(LoadedComponent {
        path: path.to_path_buf(),
        name: name.into(),
        pre,
        digest,
        cache_hit,
        language: Language::of(bytes),
    })
}

/// The version of the `wink:plugin` package this host serves.
pub const CONTRACT_VERSION: &str = "0.4.0";

/// The previous minor version, which this host serves too.
pub const PREVIOUS_CONTRACT_VERSION: &str = "0.3.0";

/// The `wink:plugin` version a component was built against, from the names
/// of its imports and exports (`wink:plugin/handler@0.2.0`).
fn contract_version(component: &Component, engine: &WinkEngine) -> Option<String> {
    let ty = component.component_type();
    let engine = engine.engine();
    let names = ty
        .imports(engine)
        .map(|(name, _)| name.to_string())
        .chain(ty.exports(engine).map(|(name, _)| name.to_string()));
    names
        .filter_map(|name| {
            name.strip_prefix("wink:plugin/")?
                .split_once('@')
                .map(|(_, v)| v.to_string())
        })
        .next()
}

/// Whether a component imports the `report` interface (it gives policy
/// results, so the report writer waits for it).
pub fn imports_report(pre: &ComponentPre, engine: &WinkEngine) -> bool {
    let component = pre.component();
    let names: Vec<String> = component
        .component_type()
        .imports(engine.engine())
        .map(|(name, _)| name.to_string())
        .collect();
    names.iter().any(|n| n.starts_with("wink:plugin/report@"))
}

/// A core module starts with the wasm magic and version 1; a component with
/// the magic and a layer-1 version.
fn wasmparser_is_core_module(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && bytes[0..4] == *b"\0asm" && bytes[4..8] == [1, 0, 0, 0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_component_of_another_contract_version_is_refused_naming_both() {
        let engine = WinkEngine::new().unwrap();
        let linker = linker(&engine).unwrap();
        let old = wat::parse_str(r#"(component (import "wink:plugin/log@0.2.0" (instance)))"#).unwrap();
        let err = load_bytes(&engine, &linker, None, Path::new("/p/old.wasm"), &old)
            .err()
            .expect("refused")
            .to_string();
        assert!(err.contains("built against wink:plugin@0.2.0"), "{err}");
        assert!(
            err.contains("this host serves wink:plugin@0.4.0 and @0.3.0"),
            "{err}"
        );
        assert!(err.contains("rebuild"), "{err}");
    }

    #[test]
    fn text_is_not_a_component() {
        let engine = WinkEngine::new().unwrap();
        let linker = linker(&engine).unwrap();
        let err = load_bytes(&engine, &linker, None, Path::new("/p/t.wasm"), b"(component)")
            .err()
            .expect("refused")
            .to_string();
        assert!(err.contains("only binary components are accepted"), "{err}");
    }
}
