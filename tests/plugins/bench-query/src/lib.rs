//! Benchmark plugin for cache queries from inside the sandbox: reads Pods
//! with the label indexes `one`, `ten` and `hundred`; when an object with the
//! label `bench-op` arrives (`on_add`), it runs that query `bench-iters` times
//! in a loop and checks every answer has `bench-expect` objects (a wrong
//! answer panics, which the host sees as a trap):
//!
//! - `bench-op: get`, `bench-key: NAMESPACE.NAME` (a label value cannot hold
//!   `/`; the dot is replaced) — `cache::get_object`;
//! - `bench-op: by-index`, `bench-index: ten`, `bench-value: v-3` —
//!   `cache::by_index_objects`;
//! - `bench-op: index-keys`, same labels — `cache::index_keys` (keys only).
//!
//! Each answer's metadata is read (name length), its JSON is not parsed.
//! The loop is timed with `std::time::Instant` (WASI clocks) and printed as
//! `bench-query OP ITERS NS_PER_CALL`.

use std::time::Instant;
use wink_sdk::cache;
use wink_sdk::{Handler, IndexBy, Object, Registration, Resource, Watch};

struct BenchQuery {
    pods: Resource,
}

impl BenchQuery {
    fn run(&self, obj: &Object) {
        let Some(op) = obj.label("bench-op") else { return };
        let iters: u64 = obj.label("bench-iters").and_then(|n| n.parse().ok()).unwrap_or(1);
        let expect: usize = obj
            .label("bench-expect")
            .and_then(|n| n.parse().ok())
            .unwrap_or(1);
        let start = Instant::now();
        match op {
            "get" => {
                let key = obj.label("bench-key").unwrap_or_default().replacen('.', "/", 1);
                for _ in 0..iters {
                    let found = cache::get_object(&self.pods, &key).expect("get answers");
                    let found = found.expect("the object is cached");
                    std::hint::black_box(found.name().len());
                }
            }
            "by-index" => {
                let index = obj.label("bench-index").unwrap_or_default();
                let value = obj.label("bench-value").unwrap_or_default();
                for _ in 0..iters {
                    let found = cache::by_index_objects(&self.pods, index, value).expect("by-index answers");
                    assert_eq!(found.len(), expect, "by-index {index}={value}");
                    std::hint::black_box(found.iter().map(|o| o.name().len()).sum::<usize>());
                }
            }
            "index-keys" => {
                let index = obj.label("bench-index").unwrap_or_default();
                let value = obj.label("bench-value").unwrap_or_default();
                for _ in 0..iters {
                    let keys = cache::index_keys(&self.pods, index, value).expect("index-keys answers");
                    assert_eq!(keys.len(), expect, "index-keys {index}={value}");
                    std::hint::black_box(keys.iter().map(String::len).sum::<usize>());
                }
            }
            _ => {}
        }
        let elapsed = start.elapsed();
        let per_call = if iters == 0 {
            0
        } else {
            elapsed.as_nanos() / u128::from(iters)
        };
        println!("bench-query {op} {iters} {per_call}");
    }
}

impl Handler for BenchQuery {
    fn init(_config: &str) -> Result<(Self, Registration), String> {
        let pods = Watch::new("v1", "Pod")
            .index("one", IndexBy::Label("one".into()))
            .index("ten", IndexBy::Label("ten".into()))
            .index("hundred", IndexBy::Label("hundred".into()));
        let registration = Registration::new()
            .watch(Watch::new("v1", "ConfigMap"))
            .read(pods);
        let me = BenchQuery {
            pods: Resource::new("v1", "Pod"),
        };
        Ok((me, registration))
    }

    fn on_add(&mut self, obj: &Object, _in_initial_list: bool) {
        self.run(obj);
    }
}

wink_sdk::export_plugin!(BenchQuery);
