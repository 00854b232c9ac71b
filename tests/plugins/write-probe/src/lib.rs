//! A test plugin for the `write` and `events` capabilities. It watches
//! ConfigMaps (and reads Deployments); when a ConfigMap named `trigger`
//! is added it runs the configured writes and prints one line per answer,
//! then `probe done`. `on-synced` prints how many adds came before it.
//! `"name"` in the config is the plugin name it declares.
//!
//! ```json
//! {
//!   "writes": [{"api_version": "v1", "kind": "ConfigMap", "verbs": ["create", "update", "patch", "delete"]}],
//!   "events": true,
//!   "ops": [
//!     {"op": "create", "api_version": "v1", "kind": "ConfigMap", "body": {"metadata": {"name": "a", "namespace": "default"}}},
//!     {"op": "replace", "api_version": "v1", "kind": "ConfigMap", "body": {...}},
//!     {"op": "patch", "api_version": "v1", "kind": "ConfigMap", "key": "default/a", "type": "merge", "body": {...}, "repeat": 1, "quiet": false},
//!     {"op": "delete", "api_version": "v1", "kind": "ConfigMap", "key": "default/a", "uid": "..."},
//!     {"op": "event", "type": "warning", "reason": "Probe", "action": "Probed", "note": "n", "repeat": 10}
//!   ]
//! }
//! ```
//!
//! Answers: `write N OP: ok KEY` or `write N OP: error VARIANT[ CODE REASON retry=S]: MESSAGE`.

use serde_json::Value;
use wink_sdk::write::{self, DeleteOptions, PatchType, WriteError};
use wink_sdk::{Handler, Object, Registration, Resource, Verb, Watch, events};

struct Probe {
    ops: Vec<Value>,
    adds: u64,
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn verb(name: &str) -> Result<Verb, String> {
    Ok(match name {
        "create" => Verb::Create,
        "update" => Verb::Update,
        "patch" => Verb::Patch,
        "delete" => Verb::Delete,
        other => return Err(format!("unknown verb {other:?}")),
    })
}

fn describe(e: &WriteError) -> String {
    let variant = match e {
        WriteError::AlreadyExists(_) => "already-exists",
        WriteError::Conflict(_) => "conflict",
        WriteError::NotFound(_) => "not-found",
        WriteError::Invalid(_) => "invalid",
        WriteError::Forbidden(_) => "forbidden",
        WriteError::TooManyRequests(_) => "too-many-requests",
        WriteError::Timeout(_) => "timeout",
        WriteError::InternalError(_) => "internal-error",
        WriteError::Other(_) => "other",
        WriteError::NotPermitted(m) => return format!("not-permitted: {m}"),
        WriteError::InvalidArgument(m) => return format!("invalid-argument: {m}"),
        WriteError::Unavailable(m) => return format!("unavailable: {m}"),
    };
    let s = e.status().expect("a status error");
    let retry = s
        .retry_after_seconds
        .map_or(String::new(), |r| format!(" retry={r}"));
    let causes: Vec<&str> = s.causes.iter().map(|c| c.field.as_str()).collect();
    format!(
        "{variant} {} {}{retry}: {} {causes:?}",
        s.code, s.reason, s.message
    )
}

fn run(i: usize, q: &Value) {
    // `quiet`: only errors and one summary line (for benchmarks).
    let quiet = q.get("quiet").and_then(Value::as_bool) == Some(true);
    let mut ok = 0u64;
    let op = text(q, "op");
    let resource = Resource::new(text(q, "api_version"), text(q, "kind"));
    let body = q.get("body").map(Value::to_string).unwrap_or_default();
    let key = text(q, "key");
    let repeat = q.get("repeat").and_then(Value::as_u64).unwrap_or(1);
    for _ in 0..repeat {
        let answer: Result<String, WriteError> = match op {
            "create" => write::create_json(&resource, &body).map(shown),
            "replace" => write::replace_json(&resource, &body).map(shown),
            "replace-status" => write::replace_status_json(&resource, &body).map(shown),
            "patch" => {
                let patch_type = match text(q, "type") {
                    "json" => PatchType::Json,
                    "strategic" => PatchType::StrategicMerge,
                    "apply" => PatchType::Apply(false),
                    "apply-force" => PatchType::Apply(true),
                    _ => PatchType::Merge,
                };
                write::patch_json(&resource, key, patch_type, &body).map(shown)
            }
            "delete" => {
                let options = DeleteOptions {
                    uid: q.get("uid").and_then(Value::as_str).map(str::to_string),
                    ..DeleteOptions::default()
                };
                write::delete(&resource, key, &options).map(|w| {
                    let dry_run = w.is_dry_run();
                    let key = w.into_object().map_or("gone".into(), |o| o.key().to_string());
                    dry(key, dry_run)
                })
            }
            "event" => {
                let Ok(Some(regarding)) = wink_sdk::cache::get_object(&Resource::new("v1", "ConfigMap"), key)
                else {
                    println!("write {i} event: no object {key}");
                    return;
                };
                let kind = match text(q, "type") {
                    "normal" => events::EventType::Normal,
                    _ => events::EventType::Warning,
                };
                events::record(
                    &regarding,
                    kind,
                    text(q, "reason"),
                    text(q, "action"),
                    text(q, "note"),
                )
                .map(|recorded| match recorded {
                    events::Recorded::Sent => key.to_string(),
                    events::Recorded::Audit => format!("{key} (audit)"),
                    events::Recorded::Dropped => format!("{key} (dropped)"),
                })
            }
            other => Ok(format!("unknown op {other:?}")),
        };
        match answer {
            Ok(_) if quiet => ok += 1,
            Ok(k) => println!("write {i} {op}: ok {k}"),
            Err(e) => println!("write {i} {op}: error {}", describe(&e)),
        }
    }
    if quiet {
        println!("write {i} {op}: {ok} ok");
    }
}

impl Handler for Probe {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        let config: Value = wink_sdk::config(config)?;
        let mut registration = Registration::new()
            .watch(Watch::new("v1", "ConfigMap"))
            .read(Watch::new("apps/v1", "Deployment"));
        for w in config
            .get("writes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let verbs = w
                .get("verbs")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|v| verb(v.as_str().unwrap_or_default()))
                .collect::<Result<Vec<_>, _>>()?;
            registration =
                registration.writes(Resource::new(text(w, "api_version"), text(w, "kind")), &verbs);
        }
        if config.get("events").and_then(Value::as_bool) == Some(true) {
            registration = registration.records_events();
        }
        if let Some(name) = config.get("name").and_then(Value::as_str) {
            registration = registration.name(name);
        }
        let ops = config
            .get("ops")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        Ok((Probe { ops, adds: 0 }, registration))
    }

    fn on_add(&mut self, obj: &Object, _in_initial_list: bool) {
        self.adds += 1;
        if obj.name() != "trigger" {
            return;
        }
        for (i, q) in self.ops.iter().enumerate() {
            run(i, q);
        }
        println!("probe done");
    }

    fn on_synced(&mut self) {
        println!("synced after {} adds", self.adds);
    }
}

wink_sdk::export_plugin!(Probe);

/// A write's answer as the probe prints it: the key, and ` (dry run)` when
/// nothing changed.
fn shown(w: write::Written) -> String {
    let dry_run = w.is_dry_run();
    dry(w.object().key().to_string(), dry_run)
}

fn dry(key: String, dry_run: bool) -> String {
    if dry_run { format!("{key} (dry run)") } else { key }
}
