//! A test plugin for the work queue's limits. Its queue is of the resource
//! its config names (`{"kind": "ConfigMap" | "Service", "keys": N}`, v1;
//! ConfigMap and 20,000 by default), and it watches the ConfigMaps of
//! `default` (enqueueing nothing themselves). Each add or update of a
//! ConfigMap named `flood-*` adds `keys` keys of 500 bytes to its own queue,
//! to come due in an hour, and logs `flood NAME: added A refused R` with the
//! first refusal's error. `reconcile` logs nothing and is done.

use std::time::Duration;
use wink_sdk::queue::{Action, Queue};
use wink_sdk::{Handler, Object, Registration, Resource, Watch};

struct Flood {
    keys: u64,
}

/// The length of every key added.
const KEY_BYTES: usize = 500;

impl Flood {
    fn flood(&self, obj: &Object) {
        let name = obj.name();
        if !name.starts_with("flood-") {
            return;
        }
        let (mut added, mut refused, mut first) = (0u64, 0u64, None);
        for i in 0..self.keys {
            let mut key = format!("default/{name}-{i}-");
            key.extend(std::iter::repeat_n('x', KEY_BYTES - key.len()));
            match wink_sdk::queue::add_after(&key, Duration::from_secs(3600)) {
                Ok(()) => added += 1,
                Err(e) => {
                    refused += 1;
                    first.get_or_insert(e);
                }
            }
        }
        let why = first.map(|e| format!(": {e}")).unwrap_or_default();
        wink_sdk::info!("flood {name}: added {added} refused {refused}{why}");
    }
}

impl Handler for Flood {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        let config: serde_json::Value = wink_sdk::config(config)?;
        let kind = config["kind"].as_str().unwrap_or("ConfigMap").to_string();
        let keys = config["keys"].as_u64().unwrap_or(20_000);
        let mut registration = Registration::new()
            .name("queue-flood")
            .queue(Queue::new(Resource::new("v1", kind.as_str())))
            .watch(Watch::new("v1", "ConfigMap").namespace("default"));
        if kind != "ConfigMap" {
            registration = registration.read(Watch::new("v1", kind.as_str()).namespace("default"));
        }
        Ok((Flood { keys }, registration))
    }

    fn on_add(&mut self, obj: &Object, _in_initial_list: bool) {
        self.flood(obj);
    }

    fn on_update(&mut self, _old: &Object, new: &Object) {
        self.flood(new);
    }

    fn reconcile(&mut self, _key: &str) -> Result<Action, String> {
        Ok(Action::Done)
    }
}

wink_sdk::export_plugin!(Flood);
