//! Where tier-up builds run: one rayon pool of one thread at a low CPU
//! priority. wasmtime splits a compile into jobs on the rayon pool of the
//! thread that asks for it; a Cranelift build of a large component (tens of
//! seconds) run from an ordinary thread fills the global pool's queues, and
//! a small plugin's Winch compile queued behind it waits until it is done.
//! Run here, background builds go one at a time on a thread of their own,
//! which yields most of a busy core to foreground loads and plugin calls
//! (`nice` 10: a tenth of the share of an ordinary thread) and still ends
//! on a machine kept busy.
//!
//! Owns only that pool; what is compiled, and what happens to the build, is
//! `compiling`'s.

use std::sync::OnceLock;

/// The CPU priority of the tier-up thread (`nice`); 19, the lowest, would
/// all but stop a build while the cores are busy.
const NICE: libc::c_int = 10;

/// Run `build` on the tier-up thread (its wasmtime jobs stay there) and
/// return its result; callers queue, one build at a time.
pub(super) fn run<T: Send>(build: impl FnOnce() -> T + Send) -> T {
    match pool() {
        Some(pool) => pool.install(build),
        // No thread could be had: build here, as before tier-up had one.
        None => build(),
    }
}

fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(|_| "wink-tier-up".to_string())
            .start_handler(|_| lower_priority())
            .build()
            .map_err(|e| tracing::warn!("no tier-up thread, builds share the compile pool: {e}"))
            .ok()
    })
    .as_ref()
}

/// Lower the calling thread's CPU priority to [`NICE`], never raise it (on
/// Linux `setpriority` with `PRIO_PROCESS` and 0 applies to the calling
/// thread only). Lowering needs no privilege; a failure leaves the thread
/// at its priority.
fn lower_priority() {
    // SAFETY: getpriority and setpriority have no memory preconditions.
    let now = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, now.max(NICE)) };
    if rc != 0 {
        tracing::debug!(
            "tier-up thread keeps its priority: {}",
            std::io::Error::last_os_error()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_run_on_the_one_low_priority_thread_and_their_jobs_stay_there() {
        let (name, nice, threads, jobs_on) = run(|| {
            // SAFETY: getpriority has no memory preconditions.
            let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
            let jobs: Vec<Option<String>> = {
                use rayon::prelude::*;
                (0..64)
                    .into_par_iter()
                    .map(|_| std::thread::current().name().map(str::to_string))
                    .collect()
            };
            (
                std::thread::current().name().map(str::to_string),
                nice,
                rayon::current_num_threads(),
                jobs,
            )
        });
        assert_eq!(name.as_deref(), Some("wink-tier-up"));
        assert!(nice >= NICE, "nice {nice}");
        assert_eq!(threads, 1);
        assert!(
            jobs_on.iter().all(|n| n.as_deref() == Some("wink-tier-up")),
            "{jobs_on:?}"
        );
    }

    #[test]
    fn a_background_build_however_long_leaves_the_global_pool_to_loads() {
        use rayon::prelude::*;
        use std::sync::{Mutex, mpsc};
        // A build whose every job waits until released: run from an
        // ordinary thread, its jobs would hold every thread of the global
        // pool, and a load's jobs queued there would never run.
        let (release, held) = mpsc::channel::<()>();
        let held = Mutex::new(held);
        let build = std::thread::spawn(move || {
            run(|| {
                (0..64).into_par_iter().for_each(|_| {
                    let _ = held.lock().unwrap().recv();
                })
            })
        });
        let (done, load) = mpsc::channel();
        std::thread::spawn(move || done.send((0..1000u64).into_par_iter().sum::<u64>()));
        let summed = load.recv_timeout(std::time::Duration::from_secs(60));
        for _ in 0..64 {
            let _ = release.send(());
        }
        build.join().unwrap();
        assert_eq!(summed, Ok(499_500), "the load's jobs waited for the build");
    }
}
