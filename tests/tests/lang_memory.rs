//! End-to-end: the default limits fit Python and JavaScript plugins over a
//! long run, not only a short test. The language benchmark's plugins
//! (`tests/lang/*/bench`, reading each Pod's name and a label) are built
//! from source with the SDKs' build commands and handed 400,000 updates
//! each, under the limits `wink run` gives a plugin of their language when
//! the operator sets none. JavaScript gets its language's larger memory cap:
//! its engine collects its heap late, and under the common 64 MiB cap the
//! same plugin runs out of memory after ~200,000 events. CPython frees as
//! it goes and keeps the common cap.

use crate::common;
use crate::lang_support;
#[path = "../benches/support/pod.rs"]
mod pod;

use kube::api::{ApiResource, DynamicObject};
use kube::core::GroupVersionKind;
use lang_support::{Lang, components};
use std::path::Path;
use wink::informer::object::{CachePolicy, CachedObject};
use wink::informer::{EventHandler, ObjRef};
use wink::runtime::engine::{DEFAULT_MEMORY_BYTES, JAVASCRIPT_MEMORY_BYTES};
use wink::runtime::precompiled::Precompiled;
use wink::runtime::{Language, Limits, PluginInstance, WinkEngine, loader};

const UPDATES: usize = 400_000;

fn pods() -> Vec<ObjRef> {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Pod"), "pods");
    (0..200)
        .map(|i| {
            let obj: DynamicObject = serde_json::from_value(pod::pod_json(i, 0, 200)).unwrap();
            CachedObject::from_dynamic(obj, &ar, CachePolicy::default())
        })
        .collect()
}

/// Load `component` as `wink run` does and hand it [`UPDATES`] updates
/// under its language's default limits; the limits it got.
fn long_run(component: &Path, language: Language) -> Limits {
    let engine = WinkEngine::new().unwrap();
    let linker = loader::linker(&engine).unwrap();
    let dir = common::root().join("target/lang-tools/lang-memory-cache");
    let cache = Precompiled::open(&dir, engine.engine()).unwrap();
    let loaded = loader::load(&engine, &linker, Some(&cache), component).unwrap();
    assert_eq!(loaded.language, language, "{}", component.display());
    let limits = Limits::default().for_language(loaded.language);
    let (instance, _) = PluginInstance::start(
        loaded.name.clone(),
        loaded.pre,
        &engine,
        r#"{"mode": "meta"}"#.into(),
        limits,
        None,
    )
    .unwrap();
    let objects = pods();
    for (n, pair) in objects.windows(2).cycle().take(UPDATES).enumerate() {
        instance.on_update(&pair[0], &pair[1]);
        assert!(
            !instance.is_crashed(),
            "{language:?} plugin crashed after {n} updates under {limits:?}"
        );
    }
    assert_eq!(instance.deliveries().1, UPDATES as u64);
    limits
}

#[test]
fn python_and_javascript_plugins_run_long_under_their_default_limits() {
    let built = components(&[
        (Lang::Python, "tests/lang/python/bench"),
        (Lang::Js, "tests/lang/js/bench"),
    ]);
    let (python, javascript) = std::thread::scope(|s| {
        let python = s.spawn(|| long_run(&built[0], Language::Python));
        let javascript = long_run(&built[1], Language::JavaScript);
        (python.join().unwrap(), javascript)
    });
    assert_eq!(python.memory_bytes, DEFAULT_MEMORY_BYTES);
    assert_eq!(javascript.memory_bytes, JAVASCRIPT_MEMORY_BYTES);
}

#[test]
fn a_rust_plugin_is_known_as_rust() {
    let bytes = std::fs::read(common::plugin("bench_counter")).unwrap();
    assert_eq!(Language::of(&bytes), Language::Rust);
}
