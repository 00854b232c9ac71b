//! Decode benchmark: what reading one watch event costs, by what it is
//! decoded into, in ns per event (best of 3 passes of 200,000), for a 1 KiB
//! ConfigMap carrying `managedFields` (as the paced benchmark's) and a
//! real-world Pod (coredns):
//!   - capture: serde_json finding where the object ends and checking it
//!     (what any decode that keeps the object's text pays first);
//!   - `RawObject`: wink's (the text, plus the metadata read in one pass);
//!   - `WatchEvent<RawObject>`: a watch line, as kube-runtime's watcher
//!     parses it for wink;
//!   - `WatchEvent<DynamicObject>`: the same line for kube-runtime's
//!     reflector (a `serde_json::Value` tree);
//!   - `serde_json::Value`: the object as a tree.
//!
//! Run: `cargo bench -p wink-e2e --bench decode`.

use kube::api::DynamicObject;
use kube::core::WatchEvent;
use serde::de::IgnoredAny;
use serde_json::json;
use std::hint::black_box;
use std::time::Instant;
use wink::informer::object::RawObject;

const PASSES: usize = 3;
const DECODES: usize = 200_000;

/// ns per call of `f` on `text`, the best of [`PASSES`].
fn ns<T>(text: &str, f: impl Fn(&str) -> T) -> f64 {
    (0..PASSES)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..DECODES {
                black_box(f(black_box(text)));
            }
            start.elapsed().as_nanos() as f64 / DECODES as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn config_map() -> String {
    let payload: String = (0..1024).map(|i| (b'a' + (i * 7 % 26) as u8) as char).collect();
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm-000123", "namespace": "default",
            "uid": "3c0b8f5e-1f7a-4c7e-9a5e-2f6f1b7c9d10", "resourceVersion": "123456",
            "creationTimestamp": "2026-11-24T06:00:00Z",
            "labels": {"app": "bench", "shard": "s3", "version": "v123"},
            "managedFields": [{"manager": "paced-writer", "operation": "Update", "apiVersion": "v1",
                "time": "2026-11-24T06:00:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {".": {}, "f:payload": {}},
                    "f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:shard": {}, "f:version": {}}}}}]},
        "data": {"payload": payload}})
    .to_string()
}

fn main() {
    let pod: serde_json::Value = serde_json::from_str(include_str!("support/coredns-pod.json")).unwrap();
    println!(
        "| object | JSON bytes | capture | RawObject | WatchEvent<RawObject> | WatchEvent<DynamicObject> | serde_json::Value | DynamicObject / RawObject event |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (what, text) in [
        ("ConfigMap, 1 KiB + managedFields", config_map()),
        ("Pod (coredns)", pod.to_string()),
    ] {
        let line = format!(r#"{{"type":"MODIFIED","object":{text}}}"#);
        let capture = ns(&text, |t| serde_json::from_str::<IgnoredAny>(t).unwrap());
        let raw = ns(&text, |t| serde_json::from_str::<RawObject>(t).unwrap());
        let raw_event = ns(&line, |l| {
            serde_json::from_str::<WatchEvent<RawObject>>(l).unwrap()
        });
        let dynamic_event = ns(&line, |l| {
            serde_json::from_str::<WatchEvent<DynamicObject>>(l).unwrap()
        });
        let value = ns(&text, |t| serde_json::from_str::<serde_json::Value>(t).unwrap());
        println!(
            "| {what} | {} | {capture:.0} | {raw:.0} | {raw_event:.0} | {dynamic_event:.0} | {value:.0} | {:.2} |",
            text.len(),
            dynamic_event / raw_event
        );
    }
}
