//! A test plugin for the cache's scope and errors: it registers exactly the
//! watches and reads its config names, and when an object named `trigger`
//! arrives (added, of any watched kind) it runs the configured cache queries
//! and prints one line per query, then `probe done`.
//!
//! ```json
//! {
//!   "watches": [{"api_version": "v1", "kind": "ConfigMap", "indexes": {"app": "label:app"}}],
//!   "reads": [{"api_version": "v1", "kind": "Secret"}],
//!   "trigger": "probe",
//!   "queries": [
//!     {"op": "get", "api_version": "v1", "kind": "Secret", "key": "default/s1"},
//!     {"op": "list", "api_version": "v1", "kind": "Secret", "namespace": "default", "selector": "a=b"},
//!     {"op": "first", "api_version": "v1", "kind": "Secret", "namespace": "default", "selector": "a=b"},
//!     {"op": "by-index", "api_version": "v1", "kind": "ConfigMap", "index": "app", "value": "web"},
//!     {"op": "index-keys", "api_version": "v1", "kind": "ConfigMap", "index": "app", "value": "web"},
//!     {"op": "list-index-values", "api_version": "v1", "kind": "ConfigMap", "index": "app"}
//!   ]
//! }
//! ```
//!
//! Registration options: `"name"` (the declared plugin name),
//! `"deliver_while_listing": true`, a watch's `"updates_when"` (a list of
//! `generation`, `labels`, `annotations`, `label:KEY`, `annotation:KEY`,
//! `field:PATH`). With `"log_events": true` every delivery prints
//! `event add KEY watch=N initial=B`, `event update KEY watch=N`,
//! `event delete KEY watch=N`, and `on_synced` prints `synced`. With
//! `"spin_ms": N` every delivery first spins (a busy loop, no host call but
//! the clock) for N milliseconds: a plugin that burns CPU on every event.
//!
//! Index specs: `label:KEY`, `annotation:KEY`, `owner-uid`, `owner-kind-name`,
//! `field:PATH`. Each result line is `query N OP KIND: ok [keys]` or
//! `query N OP KIND: error VARIANT: message`, where VARIANT is the WIT name of
//! the `cache-error` case the host returned.

use serde_json::Value;
use wink_sdk::cache::{self, CacheError};
use wink_sdk::{Change, Handler, IndexBy, Object, Registration, Resource, Watch};

struct Probe {
    trigger: String,
    queries: Vec<Value>,
    log_events: bool,
    spin: std::time::Duration,
}

impl Probe {
    /// Burn CPU for the configured time.
    fn spin(&self) {
        let start = std::time::Instant::now();
        let mut x: u64 = 0;
        while start.elapsed() < self.spin {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
    }
}

fn change(spec: &str) -> Result<Change, String> {
    Ok(match spec.split_once(':') {
        Some(("label", k)) => Change::Label(k.into()),
        Some(("annotation", k)) => Change::Annotation(k.into()),
        Some(("field", p)) => Change::Field(p.into()),
        None if spec == "generation" => Change::Generation,
        None if spec == "labels" => Change::Labels,
        None if spec == "annotations" => Change::Annotations,
        _ => return Err(format!("bad change spec {spec:?}")),
    })
}

fn watch_number(obj: &Object) -> String {
    obj.watch().map_or_else(|| "none".into(), |w| w.to_string())
}

fn text<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn index_by(spec: &str) -> Result<IndexBy, String> {
    Ok(match spec.split_once(':') {
        Some(("label", k)) => IndexBy::Label(k.into()),
        Some(("annotation", k)) => IndexBy::Annotation(k.into()),
        Some(("field", p)) => IndexBy::Field(p.into()),
        None if spec == "owner-uid" => IndexBy::OwnerUid,
        None if spec == "owner-kind-name" => IndexBy::OwnerKindName,
        _ => return Err(format!("bad index spec {spec:?}")),
    })
}

fn watch(v: &Value) -> Result<Watch, String> {
    let (Some(api_version), Some(kind)) = (text(v, "api_version"), text(v, "kind")) else {
        return Err(format!("a watch needs api_version and kind: {v}"));
    };
    let mut w = Watch::new(api_version, kind);
    if let Some(ns) = text(v, "namespace") {
        w = w.namespace(ns);
    }
    if let Some(indexes) = v.get("indexes").and_then(Value::as_object) {
        for (name, spec) in indexes {
            w = w.index(name.clone(), index_by(spec.as_str().unwrap_or_default())?);
        }
    }
    for spec in v
        .get("updates_when")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        w = w.updates_when(change(spec.as_str().unwrap_or_default())?);
    }
    Ok(w)
}

fn list_of(config: &Value, key: &str) -> Vec<Value> {
    config
        .get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn describe(e: &CacheError) -> String {
    match e {
        CacheError::NotPermitted(m) => format!("not-permitted: {m}"),
        CacheError::UnknownIndex(m) => format!("unknown-index: {m}"),
        CacheError::InvalidArgument(m) => format!("invalid-argument: {m}"),
    }
}

fn keys(objects: &[Object]) -> String {
    objects.iter().map(Object::key).collect::<Vec<_>>().join(" ")
}

fn run(i: usize, q: &Value) {
    let op = text(q, "op").unwrap_or_default();
    let kind = text(q, "kind").unwrap_or_default();
    let resource = Resource::new(text(q, "api_version").unwrap_or_default(), kind);
    let index = text(q, "index").unwrap_or_default();
    let value = text(q, "value").unwrap_or_default();
    let result: Result<String, CacheError> = match op {
        "get" => cache::get_object(&resource, text(q, "key").unwrap_or_default())
            .map(|o| o.map(|o| o.key().to_string()).unwrap_or_else(|| "none".into())),
        "list" => cache::list_objects(&resource, text(q, "namespace"), text(q, "selector")).map(|o| keys(&o)),
        "first" => cache::first_object(&resource, text(q, "namespace"), text(q, "selector"))
            .map(|o| o.map(|o| o.key().to_string()).unwrap_or_default()),
        "by-index" => cache::by_index_objects(&resource, index, value).map(|o| keys(&o)),
        "index-keys" => cache::index_keys(&resource, index, value).map(|k| k.join(" ")),
        "list-index-values" => cache::list_index_values(&resource, index).map(|v| v.join(" ")),
        other => Ok(format!("unknown op {other:?}")),
    };
    match result {
        Ok(answer) => println!("query {i} {op} {kind}: ok [{answer}]"),
        Err(e) => println!("query {i} {op} {kind}: error {}", describe(&e)),
    }
}

impl Handler for Probe {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        // No config (e.g. under `wink dev`): defaults.
        let config: Value = if config.trim().is_empty() {
            Value::Object(Default::default())
        } else {
            serde_json::from_str(config).map_err(|e| format!("bad config: {e}"))?
        };
        let mut registration = Registration::new();
        for w in list_of(&config, "watches") {
            registration = registration.watch(watch(&w)?);
        }
        for r in list_of(&config, "reads") {
            registration = registration.read(watch(&r)?);
        }
        if let Some(name) = text(&config, "name") {
            registration = registration.name(name);
        }
        if config.get("deliver_while_listing") == Some(&Value::Bool(true)) {
            registration = registration.deliver_while_listing();
        }
        let probe = Probe {
            trigger: text(&config, "trigger").unwrap_or("probe").to_string(),
            queries: list_of(&config, "queries"),
            log_events: config.get("log_events") == Some(&Value::Bool(true)),
            spin: std::time::Duration::from_millis(
                config.get("spin_ms").and_then(Value::as_u64).unwrap_or(0),
            ),
        };
        Ok((probe, registration))
    }

    fn on_update(&mut self, _old: &Object, new: &Object) {
        self.spin();
        if self.log_events {
            println!("event update {} watch={}", new.key(), watch_number(new));
        }
    }

    fn on_delete(&mut self, obj: &Object, _final_state_unknown: bool) {
        self.spin();
        if self.log_events {
            println!("event delete {} watch={}", obj.key(), watch_number(obj));
        }
    }

    fn on_synced(&mut self) {
        if self.log_events {
            println!("synced");
        }
    }

    fn on_add(&mut self, obj: &Object, in_initial_list: bool) {
        self.spin();
        if self.log_events {
            println!(
                "event add {} watch={} initial={in_initial_list}",
                obj.key(),
                watch_number(obj)
            );
        }
        if obj.name() != self.trigger {
            return;
        }
        for (i, q) in self.queries.iter().enumerate() {
            run(i, q);
        }
        println!("probe done");
    }
}

wink_sdk::export_plugin!(Probe);
