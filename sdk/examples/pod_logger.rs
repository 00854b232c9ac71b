use wink_sdk::{Handler, Object, Registration, Watch};

/// Logs every Pod event, with client-go's ResourceEventHandler meaning.
struct PodLogger;

impl Handler for PodLogger {
    fn init(_config: &str) -> Result<(Self, Registration), String> {
        Ok((PodLogger, Registration::new().watch(Watch::new("v1", "Pod"))))
    }

    fn on_add(&mut self, obj: &Object, in_initial_list: bool) {
        wink_sdk::info!("OnAdd: {} (initial list: {in_initial_list})", obj.key());
    }

    fn on_update(&mut self, old: &Object, new: &Object) {
        if !wink_sdk::is_resync(old, new) {
            wink_sdk::info!("OnUpdate: {}", new.key());
        }
    }

    fn on_delete(&mut self, obj: &Object, _final_state_unknown: bool) {
        wink_sdk::info!("OnDelete: {}", obj.key());
    }
}

wink_sdk::export_plugin!(PodLogger);
