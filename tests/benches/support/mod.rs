//! What the dispatch and informer benchmarks share: a native handler that
//! does almost nothing, and wasm plugin instances of `bench-counter`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use wink::informer::{EventHandler, ObjRef};
use wink::runtime::instance::PluginInstance;
use wink::runtime::{Limits, WinkEngine, loader};

/// A native handler that only counts (touching the name, so the call is real).
pub struct Native(pub AtomicU64);

impl Native {
    pub fn handler() -> Arc<dyn EventHandler> {
        Arc::new(Native(AtomicU64::new(0)))
    }
}

impl EventHandler for Native {
    fn on_add(&self, obj: &ObjRef, _: bool) {
        self.0
            .fetch_add(obj.name().len() as u64 & 1 | 1, Ordering::Relaxed);
    }
    fn on_update(&self, _: &ObjRef, new: &ObjRef) {
        self.0
            .fetch_add(new.name().len() as u64 & 1 | 1, Ordering::Relaxed);
    }
    fn on_delete(&self, _: &ObjRef, _: bool) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// `n` instances of the bench-counter plugin (metadata only, or decoding
/// every Pod with k8s-openapi).
pub fn plugins(component: &std::path::Path, n: usize, decode: bool) -> Vec<Arc<dyn EventHandler>> {
    plugins_with_config(component, n, &format!(r#"{{"decode": {decode}}}"#))
}

/// `n` instances of a plugin, each started with `config`.
pub fn plugins_with_config(
    component: &std::path::Path,
    n: usize,
    config: &str,
) -> Vec<Arc<dyn EventHandler>> {
    plugins_on(WinkEngine::new().unwrap(), component, n, config)
}

/// `n` instances of a plugin compiled by `engine`, each started with `config`.
pub fn plugins_on(
    engine: WinkEngine,
    component: &std::path::Path,
    n: usize,
    config: &str,
) -> Vec<Arc<dyn EventHandler>> {
    let linker = loader::linker(&engine).unwrap();
    let loaded = loader::load(&engine, &linker, None, component).unwrap();
    (0..n)
        .map(|i| {
            let (inst, _) = PluginInstance::start(
                format!("bench-{i}").into(),
                loaded.pre.clone(),
                &engine,
                config.to_string(),
                Limits::default(),
                None,
            )
            .unwrap();
            inst as Arc<dyn EventHandler>
        })
        .collect()
}
