//! The reconcile benchmark's plugin. Its queue holds keys of ConfigMaps,
//! fed by one watch of the ConfigMaps of `default` through `map_to_keys`:
//! one labelled `app=bench` maps to its own key, one labelled
//! `role=trigger` (with labels `from`, `count` and `go=yes`) to the keys
//! `default/cm-NNNNNN` for NNNNNN from `from` to `from + count - 1`. (One
//! watch of the queue's resource: the keys enqueued once the plugin synced
//! are those of its one cache of ConfigMaps.) `reconcile` does nothing, or one cache
//! lookup of its key (config `{"lookup": true}`), and counts the keys of
//! `cm-` ConfigMaps it reconciled: every `n` of them (config `{"n": N}`) it
//! logs `start K` at the first of a round and `reconciled K` at its last.
//! With `{"hold_ms": MS}` the first reconcile waits that long (logging
//! `holding`), the other keys queued behind it; with `{"queue":
//! "Namespace"}` the queue is of Namespaces (a few keys), beside the same
//! cache of ConfigMaps.

use wink_sdk::cache;
use wink_sdk::queue::{Action, Enqueue, Queue};
use wink_sdk::serde::Deserialize;
use wink_sdk::{Handler, Object, Registration, Resource, Watch};

#[derive(Deserialize)]
#[serde(crate = "wink_sdk::serde", default, deny_unknown_fields)]
struct Config {
    n: u64,
    lookup: bool,
    /// The first reconcile waits this long (the keys stay queued).
    hold_ms: u64,
    /// The queue's kind: `ConfigMap`, or `Namespace` (of which the plugin
    /// watches none: an empty queue beside the same cache).
    queue: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            n: 1000,
            lookup: false,
            hold_ms: 0,
            queue: "ConfigMap".into(),
        }
    }
}

struct Bench {
    config: Config,
    count: u64,
}

fn config_maps() -> Resource {
    Resource::new("v1", "ConfigMap")
}

impl Handler for Bench {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        let config: Config = wink_sdk::config(config)?;
        let registration = Registration::new()
            .name("bench-reconcile")
            .queue(Queue::new(Resource::new("v1", &config.queue)))
            .watch(
                Watch::new("v1", "ConfigMap")
                    .namespace("default")
                    .enqueue(Enqueue::Mapped),
            );
        // A queue of Namespaces: fed by their watch (a few keys).
        let registration = match config.queue.as_str() {
            "ConfigMap" => registration,
            _ => registration.watch(Watch::new("v1", "Namespace").enqueue(Enqueue::OwnKey)),
        };
        Ok((Bench { config, count: 0 }, registration))
    }

    fn map_to_keys(&mut self, trigger: &Object) -> Vec<String> {
        if trigger.label("app") == Some("bench") {
            return vec![trigger.key().to_string()];
        }
        let number = |label: &str| trigger.label(label).and_then(|v| v.parse::<u64>().ok());
        let (Some(from), Some(count)) = (number("from"), number("count")) else {
            return Vec::new();
        };
        if trigger.label("go") != Some("yes") {
            return Vec::new();
        }
        (from..from + count)
            .map(|i| format!("default/cm-{i:06}"))
            .collect()
    }

    fn reconcile(&mut self, key: &str) -> Result<Action, String> {
        if self.config.hold_ms > 0 {
            let hold = std::mem::take(&mut self.config.hold_ms);
            wink_sdk::info!("holding");
            std::thread::sleep(std::time::Duration::from_millis(hold));
        }
        if self.config.lookup {
            let found = cache::get_object(&config_maps(), key).map_err(|e| format!("{e:?}"))?;
            std::hint::black_box(found);
        }
        if key.starts_with("default/cm-") {
            self.count += 1;
            let n = self.config.n.max(1);
            if self.count % n == 1 || n == 1 {
                wink_sdk::info!("start {}", self.count);
            }
            if self.count.is_multiple_of(n) {
                wink_sdk::info!("reconciled {}", self.count);
            }
        }
        Ok(Action::Done)
    }
}

wink_sdk::export_plugin!(Bench);
