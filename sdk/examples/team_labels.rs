//! The SDK README's second example: a Deployment without a `team` label gets
//! a Warning Event, the label (set to its default by a merge patch) and a
//! failing policy result; one with the label passes. It counts the
//! Deployment's Pods (those labeled `app=<its name>`) from the cache.
//!
//! Config (these are the defaults): `{"label": "team", "default": "unassigned"}`.

use wink_sdk::cache::{self, CacheError};
use wink_sdk::report::{self, Outcome, Severity};
use wink_sdk::write::{self, WriteError};
use wink_sdk::{Handler, Object, Registration, Resource, Selector, Verb, Watch, events};

// serde and serde_json through the SDK: no dependency of the plugin's own.
use wink_sdk::serde::Deserialize;
use wink_sdk::serde_json::{self, json};

#[derive(Deserialize)]
#[serde(crate = "wink_sdk::serde", default, deny_unknown_fields)]
struct Config {
    label: String,
    default: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            label: "team".into(),
            default: "unassigned".into(),
        }
    }
}

struct TeamLabels {
    config: Config,
}

fn deployments() -> Resource {
    Resource::new("apps/v1", "Deployment")
}

impl Handler for TeamLabels {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        let config: Config = wink_sdk::config(config)?;
        let registration = Registration::new()
            .watch(Watch::new("apps/v1", "Deployment"))
            .read(Watch::new("v1", "Pod"))
            .writes(deployments(), &[Verb::Patch])
            .records_events();
        Ok((TeamLabels { config }, registration))
    }

    fn on_add(&mut self, obj: &Object, _in_initial_list: bool) {
        self.check(obj);
    }

    fn on_update(&mut self, old: &Object, new: &Object) {
        if !wink_sdk::is_resync(old, new) {
            self.check(new);
        }
    }
}

/// The Pods labeled `app=<app>` in `namespace`, from the host's cache.
fn app_pods(namespace: Option<&str>, app: &str) -> Result<Vec<Object>, CacheError> {
    let pods = Resource::new("v1", "Pod");
    // The same query in Kubernetes syntax: `format!("app={app}").as_str()`.
    cache::list_objects(&pods, namespace, Selector::new().eq("app", app))
}

impl TeamLabels {
    fn check(&self, deployment: &Object) {
        match app_pods(deployment.namespace(), deployment.name()) {
            Ok(pods) => wink_sdk::info!("{}: {} pods", deployment.key(), pods.len()),
            Err(e) => wink_sdk::warn!("{}: no pods: {e:?}", deployment.key()),
        }
        let label = &self.config.label;
        let finding = match deployment.label(label) {
            Some(team) => report::finding("team-label", Outcome::Pass).message(format!("team {team}")),
            None => {
                self.set_default(deployment);
                report::finding("team-label", Outcome::Fail)
                    .message(format!("missing label {label}"))
                    .severity(Severity::Medium)
            }
        };
        if let Err(e) = report::set(deployment, &[finding]) {
            wink_sdk::warn!("{}: result not given: {e}", deployment.key());
        }
    }

    /// Label the Deployment with the default and say so in an Event.
    fn set_default(&self, deployment: &Object) {
        let (label, value) = (&self.config.label, &self.config.default);
        let mut labels = serde_json::Map::new();
        labels.insert(label.clone(), value.clone().into());
        let patch = json!({"metadata": {"labels": labels}});
        match write::merge_patch(&deployments(), deployment.key(), &patch) {
            // Deleted meanwhile: nothing to label.
            Ok(_) | Err(WriteError::NotFound(_)) => {}
            Err(e) => wink_sdk::warn!("{} not labeled: {e:?}", deployment.key()),
        }
        let note = format!("missing label {label}: set to {value:?}");
        if let Err(e) = events::warning(deployment, "MissingLabel", "Labeled", &note) {
            wink_sdk::warn!("{}: Event not recorded: {e:?}", deployment.key());
        }
    }
}

wink_sdk::export_plugin!(TeamLabels);
