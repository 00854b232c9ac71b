//! Seed 003's deployment lister as a wink plugin: watches deployments with a
//! resync (60 s, or `{"resync_seconds": N}`), lists the deployments of
//! namespace `default` from the cache on every event (`N -> name`), and prints
//! `add a deployment: x`, `update deployment: x x`, `delete a deployment: x`.

use std::time::Duration;
use wink_sdk::cache;
use wink_sdk::serde_json;
use wink_sdk::{Handler, Object, Registration, Resource, Watch};

struct DeploymentLister;

fn list_default() {
    match cache::list_objects(&Resource::new("apps/v1", "Deployment"), Some("default"), None) {
        Ok(deployments) => {
            for (idx, d) in deployments.iter().enumerate() {
                println!("{} -> {}", idx + 1, d.name());
            }
        }
        Err(e) => println!("cannot list deployments: {e:?}"),
    }
}

impl Handler for DeploymentLister {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        let resync = if config.trim().is_empty() {
            60
        } else {
            let v: serde_json::Value =
                serde_json::from_str(config).map_err(|e| format!("bad config: {e}"))?;
            v.get("resync_seconds").and_then(|s| s.as_u64()).unwrap_or(60)
        };
        let watch = Watch::new("apps/v1", "Deployment").resync(Duration::from_secs(resync));
        Ok((DeploymentLister, Registration::new().watch(watch)))
    }

    fn on_add(&mut self, obj: &Object, _in_initial_list: bool) {
        list_default();
        println!("add a deployment: {}", obj.name());
    }

    fn on_update(&mut self, old: &Object, new: &Object) {
        list_default();
        println!("update deployment: {} {}", old.name(), new.name());
    }

    fn on_delete(&mut self, obj: &Object, _final_state_unknown: bool) {
        list_default();
        println!("delete a deployment: {}", obj.name());
    }
}

wink_sdk::export_plugin!(DeploymentLister);
