//! Cache query benchmark: guest-side `get` and `by-index` against a
//! host store of 10,000 and 100,000 pods, answers of 1, 10 and 100 objects.
//!
//! The `bench-query` plugin runs one query N times in a loop inside wasm when
//! a trigger object is delivered (checking every answer's size; a wrong
//! answer traps). The cost per call is the wall time of that delivery minus
//! the wall time of an empty delivery (N = 0), divided by N; each figure is
//! the median of several runs. Pods carry only metadata and a small spec, and
//! the plugin reads only metadata (no JSON parsing), as in the goals.
//! For reference the native `Store` call (no sandbox crossing) is timed too,
//! and `index-keys` (keys only, one string per answer) beside `by-index`.
//! Run: `cargo bench -p wink-e2e --bench cache_query`.

#[path = "../tests/common/mod.rs"]
mod common;

use kube::api::{ApiResource, DynamicObject};
use kube::core::GroupVersionKind;
use std::time::{Duration, Instant};
use wink::informer::index::IndexSpec;
use wink::informer::object::{CachePolicy, CachedObject};
use wink::informer::store::Writer;
use wink::informer::{ObjRef, Store};
use wink::runtime::instance::PluginInstance;
use wink::runtime::{Limits, WinkEngine, loader};

const RUNS: usize = 7;

fn object(kind: &str, plural: &str, v: serde_json::Value) -> ObjRef {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", kind), plural);
    let obj: DynamicObject = serde_json::from_value(v).unwrap();
    CachedObject::from_dynamic(obj, &ar, CachePolicy::default())
}

/// Pod `i`: indexed under `one` = i, `ten` = i / 10, `hundred` = i / 100.
fn pod(i: usize) -> ObjRef {
    object(
        "Pod",
        "pods",
        serde_json::json!({
            "metadata": {"name": format!("pod-{i}"), "namespace": format!("ns-{}", i % 10),
                "uid": format!("uid-{i}"), "resourceVersion": format!("{}", i + 1),
                "labels": {"app": format!("app-{}", i % 50), "one": format!("v-{i}"),
                    "ten": format!("v-{}", i / 10), "hundred": format!("v-{}", i / 100)}},
            "spec": {"nodeName": format!("node-{}", i % 20)},
        }),
    )
}

fn store(pods: usize) -> Store {
    let writer = Writer::new();
    for name in ["one", "ten", "hundred"] {
        writer
            .add_index(name, IndexSpec::Label(name.into()).func())
            .unwrap();
    }
    for i in 0..pods {
        writer.upsert(pod(i));
    }
    writer.reader()
}

/// A trigger object asking the plugin for `iters` runs of one query.
fn trigger(labels: &[(&str, String)], iters: u64) -> ObjRef {
    let mut l: serde_json::Map<String, serde_json::Value> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone().into()))
        .collect();
    l.insert("bench-iters".into(), iters.to_string().into());
    object(
        "ConfigMap",
        "configmaps",
        serde_json::json!({"metadata": {"name": "trigger", "namespace": "bench", "uid": "t",
            "resourceVersion": "1", "labels": l}}),
    )
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// ns per guest call of the query described by `labels`.
fn guest_ns(instance: &PluginInstance, labels: &[(&str, String)], iters: u64) -> f64 {
    use wink::informer::EventHandler;
    let (empty, full) = (trigger(labels, 0), trigger(labels, iters));
    let time = |t: &ObjRef| {
        let start = Instant::now();
        instance.on_add(t, false);
        start.elapsed()
    };
    // Warm up (first calls grow the guest's heap).
    time(&full);
    let per_call = (0..RUNS)
        .map(|_| {
            let base = time(&empty);
            let total = time(&full);
            total.saturating_sub(base).as_nanos() as f64 / iters as f64
        })
        .collect();
    assert_eq!(
        instance.traps(),
        0,
        "the plugin trapped: a wrong answer ({labels:?})"
    );
    median(per_call)
}

/// ns per native store call.
fn native_ns(iters: u64, mut f: impl FnMut() -> usize) -> f64 {
    let per_call = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..iters {
                std::hint::black_box(f());
            }
            start.elapsed().as_nanos() as f64 / iters as f64
        })
        .collect();
    median(per_call)
}

struct Case {
    name: &'static str,
    answer: usize,
    iters: u64,
}

const CASES: [Case; 6] = [
    Case {
        name: "get",
        answer: 1,
        iters: 100_000,
    },
    Case {
        name: "by-index",
        answer: 1,
        iters: 100_000,
    },
    Case {
        name: "by-index",
        answer: 10,
        iters: 20_000,
    },
    Case {
        name: "by-index",
        answer: 100,
        iters: 2_000,
    },
    Case {
        name: "index-keys",
        answer: 10,
        iters: 50_000,
    },
    Case {
        name: "index-keys",
        answer: 100,
        iters: 10_000,
    },
];

fn labels(case: &Case, pods: usize) -> Vec<(&'static str, String)> {
    // A pod in the middle of the cache.
    let i = pods / 2 + 7;
    match (case.name, case.answer) {
        ("get", _) => vec![
            ("bench-op", "get".into()),
            ("bench-key", format!("ns-{}.pod-{i}", i % 10)),
        ],
        (_, n) => {
            let index = match n {
                1 => "one",
                10 => "ten",
                _ => "hundred",
            };
            vec![
                ("bench-op", case.name.into()),
                ("bench-index", index.into()),
                ("bench-value", format!("v-{}", i / n)),
                ("bench-expect", n.to_string()),
            ]
        }
    }
}

fn native(case: &Case, pods: usize, store: &Store) -> f64 {
    let l = labels(case, pods);
    let get = |k: &str| l.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone()).unwrap();
    if case.name == "get" {
        let key = get("bench-key").replacen('.', "/", 1);
        native_ns(case.iters, || store.get(&key).map_or(0, |o| o.name().len()))
    } else if case.name == "by-index" {
        let (index, value) = (get("bench-index"), get("bench-value"));
        native_ns(case.iters, || store.by_index(&index, &value).unwrap().len())
    } else {
        let (index, value) = (get("bench-index"), get("bench-value"));
        native_ns(case.iters, || store.index_keys(&index, &value).unwrap().len())
    }
}

fn main() {
    let engine = WinkEngine::new().unwrap();
    let linker = loader::linker(&engine).unwrap();
    let loaded = loader::load(&engine, &linker, None, &common::plugin("bench_query")).unwrap();
    let limits = Limits {
        call_deadline: Duration::from_secs(60),
        ..Limits::default()
    };
    let sizes = [10_000, 100_000];
    let mut rows: Vec<Vec<f64>> = vec![Vec::new(); CASES.len()];
    let mut json_bytes = 0;
    for pods in sizes {
        let started = Instant::now();
        let store = store(pods);
        json_bytes = store.get("ns-0/pod-0").unwrap().json_len();
        eprintln!("{pods} pods cached in {:?}", started.elapsed());
        let (instance, _) = PluginInstance::start(
            "bench-query".into(),
            loaded.pre.clone(),
            &engine,
            String::new(),
            limits,
            None,
        )
        .unwrap();
        instance.cache_scope().grant("v1", "Pod", store.clone());
        for (case, row) in CASES.iter().zip(rows.iter_mut()) {
            row.push(guest_ns(&instance, &labels(case, pods), case.iters));
            row.push(native(case, pods, &store));
        }
    }
    println!("pods: metadata + spec.nodeName, {json_bytes} B of JSON each; median of {RUNS} runs");
    println!(
        "| query | answer | guest ns/call, 10k pods | guest ns/call, 100k pods | native store ns/call, 10k | 100k |"
    );
    println!("|---|---|---|---|---|---|");
    for (case, row) in CASES.iter().zip(&rows) {
        println!(
            "| {} | {} | {:.0} | {:.0} | {:.0} | {:.0} |",
            case.name, case.answer, row[0], row[2], row[1], row[3]
        );
    }
    let goal = |v: f64, limit: f64| if v <= limit { "met" } else { "NOT met" };
    println!(
        "goals at 100k: get {:.0} ns (<= 1000: {}), by-index of 10 {:.0} ns (<= 3000: {})",
        rows[0][2],
        goal(rows[0][2], 1000.0),
        rows[2][2],
        goal(rows[2][2], 3000.0)
    );
}
