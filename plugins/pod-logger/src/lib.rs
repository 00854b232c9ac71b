//! The seeds' `myinformer` as a wink plugin: logs every pod event.
//!
//! Config (`pod-logger.json` beside the component, optional):
//! `{"tag": "second"}` prints `OnAdd:second <name>` like the seeds' second
//! handler on the same informer; `{"namespace": "default"}` narrows the watch;
//! `{"tag": "t", "instance_id": true}` prints `OnAdd:t#<random id> <name>`,
//! so tests can tell two instances of the same component and config apart.

use wink_sdk::serde_json;
use wink_sdk::{Handler, Object, Registration, Watch};

struct PodLogger {
    prefix: String,
}

impl Handler for PodLogger {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        let config: serde_json::Value = if config.trim().is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::from_str(config).map_err(|e| format!("bad config: {e}"))?
        };
        let tag = config.get("tag").and_then(|t| t.as_str());
        let mut watch = Watch::new("v1", "Pod");
        if let Some(ns) = config.get("namespace").and_then(|n| n.as_str()) {
            watch = watch.namespace(ns);
        }
        // "OnAdd: pod0" for the first handler, "OnAdd:second pod0" for a tagged one.
        let prefix = match tag {
            Some(tag) if config.get("instance_id").and_then(|b| b.as_bool()) == Some(true) => {
                format!("{tag}#{} ", random_id())
            }
            Some(tag) => format!("{tag} "),
            None => " ".to_string(),
        };
        Ok((PodLogger { prefix }, Registration::new().watch(watch)))
    }

    fn on_add(&mut self, obj: &Object, _in_initial_list: bool) {
        println!("OnAdd:{}{}", self.prefix, obj.name());
    }

    fn on_update(&mut self, _old: &Object, new: &Object) {
        println!("OnUpdate:{}{}", self.prefix, new.name());
    }

    fn on_delete(&mut self, obj: &Object, _final_state_unknown: bool) {
        println!("OnDelete:{}{}", self.prefix, obj.name());
    }
}

/// A random id from WASI's random source (through std's hash seeds).
fn random_id() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u8(0);
    h.finish() as u32
}

wink_sdk::export_plugin!(PodLogger);
