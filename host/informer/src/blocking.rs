//! Blocking work on the async runtime's threads.
//!
//! Plugins are delivered on the tokio runtime's worker threads (an event then
//! reaches a plugin with no wake-up of another thread). Work that blocks
//! there (host I/O for a guest: a write waiting on the API server, a 429's
//! Retry-After; waiting for a listener to let go) first hands the worker's
//! other tasks to another thread through [`tokio::task::block_in_place`], so
//! informers and other plugins go on meanwhile. Elsewhere (a delivery-pool
//! thread, a thread outside any runtime, a current-thread runtime) the work
//! just runs. Owns no state.

use tokio::runtime::{Handle, RuntimeFlavor};

/// Whether the calling thread may hand its runtime work off (it is in a
/// multi-thread tokio runtime's context).
pub fn on_runtime() -> bool {
    Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread)
}

/// Run `f`, which blocks, without holding a runtime worker: on a worker of a
/// multi-thread runtime its other tasks move to another thread first;
/// anywhere else `f` just runs.
pub fn blocking<R>(f: impl FnOnce() -> R) -> R {
    if on_runtime() {
        tokio::task::block_in_place(f)
    } else {
        f()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    #[test]
    fn outside_a_runtime_it_just_runs() {
        assert!(!on_runtime());
        assert_eq!(blocking(|| 7), 7);
    }

    /// Workers blocked in long calls do not stop the runtime's other tasks
    /// once they have handed off: a two-worker runtime with both workers in
    /// long calls still runs a third task.
    #[test]
    fn handed_off_workers_leave_the_runtime_running() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let release = Arc::new(AtomicBool::new(false));
        let stuck: Vec<_> = (0..2)
            .map(|_| {
                let release = release.clone();
                rt.spawn(async move {
                    blocking(|| {
                        while !release.load(Ordering::Acquire) {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                    })
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        let third = rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(5), tokio::spawn(async { 3 })).await
        });
        release.store(true, Ordering::Release);
        assert_eq!(
            third.unwrap().unwrap(),
            3,
            "a third task ran while two workers were blocked"
        );
        rt.block_on(async {
            for s in stuck {
                s.await.unwrap();
            }
        });
    }
}
