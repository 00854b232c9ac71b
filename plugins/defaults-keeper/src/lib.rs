//! `defaults-keeper`: every namespace has the ConfigMap `wink-defaults`,
//! its data from the plugin's config: a reconciler over namespaces' keys.
//!
//! Namespaces feed the queue with their own keys; the ConfigMaps feed it
//! through `map_to_keys` (a deleted `wink-defaults` enqueues its
//! namespace). `reconcile` reads the cache and creates what is missing; a
//! failed create is an error, retried by the host with backoff, with no
//! new event needed. With `recheck_ms` each namespace is looked at again
//! that long after its last reconcile (`requeue-after`).
//!
//! Config: `{"data": {"owner": "platform"}, "recheck_ms": 60000}` (default:
//! no data, no recheck). It declares `create` on ConfigMaps; the operator
//! grants it.

use std::collections::BTreeMap;
use std::time::Duration;
use wink_sdk::cache;
use wink_sdk::queue::{Action, Enqueue, Queue};
use wink_sdk::serde::Deserialize;
use wink_sdk::serde_json;
use wink_sdk::write::{self, WriteError, Written};
use wink_sdk::{Handler, Object, Registration, Resource, Verb, Watch};

/// The ConfigMap kept in every namespace.
const NAME: &str = "wink-defaults";

#[derive(Deserialize, Default)]
#[serde(crate = "wink_sdk::serde", default, deny_unknown_fields)]
struct Config {
    data: BTreeMap<String, String>,
    /// Look at each namespace again this long after its reconcile (0: no).
    recheck_ms: u64,
}

struct DefaultsKeeper {
    config: Config,
}

fn config_maps() -> Resource {
    Resource::new("v1", "ConfigMap")
}

impl DefaultsKeeper {
    /// What a reconcile that left things right answers.
    fn settled(&self) -> Action {
        match self.config.recheck_ms {
            0 => Action::Done,
            ms => Action::RequeueAfter(Duration::from_millis(ms)),
        }
    }
}

/// A failed write as `CODE Reason: message` when the server answered (as the
/// Python and TypeScript examples print it), else the host's refusal.
fn describe(e: &WriteError) -> String {
    match e.status() {
        Some(s) => format!("{} {}: {}", s.code, s.reason, s.message),
        None => format!("{e:?}"),
    }
}

impl Handler for DefaultsKeeper {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        let config: Config = wink_sdk::config(config)?;
        let registration = Registration::new()
            .name("defaults-keeper")
            .queue(
                Queue::new(Resource::new("v1", "Namespace"))
                    .backoff(Duration::from_millis(50), Duration::from_secs(30)),
            )
            .watch(Watch::new("v1", "Namespace").enqueue(Enqueue::OwnKey))
            .watch(Watch::new("v1", "ConfigMap").enqueue(Enqueue::Mapped))
            .writes(config_maps(), &[Verb::Create]);
        Ok((DefaultsKeeper { config }, registration))
    }

    fn map_to_keys(&mut self, cm: &Object) -> Vec<String> {
        match (cm.name(), cm.namespace()) {
            (NAME, Some(ns)) => vec![ns.to_string()],
            _ => Vec::new(),
        }
    }

    fn reconcile(&mut self, ns: &str) -> Result<Action, String> {
        let Some(namespace) =
            cache::get_object(&Resource::new("v1", "Namespace"), ns).map_err(|e| format!("{e:?}"))?
        else {
            return Ok(Action::Done); // gone: nothing to keep
        };
        if namespace.json().contains("\"deletionTimestamp\"") {
            return Ok(Action::Done); // terminating: nothing may be created
        }
        let key = format!("{ns}/{NAME}");
        if cache::get_object(&config_maps(), &key)
            .map_err(|e| format!("{e:?}"))?
            .is_some()
        {
            wink_sdk::info!("defaults-keeper: {key} checked");
            return Ok(self.settled());
        }
        let body = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": NAME, "namespace": ns},
            "data": self.config.data,
        });
        match write::create_json(&config_maps(), &body.to_string()) {
            Ok(Written::Applied(_)) => wink_sdk::info!("defaults-keeper: {key} created"),
            Ok(Written::DryRun(_)) => {
                wink_sdk::info!("defaults-keeper: would create {key} (audit mode: dry run)")
            }
            // Created meanwhile; the cache has not seen it yet.
            Err(WriteError::AlreadyExists(_)) => wink_sdk::info!("defaults-keeper: {key} exists"),
            Err(e) => return Err(format!("{key} not created: {}", describe(&e))),
        }
        Ok(self.settled())
    }
}

wink_sdk::export_plugin!(DefaultsKeeper);
