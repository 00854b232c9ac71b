//! The plugin runtime's limits, against real misbehaving components: a
//! plugin that loops, allocates 1 GiB, panics or overflows its stack is
//! stopped by the host (deadline, memory cap, trap), reported as crashed,
//! and the host process is fine. No API server involved.

use crate::common;

use common::plugin;
use kube::api::{ApiResource, DynamicObject};
use kube::core::GroupVersionKind;
use std::sync::Arc;
use std::time::Duration;
use wink::informer::object::{CachePolicy, CachedObject};
use wink::informer::{EventHandler, ObjRef};
use wink::runtime::instance::PluginInstance;
use wink::runtime::precompiled::Precompiled;
use wink::runtime::{Limits, WinkEngine, loader};

fn pod(name: &str) -> ObjRef {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Pod"), "pods");
    let obj: DynamicObject = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"), "resourceVersion": "1"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}
    }))
    .unwrap();
    CachedObject::from_dynamic(obj, &ar, CachePolicy::default())
}

type Crashes = tokio::sync::mpsc::UnboundedReceiver<wink::runtime::instance::CrashReport>;

fn start(mode: &str) -> (Arc<PluginInstance>, Crashes) {
    start_with(mode, Duration::from_millis(200))
}

fn start_with(mode: &str, call_deadline: Duration) -> (Arc<PluginInstance>, Crashes) {
    let limits = Limits {
        call_deadline,
        ..Limits::default()
    };
    start_on(&WinkEngine::new().unwrap(), mode, limits)
}

fn start_on(engine: &WinkEngine, mode: &str, limits: Limits) -> (Arc<PluginInstance>, Crashes) {
    let linker = loader::linker(engine).unwrap();
    let loaded = loader::load(engine, &linker, None, &plugin("misbehave")).unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let config = format!(r#"{{"mode": "{mode}", "trigger": "bomb", "on": "add"}}"#);
    let (instance, registration) = PluginInstance::start(
        format!("misbehave-{mode}").into(),
        loaded.pre,
        engine,
        config,
        limits,
        Some(tx),
    )
    .unwrap();
    assert_eq!(registration.watches.len(), 1);
    (instance, rx)
}

fn assert_stopped_and_reported(mode: &str, expect_in_reason: &str) {
    let (instance, mut crashes) = start(mode);
    instance.on_add(&pod("fine"), false);
    assert_eq!(instance.traps(), 0, "a harmless event does not trap");
    instance.on_add(&pod("bomb"), false);
    assert_eq!(instance.traps(), 1, "{mode}: the bad call trapped");
    assert!(instance.is_crashed());
    let report = crashes.try_recv().expect("a crash report");
    assert!(
        report.reason.contains(expect_in_reason),
        "{mode}: reason should mention {expect_in_reason:?}: {}",
        report.reason
    );
    // The poisoned instance takes no more calls; the manager replaces it.
    instance.on_add(&pod("after"), false);
    assert_eq!(instance.calls(), 2);
}

#[test]
fn an_endless_loop_hits_the_call_deadline() {
    assert_stopped_and_reported("loop", "interrupt");
}

#[test]
fn an_endless_loop_started_while_the_epoch_ticker_sleeps_hits_the_call_deadline() {
    let (instance, mut crashes) = start("loop");
    let waited = std::time::Instant::now();
    while !instance.engine().ticker_is_parked() {
        assert!(
            waited.elapsed() < Duration::from_secs(10),
            "the ticker never parked"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    // The call has to wake the ticker, or nothing ever interrupts it.
    let call = {
        let instance = instance.clone();
        std::thread::spawn(move || instance.on_add(&pod("bomb"), false))
    };
    let waited = std::time::Instant::now();
    while !call.is_finished() {
        assert!(
            waited.elapsed() < Duration::from_secs(30),
            "the loop was never interrupted"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    call.join().unwrap();
    assert_eq!(instance.traps(), 1);
    let report = crashes.try_recv().expect("a crash report");
    assert!(report.reason.contains("interrupt"), "{}", report.reason);
}

/// On the metered engine, a loop under a fuel cap is stopped by its fuel,
/// not its (long) deadline; and every call starts with the whole cap: ten
/// thousand harmless calls, together far past it, all run.
#[test]
fn an_endless_loop_under_a_fuel_cap_runs_out_of_fuel() {
    let limits = Limits {
        call_deadline: Duration::from_secs(60),
        fuel: Some(2_000_000),
        ..Limits::default()
    };
    let (instance, mut crashes) = start_on(&WinkEngine::metered().unwrap(), "loop", limits);
    for i in 0..10_000 {
        instance.on_add(&pod(&format!("fine-{i}")), false);
    }
    assert_eq!(instance.traps(), 0, "each call gets the whole cap again");
    instance.on_add(&pod("bomb"), false);
    assert_eq!(instance.traps(), 1, "the loop was stopped");
    let report = crashes.try_recv().expect("a crash report");
    assert!(
        report.reason.contains("all fuel consumed"),
        "its fuel stopped it, not its deadline: {}",
        report.reason
    );
}

#[test]
fn allocating_a_gibibyte_hits_the_memory_cap() {
    assert_stopped_and_reported("alloc", "unreachable");
}

#[test]
fn a_panic_traps() {
    assert_stopped_and_reported("panic", "unreachable");
}

#[test]
fn a_stack_overflow_traps() {
    assert_stopped_and_reported("stack", "stack");
}

#[test]
fn a_plugin_that_keeps_every_object_handle_hits_the_handle_cap() {
    let (instance, mut crashes) = start_with("leak", Duration::from_secs(60));
    let store = wink::informer::store::Writer::new();
    for i in 0..64 {
        store.upsert(pod(&format!("p{i}")));
    }
    instance.cache_scope().grant("v1", "Pod", store.reader());
    instance.on_add(&pod("fine"), false);
    assert_eq!(instance.traps(), 0);
    instance.on_add(&pod("bomb"), false);
    assert_eq!(instance.traps(), 1, "the leak was stopped");
    let report = crashes.try_recv().expect("a crash report");
    assert!(
        report.reason.contains(&format!(
            "holds {} object handles",
            wink::runtime::capabilities::MAX_HANDLES
        )),
        "the handle cap stopped it, not another limit: {}",
        report.reason
    );
}

#[test]
fn compile_cache_hits_on_the_second_load_of_an_unchanged_component() {
    let engine = WinkEngine::new().unwrap();
    let linker = loader::linker(&engine).unwrap();
    let dir = common::scratch("compile_cache_hits");
    let cache = Precompiled::open(&dir, engine.engine()).unwrap();
    let first = loader::load(&engine, &linker, Some(&cache), &plugin("pod_logger")).unwrap();
    let second = loader::load(&engine, &linker, Some(&cache), &plugin("pod_logger")).unwrap();
    assert!(!first.cache_hit);
    assert!(second.cache_hit);
    assert_eq!((cache.hits(), cache.misses()), (1, 1));
    assert_eq!(first.digest, second.digest);
}
