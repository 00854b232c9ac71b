//! The seeds' `myinformer` as a wink plugin: logs every pod event.
//!
//! Config (`pod-logger.json` beside the component, optional):
//! `{"tag": "second"}` prints `OnAdd:second <name>` like the seeds' second
//! handler on the same informer; `{"namespace": "default"}` narrows the watch.

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

wink_sdk::export_plugin!(PodLogger);
