//! A test plugin for the work queue: its queue holds the keys of the
//! ConfigMaps of `default` (each watched ConfigMap enqueues its own key);
//! `reconcile` logs `start KEY` and `end KEY`, and while the ConfigMap under
//! the key is labelled `hold=true` it waits (up to 20 s) for the ConfigMap
//! `default/gate` to exist, so a test can hold a reconcile in progress.
//! Pods of `default` feed the queue too, through two watches: one with
//! their controller owner's key (a ConfigMap), one (of those labelled
//! `probe=yes`) with the keys of the ConfigMaps whose annotation `probe/pod`
//! names the pod (`by-index`).

use std::time::{Duration, Instant};
use wink_sdk::cache;
use wink_sdk::queue::{Action, Enqueue, Queue};
use wink_sdk::{Handler, IndexBy, Registration, Resource, Watch};

struct Probe;

fn config_maps() -> Resource {
    Resource::new("v1", "ConfigMap")
}

impl Handler for Probe {
    fn init(_config: &str) -> Result<(Self, Registration), String> {
        let registration = Registration::new()
            .name("reconcile-probe")
            .queue(Queue::new(config_maps()))
            .watch(
                Watch::new("v1", "ConfigMap")
                    .namespace("default")
                    .index("by-pod", IndexBy::Annotation("probe/pod".into()))
                    .enqueue(Enqueue::OwnKey),
            )
            .watch(
                Watch::new("v1", "Pod")
                    .namespace("default")
                    .enqueue(Enqueue::ControllerOwner),
            )
            .watch(
                Watch::new("v1", "Pod")
                    .namespace("default")
                    .label_selector("probe=yes")
                    .enqueue(Enqueue::ByIndex("by-pod".into())),
            );
        Ok((Probe, registration))
    }

    fn reconcile(&mut self, key: &str) -> Result<Action, String> {
        wink_sdk::info!("start {key}");
        let held = |k: &str| {
            cache::get_object(&config_maps(), k)
                .ok()
                .flatten()
                .is_some_and(|o| o.label("hold") == Some("true"))
        };
        let gate = || {
            cache::get_object(&config_maps(), "default/gate")
                .ok()
                .flatten()
                .is_some()
        };
        let since = Instant::now();
        while held(key) && !gate() {
            if since.elapsed() > Duration::from_secs(20) {
                return Err("the gate never came".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        wink_sdk::info!("end {key}");
        Ok(Action::Done)
    }
}

wink_sdk::export_plugin!(Probe);
