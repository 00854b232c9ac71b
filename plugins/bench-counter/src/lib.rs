//! Benchmark plugin. Counts every pod event; with `{"decode": true}` it also
//! decodes each object into `k8s_openapi::api::core::v1::Pod`. When it sees a
//! pod named `bench-end` it prints `bench-done <events>`. With
//! `{"read_name": false}` it reads nothing at all (only counts), which
//! measures the bare cost of a delivery.

use k8s_openapi::api::core::v1::Pod;
use wink_sdk::{Handler, Object, Registration, Watch};

struct Counter {
    decode: bool,
    read_name: bool,
    events: u64,
    containers: u64,
}

impl Counter {
    fn seen(&mut self, obj: &Object) {
        self.events += 1;
        if self.decode {
            let pod: Pod = obj.decode().expect("a pod decodes");
            self.containers += pod.spec.map_or(0, |s| s.containers.len() as u64);
        }
        if self.read_name && obj.name() == "bench-end" {
            println!("bench-done {} {}", self.events, self.containers);
        }
    }
}

impl Handler for Counter {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        let config = match config.trim() {
            "" => serde_json::Value::Null,
            text => serde_json::from_str::<serde_json::Value>(text).map_err(|e| e.to_string())?,
        };
        let flag = |key: &str, default: bool| config.get(key).and_then(|d| d.as_bool()).unwrap_or(default);
        let me = Counter {
            decode: flag("decode", false),
            read_name: flag("read_name", true),
            events: 0,
            containers: 0,
        };
        Ok((me, Registration::new().watch(Watch::new("v1", "Pod"))))
    }

    fn on_add(&mut self, obj: &Object, _in_initial_list: bool) {
        self.seen(obj)
    }

    fn on_update(&mut self, _old: &Object, new: &Object) {
        self.seen(new)
    }

    fn on_delete(&mut self, obj: &Object, _final_state_unknown: bool) {
        self.seen(obj)
    }
}

wink_sdk::export_plugin!(Counter);
