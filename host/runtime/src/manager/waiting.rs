//! Plugins waiting for the API server: a plugin whose resources cannot be
//! resolved because the server is unreachable or answers 5xx/429, or does
//! not serve them (yet: a CRD may be installed later), is not an error. It
//! waits and is loaded again with backoff (0.8 s doubling to 30 s, as the
//! informer's watch retries), logged once per change of reason, until it
//! loads, its file changes or it is removed. Its compiled component is kept
//! meanwhile, so an attempt with the same bytes compiles nothing. Owns that
//! state; loading stays in the manager.

use super::PluginManager;
use crate::engine::CodeKind;
use crate::loader::LoadedComponent;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use wink_informer::WatchSpec;

/// The first retry delay; it doubles per attempt.
pub const FIRST_RETRY: Duration = Duration::from_millis(800);

/// The longest retry delay.
pub const MAX_RETRY: Duration = Duration::from_secs(30);

/// Why a plugin waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitReason {
    /// The API server cannot be reached or answers 5xx/429.
    ServerUnavailable,
    /// The API server does not serve a resource the plugin watches (yet).
    NotServed,
}

/// A registration that could not be resolved for a reason that may pass.
#[derive(Debug, thiserror::Error)]
#[error("{resource}: {cause}")]
pub struct Unresolved {
    pub reason: WaitReason,
    pub resource: String,
    pub cause: String,
}

/// `e` as an [`Unresolved`] when its cause may pass, else as it is.
pub fn unresolved(e: anyhow::Error, spec: &WatchSpec) -> anyhow::Error {
    let kube_error = e.chain().find_map(|c| c.downcast_ref::<kube::Error>());
    let reason = match kube_error {
        Some(kube::Error::Api(s)) if s.code == 404 => Some(WaitReason::NotServed),
        Some(kube::Error::Api(s)) if s.code >= 500 || s.code == 429 => Some(WaitReason::ServerUnavailable),
        Some(kube::Error::Api(_)) => None,
        Some(kube::Error::Discovery(_)) => Some(WaitReason::NotServed),
        Some(_) => Some(WaitReason::ServerUnavailable),
        None => None,
    };
    match reason {
        Some(reason) => anyhow::Error::new(Unresolved {
            reason,
            resource: spec.describe(),
            cause: wink_informer::repeated::short_anyhow(&e),
        }),
        None => e,
    }
}

/// One waiting plugin.
struct Waiting {
    attempt: u32,
    reason: WaitReason,
    task: tokio::task::JoinHandle<()>,
}

/// The plugins waiting, by component path.
#[derive(Default)]
pub(super) struct WaitingPlugins {
    by_path: Mutex<HashMap<PathBuf, Waiting>>,
    /// The component each waiting plugin's last attempt compiled, and by
    /// which compiler.
    kept: Mutex<HashMap<PathBuf, (CodeKind, LoadedComponent)>>,
    /// Attempts made again after a wait.
    retries: AtomicU64,
}

impl WaitingPlugins {
    /// How many plugins wait.
    pub(super) fn len(&self) -> usize {
        self.by_path.lock().unwrap().len()
    }

    /// Stop waiting for `path` (it loaded, changed into something else, or
    /// went), dropping the component kept for it.
    pub(super) fn stop(&self, path: &Path) {
        if let Some(w) = self.by_path.lock().unwrap().remove(path) {
            w.task.abort();
        }
        self.kept.lock().unwrap().remove(path);
    }

    /// Keep `loaded`, compiled by `compiler`, for its path's next attempt
    /// (it replaces what was kept for that path).
    pub(super) fn keep(&self, loaded: LoadedComponent, kind: CodeKind) {
        let path = loaded.path.clone();
        self.kept.lock().unwrap().insert(path, (kind, loaded));
    }

    /// The component kept for `path` when it was compiled from the bytes of
    /// `digest` by `compiler`.
    pub(super) fn kept(&self, path: &Path, digest: &str, kind: CodeKind) -> Option<LoadedComponent> {
        let kept = self.kept.lock().unwrap();
        let (by, loaded) = kept.get(path)?;
        (*by == kind && loaded.digest == digest).then(|| loaded.clone())
    }
}

/// The delay before attempt `attempt` (0-based).
fn backoff(attempt: u32) -> Duration {
    FIRST_RETRY
        .saturating_mul(2u32.saturating_pow(attempt))
        .min(MAX_RETRY)
}

impl PluginManager {
    /// Loads attempted again after a wait since the start.
    pub fn load_retries(&self) -> u64 {
        self.waiting.retries.load(Ordering::Relaxed)
    }

    /// `path` could not be loaded for a reason that may pass: load it again
    /// after the backoff, saying so when the reason is new.
    pub(super) fn retry_later(&self, path: &Path, why: &Unresolved) {
        let mut waiting = self.waiting.by_path.lock().unwrap();
        let previous = waiting.remove(path);
        let attempt = previous.as_ref().map_or(0, |w| w.attempt + 1);
        if previous.as_ref().is_none_or(|w| w.reason != why.reason) {
            let what = match why.reason {
                WaitReason::ServerUnavailable => "the API server is unavailable",
                WaitReason::NotServed => "the API server does not serve a resource it watches (yet)",
            };
            tracing::warn!(
                path = %path.display(),
                "plugin waits: {what}; loading it again with backoff ({:?} to {:?}): {why}",
                FIRST_RETRY,
                MAX_RETRY
            );
        }
        let delay = backoff(attempt);
        let (me, owned) = (self.me.clone(), path.to_path_buf());
        let task = tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let Some(manager) = me.upgrade() else { return };
            manager.waiting.retries.fetch_add(1, Ordering::Relaxed);
            if let Err(e) = manager.load_file(&owned).await {
                tracing::error!("plugin not loaded: {}", wink_informer::repeated::short_anyhow(&e));
            }
        });
        if let Some(old) = previous {
            // Its own task may be the caller: it ends right after this.
            old.task.abort();
        }
        waiting.insert(
            path.to_path_buf(),
            Waiting {
                attempt,
                reason: why.reason,
                task,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_its_cap() {
        let delays: Vec<u64> = (0..8).map(|a| backoff(a).as_millis() as u64).collect();
        assert_eq!(delays, [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]);
    }

    #[test]
    fn transport_errors_and_5xx_wait_404_waits_for_the_resource_403_fails() {
        let spec = WatchSpec::all("v1", "Pod");
        let status = |code| {
            anyhow::Error::new(kube::Error::Api(Box::new(kube::core::Status {
                code,
                ..Default::default()
            })))
        };
        let reason = |e: anyhow::Error| {
            unresolved(e, &spec)
                .downcast::<Unresolved>()
                .ok()
                .map(|u| u.reason)
        };
        assert_eq!(reason(status(503)), Some(WaitReason::ServerUnavailable));
        assert_eq!(reason(status(429)), Some(WaitReason::ServerUnavailable));
        assert_eq!(reason(status(404)), Some(WaitReason::NotServed));
        assert_eq!(reason(status(403)), None);
        assert_eq!(reason(anyhow::anyhow!("not a kube error")), None);
    }
}
