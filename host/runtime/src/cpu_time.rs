//! CPU time a future takes, read from the OS: the calling thread's CPU
//! clock (`CLOCK_THREAD_CPUTIME_ID`) around each of its polls, summed. A
//! guest call runs only while its future is polled, so this is the CPU the
//! call used, on whichever threads polled it; what it waited for between
//! polls (the API server, a rate limit, a core on a loaded node) is not in
//! it, as in a cgroup's CPU accounting.
//!
//! Owns only that measure; what is charged for it is [`crate::cpu_share`]'s.

use std::future::Future;
use std::time::Duration;

/// CPU time the calling thread has used so far (zero where the OS cannot
/// say).
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec.max(0) as u64, ts.tv_nsec.clamp(0, 999_999_999) as u32)
}

/// Run `f` to its end: its output and the CPU time its polls took.
pub async fn on_cpu<F: Future>(f: F) -> (F::Output, Duration) {
    let mut f = std::pin::pin!(f);
    let mut used = Duration::ZERO;
    let output = std::future::poll_fn(|cx| {
        let before = thread_cpu_time();
        let polled = f.as_mut().poll(cx);
        used += thread_cpu_time().saturating_sub(before);
        polled
    })
    .await;
    (output, used)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// Spin until this thread has used `cpu` more.
    fn spin(cpu: Duration) {
        let until = thread_cpu_time() + cpu;
        while thread_cpu_time() < until {
            std::hint::black_box(0u64);
        }
    }

    #[tokio::test]
    async fn a_futures_polls_are_counted_and_its_waits_are_not() {
        let (answer, used) = on_cpu(async {
            spin(20 * MS);
            tokio::time::sleep(200 * MS).await;
            spin(20 * MS);
            42
        })
        .await;
        assert_eq!(answer, 42);
        assert!(used >= 40 * MS, "both spins: {used:?}");
        // The 200 ms asleep is not CPU: on a loaded machine the spins
        // take longer in wall time, never more CPU than this.
        assert!(used < 200 * MS, "the sleep is not counted: {used:?}");
    }

    #[test]
    fn the_threads_clock_moves_with_its_work_only() {
        let before = thread_cpu_time();
        assert!(before > Duration::ZERO, "Linux has a thread CPU clock");
        std::thread::sleep(50 * MS);
        spin(10 * MS);
        let used = thread_cpu_time() - before;
        assert!(used >= 10 * MS && used < 50 * MS, "{used:?}");
    }
}
