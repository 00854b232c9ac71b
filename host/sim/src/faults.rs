//! Fault injection: the knobs tests and the admin HTTP path turn to make the
//! simulated API server misbehave the way real ones do.
//!
//! Owns: [`FaultState`] (the knobs) and [`Faults`] (the public handle).
//! Must not touch: routing or storage beyond calling `State::compact`.

use super::Shared;
use super::status::ApiError;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// The fault knobs, shared by every request handler and watch stream.
#[derive(Debug)]
pub struct FaultState {
    fail_remaining: AtomicUsize,
    fail_status: AtomicU16,
    /// The only requests failed, when set: a verb and a resource (its
    /// plural, `plural/subresource` for a subresource).
    fail_only: Mutex<Option<(String, String)>>,
    close_watches: watch::Sender<u64>,
    paused_until: Mutex<Option<Instant>>,
    delay: Mutex<Option<Duration>>,
    /// Writes of one resource (its plural) refused: with this status and
    /// message.
    refused_writes: Mutex<Option<(String, u16, String)>>,
}

impl Default for FaultState {
    fn default() -> Self {
        FaultState {
            fail_remaining: AtomicUsize::new(0),
            fail_status: AtomicU16::new(500),
            fail_only: Mutex::new(None),
            close_watches: watch::channel(0).0,
            paused_until: Mutex::new(None),
            delay: Mutex::new(None),
            refused_writes: Mutex::new(None),
        }
    }
}

impl FaultState {
    /// Take one injected failure if any is pending for a request of
    /// `verb` on `resource` (None: not a resource's): its HTTP status.
    pub fn take_failure(&self, request: Option<(&str, &str)>) -> Option<u16> {
        let only = self.fail_only.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((verb, resource)) = only.as_ref()
            && request != Some((verb.as_str(), resource.as_str()))
        {
            return None;
        }
        drop(only);
        self.fail_remaining
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .ok()
            .map(|_| self.fail_status.load(Ordering::SeqCst))
    }

    /// Changes each time open watches must end.
    pub fn close_signal(&self) -> watch::Receiver<u64> {
        self.close_watches.subscribe()
    }

    /// Hold while a pause is in effect.
    pub async fn wait_unpaused(&self) {
        loop {
            let until = *self.paused_until.lock().unwrap_or_else(|e| e.into_inner());
            match until {
                // Re-check often: a pause can be cut short (`pause(0)`).
                Some(t) if t > Instant::now() => {
                    tokio::time::sleep_until(t.min(Instant::now() + Duration::from_millis(20))).await
                }
                _ => return,
            }
        }
    }

    pub fn delay(&self) -> Option<Duration> {
        *self.delay.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn set_fail(&self, n: usize, status: u16, only: Option<(String, String)>) {
        *self.fail_only.lock().unwrap_or_else(|e| e.into_inner()) = only;
        self.fail_status.store(status, Ordering::SeqCst);
        self.fail_remaining.store(n, Ordering::SeqCst);
    }

    pub fn close_all_watches(&self) {
        self.close_watches.send_modify(|g| *g += 1);
    }

    pub fn set_pause(&self, d: Duration) {
        *self.paused_until.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now() + d);
    }

    pub fn set_delay(&self, d: Option<Duration>) {
        *self.delay.lock().unwrap_or_else(|e| e.into_inner()) = d.filter(|d| !d.is_zero());
    }

    pub fn set_refused_writes(&self, refused: Option<(String, u16, String)>) {
        *self.refused_writes.lock().unwrap_or_else(|e| e.into_inner()) = refused;
    }

    /// What a write of `plural` is refused with, if it is.
    pub(crate) fn refused_write(&self, plural: &str) -> Option<ApiError> {
        let refused = self.refused_writes.lock().unwrap_or_else(|e| e.into_inner());
        let (_, code, message) = refused.as_ref().filter(|(p, ..)| p == plural)?;
        let mut e = ApiError::injected(*code);
        e.message = message.clone();
        Some(e)
    }
}

/// A cheap, clonable handle on the fault knobs of a running [`super::Sim`].
#[derive(Clone)]
pub struct Faults {
    pub(super) shared: Arc<Shared>,
}

impl Faults {
    /// End every open watch stream now (cleanly, as a server-side timeout does).
    pub fn close_watches(&self) {
        self.shared.faults.close_all_watches();
    }

    /// Answer the next `n` API requests with `status` (a `Status` object;
    /// 429 carries `Retry-After: 1`). Admin `/_sim` paths are exempt.
    pub fn fail_next(&self, n: usize, status: u16) {
        self.shared.faults.set_fail(n, status, None);
    }

    /// [`Faults::fail_next`] for the requests of one `verb` (`get`, `list`,
    /// `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`)
    /// on one `resource` (its plural, `pods/status` for a subresource)
    /// alone: any other request is served, and does not count.
    pub fn fail_next_on(&self, n: usize, status: u16, verb: &str, resource: &str) {
        let only = Some((verb.to_string(), resource.to_string()));
        self.shared.faults.set_fail(n, status, only);
    }

    /// Drop the event history: resuming a watch or a paged list from any
    /// resourceVersion handed out so far gets 410 Expired.
    pub fn compact(&self) {
        self.shared.store.lock().compact();
    }

    /// Stop answering for `d`: requests are accepted but held, open watch
    /// streams deliver nothing, until the pause ends; `pause(Duration::ZERO)`
    /// ends a pause now.
    pub fn pause(&self, d: Duration) {
        self.shared.faults.set_pause(d);
    }

    /// Delay every response by `d` (None or zero: no delay).
    pub fn delay(&self, d: Option<Duration>) {
        self.shared.faults.set_delay(d);
    }

    /// Refuse every write (create, update, patch, delete) of the resource
    /// `plural` (of any group) with `status` and `message`, as a Status
    /// (422's reason is `Invalid`), until [`Faults::accept_writes`]; reads
    /// are served.
    pub fn refuse_writes(&self, plural: &str, status: u16, message: &str) {
        let refused = (plural.to_string(), status, message.to_string());
        self.shared.faults.set_refused_writes(Some(refused));
    }

    /// Serve writes refused by [`Faults::refuse_writes`] again.
    pub fn accept_writes(&self) {
        self.shared.faults.set_refused_writes(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_counted_down() {
        let f = FaultState::default();
        assert_eq!(f.take_failure(None), None);
        f.set_fail(2, 429, None);
        assert_eq!(f.take_failure(None), Some(429));
        assert_eq!(f.take_failure(Some(("get", "pods"))), Some(429));
        assert_eq!(f.take_failure(None), None);
        f.set_fail(1, 500, Some(("create".into(), "configmaps".into())));
        assert_eq!(f.take_failure(Some(("get", "configmaps"))), None);
        assert_eq!(f.take_failure(None), None);
        assert_eq!(f.take_failure(Some(("create", "configmaps"))), Some(500));
        assert_eq!(f.take_failure(Some(("create", "configmaps"))), None);
    }

    #[test]
    fn writes_of_one_resource_are_refused_until_accepted() {
        let f = FaultState::default();
        assert_eq!(f.refused_write("pods"), None);
        f.set_refused_writes(Some(("pods".into(), 422, "no".into())));
        let e = f.refused_write("pods").unwrap();
        assert_eq!((e.code, e.reason, e.message.as_str()), (422, "Invalid", "no"));
        assert_eq!(f.refused_write("configmaps"), None);
        f.set_refused_writes(None);
        assert_eq!(f.refused_write("pods"), None);
    }

    #[tokio::test]
    async fn pause_holds_then_releases() {
        let f = FaultState::default();
        f.set_pause(Duration::from_millis(50));
        let t = std::time::Instant::now();
        f.wait_unpaused().await;
        assert!(t.elapsed() >= Duration::from_millis(40));
        let mut rx = f.close_signal();
        f.close_all_watches();
        assert!(rx.has_changed().unwrap());
        rx.borrow_and_update();
    }

    #[tokio::test]
    async fn a_pause_can_be_cut_short() {
        let f = Arc::new(FaultState::default());
        f.set_pause(Duration::from_secs(3600));
        let waiter = tokio::spawn({
            let f = f.clone();
            async move { f.wait_unpaused().await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        f.set_pause(Duration::ZERO);
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("released when the pause is cut short")
            .unwrap();
    }
}
