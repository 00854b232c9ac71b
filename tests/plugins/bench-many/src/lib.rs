//! Benchmark plugin whose registration comes from its config, so that one
//! build copied beside many configs gives many different plugins:
//!
//! ```json
//! {"api_version": "v1", "kind": "Pod", "namespace": "default",
//!  "label_selector": "app=web", "updates_when": ["generation", "label:app"]}
//! ```
//!
//! `updates_when` entries: `generation`, `labels`, `annotations`,
//! `label:<key>`, `annotation:<key>`, `field:<path>`. Every field but
//! `kind` is optional (`api_version` defaults to `v1`). The plugin counts
//! each event and reads the object's name, the least a policy does.

use wink_sdk::{Change, Handler, Object, Registration, Watch};

struct Many {
    events: u64,
    name_bytes: u64,
}

impl Many {
    fn seen(&mut self, obj: &Object) {
        self.events += 1;
        self.name_bytes += obj.name().len() as u64;
    }
}

/// One `updates_when` entry of the config.
fn change(text: &str) -> Result<Change, String> {
    Ok(match text.split_once(':') {
        None if text == "generation" => Change::Generation,
        None if text == "labels" => Change::Labels,
        None if text == "annotations" => Change::Annotations,
        Some(("label", key)) => Change::Label(key.to_string()),
        Some(("annotation", key)) => Change::Annotation(key.to_string()),
        Some(("field", path)) => Change::Field(path.to_string()),
        _ => return Err(format!("unknown change {text:?}")),
    })
}

impl Handler for Many {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        let config: serde_json::Value = serde_json::from_str(config).map_err(|e| e.to_string())?;
        let text = |key: &str| config.get(key).and_then(|v| v.as_str());
        let kind = text("kind").ok_or("the config names no kind")?;
        let mut watch = Watch::new(text("api_version").unwrap_or("v1"), kind);
        if let Some(ns) = text("namespace") {
            watch = watch.namespace(ns);
        }
        if let Some(selector) = text("label_selector") {
            watch = watch.label_selector(selector);
        }
        for c in config
            .get("updates_when")
            .and_then(|v| v.as_array())
            .into_iter()
            .flatten()
        {
            watch = watch.updates_when(change(c.as_str().ok_or("updates_when holds strings")?)?);
        }
        let me = Many {
            events: 0,
            name_bytes: 0,
        };
        Ok((me, Registration::new().watch(watch)))
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

wink_sdk::export_plugin!(Many);
