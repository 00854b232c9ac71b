//! The seeds' `LabelsIndexFunc` on label `app`, as a wink plugin: pods are
//! indexed by their `app` label in the host's native indexer; on each event
//! the plugin prints the keys of every pod sharing the object's `app` value
//! (`IndexKeys("app", value)`), like seed 001's `indexer.go`.

use wink_sdk::cache;
use wink_sdk::{Handler, IndexBy, Object, Registration, Resource, Watch};

struct AppIndex;

fn show(event: &str, obj: &Object) {
    let Some(app) = obj.label("app") else {
        println!("{event}: {} (no app label)", obj.key());
        return;
    };
    match cache::index_keys(&Resource::new("v1", "Pod"), "app", app) {
        Ok(keys) => println!("{event}: {} app={app} -> [{}]", obj.key(), keys.join(" ")),
        Err(e) => println!("{event}: {} app={app} -> error {e:?}", obj.key()),
    }
}

impl Handler for AppIndex {
    fn init(_config: &str) -> Result<(Self, Registration), String> {
        let pods = Watch::new("v1", "Pod").index("app", IndexBy::Label("app".into()));
        Ok((AppIndex, Registration::new().watch(pods)))
    }

    fn on_add(&mut self, obj: &Object, _in_initial_list: bool) {
        show("add", obj);
    }

    fn on_update(&mut self, _old: &Object, new: &Object) {
        show("update", new);
    }

    fn on_delete(&mut self, obj: &Object, _final_state_unknown: bool) {
        show("delete", obj);
    }
}

wink_sdk::export_plugin!(AppIndex);
