//! `namespace-defaults`: when a namespace is added, creates the ConfigMap
//! `wink-defaults` in it, its data from the plugin's config. An existing one
//! is left alone (AlreadyExists is a normal answer).
//!
//! Config: `{"data": {"owner": "platform"}}` (default: `{"data": {}}`).
//! It declares `create` on ConfigMaps; the operator grants it.

use std::collections::BTreeMap;
use wink_sdk::serde::Deserialize;
use wink_sdk::serde_json;
use wink_sdk::write::{self, WriteError, Written};
use wink_sdk::{Handler, Object, Registration, Resource, Verb, Watch};

#[derive(Deserialize, Default)]
#[serde(crate = "wink_sdk::serde", default, deny_unknown_fields)]
struct Config {
    data: BTreeMap<String, String>,
}

struct NamespaceDefaults {
    config: Config,
}

impl Handler for NamespaceDefaults {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        let config: Config = wink_sdk::config(config)?;
        let registration = Registration::new()
            .watch(Watch::new("v1", "Namespace"))
            .writes(Resource::new("v1", "ConfigMap"), &[Verb::Create]);
        Ok((NamespaceDefaults { config }, registration))
    }

    fn on_add(&mut self, ns: &Object, _in_initial_list: bool) {
        let body = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "wink-defaults", "namespace": ns.name()},
            "data": self.config.data,
        });
        match write::create_json(&Resource::new("v1", "ConfigMap"), &body.to_string()) {
            Ok(Written::Applied(_)) => {
                wink_sdk::info!("namespace-defaults: created {}/wink-defaults", ns.name())
            }
            Ok(Written::DryRun(_)) => wink_sdk::info!(
                "namespace-defaults: would create {}/wink-defaults (audit mode: dry run)",
                ns.name()
            ),
            Err(WriteError::AlreadyExists(_)) => {
                wink_sdk::info!("namespace-defaults: {}/wink-defaults exists", ns.name())
            }
            Err(e) => wink_sdk::warn!(
                "namespace-defaults: {}/wink-defaults not created: {e:?}",
                ns.name()
            ),
        }
    }
}

wink_sdk::export_plugin!(NamespaceDefaults);
