//! Which writes are retries of a conflict. A 409 Conflict is the API
//! server's "read again and decide again", not a write that happened: the
//! plugin's next write to the same object within [`RETRY_WINDOW`] is that
//! retry, and is paced by the daemon's rate only, not by the plugin's own
//! (an object fresh from its controller can conflict several times in its
//! first second). Owns only that bookkeeping, bounded to [`MAX_TARGETS`].

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long after a conflict the next write to its target is a retry.
pub const RETRY_WINDOW: Duration = Duration::from_secs(10);

/// The most targets remembered; beyond, the oldest are forgotten.
pub const MAX_TARGETS: usize = 1024;

/// Targets (request paths) whose last write conflicted, and when.
#[derive(Debug, Default)]
pub struct Conflicts {
    at: HashMap<String, Instant>,
}

impl Conflicts {
    /// A write to `target` met a conflict.
    pub fn conflicted(&mut self, target: String) {
        if self.at.len() >= MAX_TARGETS {
            let now = Instant::now();
            self.at.retain(|_, t| now.duration_since(*t) < RETRY_WINDOW);
            if self.at.len() >= MAX_TARGETS
                && let Some(oldest) = self.at.iter().min_by_key(|(_, t)| **t).map(|(k, _)| k.clone())
            {
                self.at.remove(&oldest);
            }
        }
        self.at.insert(target, Instant::now());
    }

    /// Whether a write to `target` now retries a conflict (once per conflict).
    pub fn retrying(&mut self, target: &str) -> bool {
        self.at.remove(target).is_some_and(|t| t.elapsed() < RETRY_WINDOW)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_retry_per_conflict_and_only_for_its_target() {
        let mut c = Conflicts::default();
        assert!(!c.retrying("/apis/apps/v1/namespaces/a/deployments/web"));
        c.conflicted("/apis/apps/v1/namespaces/a/deployments/web".into());
        assert!(!c.retrying("/apis/apps/v1/namespaces/a/deployments/db"));
        assert!(c.retrying("/apis/apps/v1/namespaces/a/deployments/web"));
        assert!(!c.retrying("/apis/apps/v1/namespaces/a/deployments/web"), "once");
    }

    #[test]
    fn the_targets_remembered_are_bounded() {
        let mut c = Conflicts::default();
        for i in 0..MAX_TARGETS + 10 {
            c.conflicted(format!("/t/{i}"));
        }
        assert!(c.at.len() <= MAX_TARGETS);
        assert!(
            c.retrying(&format!("/t/{}", MAX_TARGETS + 9)),
            "the newest is kept"
        );
    }
}
