//! Batches in one guest entry: a listener's batch reaches a 0.4.0 plugin in
//! one `on-batch` call, with each event keeping the meaning of a call of its
//! own (a trap is reported on the event that trapped; the events after it
//! are not handled); a 0.3.0 component, which has no `on-batch`, gets one
//! call per event. No API server involved.

use crate::common;

use common::{plugin, root};
use kube::api::{ApiResource, DynamicObject};
use kube::core::GroupVersionKind;
use std::sync::Arc;
use std::time::Duration;
use wink::informer::object::{CachePolicy, CachedObject};
use wink::informer::{Notification, ObjRef};
use wink::runtime::instance::{CrashReport, PluginInstance};
use wink::runtime::{Limits, WinkEngine, loader};

fn pod(name: &str, rv: u64) -> ObjRef {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Pod"), "pods");
    let obj: DynamicObject = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                     "resourceVersion": rv.to_string()},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}
    }))
    .unwrap();
    CachedObject::from_dynamic(obj, &ar, CachePolicy::default())
}

fn add(name: &str) -> Notification {
    Notification::Add {
        obj: pod(name, 1),
        in_initial_list: false,
    }
}

type Crashes = tokio::sync::mpsc::UnboundedReceiver<CrashReport>;

fn start(path: &std::path::Path, config: &str) -> (Arc<PluginInstance>, Crashes) {
    let engine = WinkEngine::new().unwrap();
    let linker = loader::linker(&engine).unwrap();
    let loaded = loader::load(&engine, &linker, None, path).unwrap();
    let limits = Limits {
        call_deadline: Duration::from_millis(500),
        ..Limits::default()
    };
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (instance, _) = PluginInstance::start(
        "batched".into(),
        loaded.pre,
        &engine,
        config.into(),
        limits,
        Some(tx),
    )
    .unwrap();
    (instance, rx)
}

/// Adds, an update and a delete: one entry into a 0.4.0 guest, one per
/// event into a 0.3.0 one; both count every event.
#[test]
fn a_batch_is_one_entry_into_a_current_guest_and_one_per_event_into_a_0_3_0_one() {
    let batch = [
        add("a"),
        add("b"),
        Notification::Update {
            old: pod("b", 1),
            new: pod("b", 2),
        },
        Notification::Delete {
            obj: pod("a", 1),
            final_state_unknown: false,
        },
    ];
    let current = plugin("pod_logger");
    let v3 = root().join("tests/fixtures/wink-plugin-0.3.0/pod_logger.wasm");
    for (path, entries) in [(current, 1), (v3, 4)] {
        let (instance, _) = start(&path, "");
        futures::executor::block_on(instance.deliver_batch(0, &batch));
        assert_eq!(instance.traps(), 0, "{}", path.display());
        assert_eq!(instance.deliveries(), (2, 1, 1), "{}", path.display());
        assert_eq!(instance.calls(), entries, "guest entries for {}", path.display());
    }
}

/// A trap in the middle of a batch is reported on the event that trapped,
/// as a call of its own would be, and ends the instance.
#[test]
fn a_trap_in_a_batch_is_reported_on_its_event() {
    let config = r#"{"mode": "panic", "trigger": "bomb", "on": "add"}"#;
    let (instance, mut crashes) = start(&plugin("misbehave"), config);
    let batch = [add("fine"), add("other"), add("bomb"), add("after")];
    futures::executor::block_on(instance.deliver_batch(0, &batch));
    assert_eq!((instance.calls(), instance.traps()), (1, 1));
    assert!(instance.is_crashed());
    let report = crashes.try_recv().expect("a crash report");
    assert!(
        report.reason.contains("in on-add of default/bomb"),
        "{}",
        report.reason
    );
    // A loop in the last event of a batch still meets the call deadline.
    let config = r#"{"mode": "loop", "trigger": "bomb", "on": "add"}"#;
    let (instance, mut crashes) = start(&plugin("misbehave"), config);
    futures::executor::block_on(instance.deliver_batch(0, &[add("fine"), add("bomb")]));
    let report = crashes.try_recv().expect("a crash report");
    assert!(
        report.reason.lines().next() == Some("wasm trap: interrupt")
            && report.reason.contains("in on-add of default/bomb"),
        "{}",
        report.reason
    );
}
