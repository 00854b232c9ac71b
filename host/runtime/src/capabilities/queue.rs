//! The `queue` import: keys a plugin adds to its own work queue
//! ([`QueueScope`]). Owns only the handing of those keys to the plugin's
//! queue; which keys are reconciled, when, and by whom is the manager's
//! (`crate::manager`). A plugin without a queue is answered with an error,
//! never a trap.

use super::HostState;
use crate::bindings::wink::plugin::queue;
use crate::workqueue::RateLimiting;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// The longest key a plugin may add: a namespace and a name (each at most
/// 253 bytes) and their `/`.
pub const MAX_KEY: usize = 507;

/// Where a plugin's keys go: its work queue under `wink run`, the case's
/// queue under `wink test`. A refusal (a full queue) is the plugin's error.
pub trait KeySink: Send + Sync {
    /// Add `key` now.
    fn add(&self, key: &str) -> Result<(), String>;
    /// Add `key` after `delay`.
    fn add_after(&self, key: &str, delay: Duration) -> Result<(), String>;
}

impl KeySink for RateLimiting {
    fn add(&self, key: &str) -> Result<(), String> {
        self.try_add(key).map_err(|e| e.to_string())
    }

    fn add_after(&self, key: &str, delay: Duration) -> Result<(), String> {
        self.try_add_after(key, delay).map_err(|e| e.to_string())
    }
}

/// The plugin's work queue, once its registration has one; shared by every
/// Store of the plugin's instance.
#[derive(Clone, Default)]
pub struct QueueScope {
    queue: Arc<RwLock<Option<Arc<dyn KeySink>>>>,
}

impl QueueScope {
    /// Keys added from now go to `queue`.
    pub fn connect(&self, queue: Arc<dyn KeySink>) {
        *self.queue.write().unwrap() = Some(queue);
    }

    fn with(&self, key: &str, add: impl FnOnce(&dyn KeySink) -> Result<(), String>) -> Result<(), String> {
        if key.is_empty() || key.len() > MAX_KEY {
            return Err(format!(
                "cannot enqueue a key of {} bytes: 1 to {MAX_KEY}",
                key.len()
            ));
        }
        match &*self.queue.read().unwrap() {
            Some(q) => add(q.as_ref()).map_err(|e| format!("cannot enqueue {key:?}: {e}")),
            None => Err(format!("cannot enqueue {key:?}: this plugin registered no queue")),
        }
    }
}

impl queue::Host for HostState {
    fn add(&mut self, key: String) -> wasmtime::Result<Result<(), String>> {
        Ok(self.queue.with(&key, |q| q.add(&key)))
    }

    fn add_after(&mut self, key: String, delay_ms: u64) -> wasmtime::Result<Result<(), String>> {
        Ok(self
            .queue
            .with(&key, |q| q.add_after(&key, Duration::from_millis(delay_ms))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Seen(Mutex<Vec<(String, Duration)>>);

    impl KeySink for Seen {
        fn add(&self, key: &str) -> Result<(), String> {
            if key == "full" {
                return Err("the work queue is full".into());
            }
            self.0.lock().unwrap().push((key.into(), Duration::ZERO));
            Ok(())
        }
        fn add_after(&self, key: &str, delay: Duration) -> Result<(), String> {
            self.0.lock().unwrap().push((key.into(), delay));
            Ok(())
        }
    }

    #[test]
    fn adds_reach_the_connected_queue_and_are_refused_without_one() {
        let scope = QueueScope::default();
        let e = scope.with("ns/a", |q| q.add("ns/a")).unwrap_err();
        assert!(e.contains("registered no queue"), "{e}");
        let seen = Arc::new(Seen::default());
        scope.connect(seen.clone());
        scope.with("ns/a", |q| q.add("ns/a")).unwrap();
        scope
            .with("ns/b", |q| q.add_after("ns/b", Duration::from_millis(7)))
            .unwrap();
        let e = scope.with("full", |q| q.add("full")).unwrap_err();
        assert_eq!(e, "cannot enqueue \"full\": the work queue is full");
        for bad in [String::new(), "k".repeat(MAX_KEY + 1)] {
            let e = scope.with(&bad, |q| q.add(&bad)).unwrap_err();
            assert!(e.contains("cannot enqueue a key of"), "{e}");
        }
        assert_eq!(
            *seen.0.lock().unwrap(),
            [
                ("ns/a".to_string(), Duration::ZERO),
                ("ns/b".to_string(), Duration::from_millis(7))
            ]
        );
    }
}
