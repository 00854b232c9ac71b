//! CPU shares: how much of a core a team's plugins may use in their calls
//! together (the grant's `limits.cpu`, [`crate::grants::PluginLimits`]).
//!
//! Each share is a token bucket of CPU time: it fills at `cores` seconds
//! per second up to [`WINDOW`] of them, every call into one of the team's
//! plugins takes its CPU time out (read from the OS, [`crate::cpu_time`]:
//! waits on the API server, on rate limits or for a core of a loaded node
//! are not in it; a batch's whole call), and the bucket may go below zero:
//! a call is never cut short by it. Before the next delivery
//! or reconcile of any of the team's plugins, [`CpuShare::hold`] waits
//! until the bucket is back at zero, and counts the wait. The wait holds
//! only that plugin's delivery (on the async runtime a timer; on a
//! delivery-pool thread that thread, for which the pool adds a worker).
//!
//! A share also bounds how many of the team's calls run at once: its whole
//! cores, at least one ([`turns`]). [`CpuShare::hold`] answers a [`Turn`],
//! held for the call; without that bound, a team of several plugins under
//! a quarter of a core would still run on every core at once while its
//! bucket lasts, and other teams' calls would wait behind it.
//!
//! Owns the buckets and their wait counts ([`CpuShares`], by team); which
//! plugins share one is the manager's (the grant's `team`, else the
//! plugin's own name).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The window a share is measured over: a team may use `cores × WINDOW`
/// of CPU at once before it waits.
pub const WINDOW: Duration = Duration::from_millis(100);

/// At most this many shares are kept (one per team).
pub const MAX_SHARES: usize = 4096;

struct Bucket {
    /// CPU seconds the team may still use now (below zero: owed).
    tokens: f64,
    cores: f64,
    at: Instant,
}

impl Bucket {
    fn fill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.at = now.max(self.at);
        self.tokens = (self.tokens + elapsed * self.cores).min(self.cores * WINDOW.as_secs_f64());
    }
}

/// How many calls of a team with a share of `cores` may run at once: its
/// whole cores, at least one.
pub fn turns(cores: f64) -> usize {
    (cores.floor() as usize).max(1)
}

/// A call's turn among its team's ([`turns`]); the next call waiting has
/// it when this is dropped.
pub struct Turn {
    _permit: OwnedSemaphorePermit,
}

/// One team's share of CPU.
pub struct CpuShare {
    team: String,
    bucket: Mutex<Bucket>,
    /// The team's turns: a new semaphore when the cores change (calls in
    /// progress give their turn back to the old one).
    turns: Mutex<Arc<Semaphore>>,
    /// Nanoseconds its deliveries were held back.
    held_ns: AtomicU64,
}

impl CpuShare {
    /// A share of `cores` (a full bucket) for `team`.
    pub fn new(team: &str, cores: f64) -> CpuShare {
        CpuShare {
            team: team.to_string(),
            bucket: Mutex::new(Bucket {
                tokens: cores * WINDOW.as_secs_f64(),
                cores,
                at: Instant::now(),
            }),
            turns: Mutex::new(Arc::new(Semaphore::new(turns(cores)))),
            held_ns: AtomicU64::new(0),
        }
    }

    /// The team.
    pub fn team(&self) -> &str {
        &self.team
    }

    /// The cores it allows.
    pub fn cores(&self) -> f64 {
        self.bucket.lock().unwrap().cores
    }

    fn set_cores(&self, cores: f64) {
        let mut b = self.bucket.lock().unwrap();
        b.fill(Instant::now());
        if turns(b.cores) != turns(cores) {
            *self.turns.lock().unwrap() = Arc::new(Semaphore::new(turns(cores)));
        }
        b.cores = cores;
    }

    /// A call took `used` of CPU time (at `now`).
    pub fn charge(&self, used: Duration, now: Instant) {
        let mut b = self.bucket.lock().unwrap();
        b.fill(now);
        b.tokens -= used.as_secs_f64();
    }

    /// How long a call must wait at `now` before the team is within its
    /// share (zero: at once).
    pub fn wait_at(&self, now: Instant) -> Duration {
        let mut b = self.bucket.lock().unwrap();
        b.fill(now);
        match b.tokens < 0.0 {
            true => Duration::from_secs_f64(-b.tokens / b.cores),
            false => Duration::ZERO,
        }
    }

    /// Wait for a turn among the team's calls, then until the team is
    /// within its share (as it is now: what other calls of the team charge
    /// meanwhile is for the next hold); both waits are counted. The turn is
    /// the caller's until the call ends.
    pub async fn hold(&self) -> Turn {
        let turns = self.turns.lock().unwrap().clone();
        let permit = match turns.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                let asked = Instant::now();
                let permit = turns
                    .acquire_owned()
                    .await
                    .expect("a share's semaphore is never closed");
                self.count_held(asked.elapsed());
                permit
            }
        };
        let wait = self.wait_at(Instant::now());
        if !wait.is_zero() {
            self.count_held(wait);
            match tokio::runtime::Handle::try_current() {
                Ok(_) => tokio::time::sleep(wait).await,
                Err(_) => std::thread::sleep(wait),
            }
        }
        Turn { _permit: permit }
    }

    fn count_held(&self, wait: Duration) {
        self.held_ns
            .fetch_add(wait.as_nanos().min(u64::MAX as u128) as u64, Ordering::Relaxed);
    }

    /// How long its deliveries were held back in all.
    pub fn held(&self) -> Duration {
        Duration::from_nanos(self.held_ns.load(Ordering::Relaxed))
    }
}

/// The shares in force, by team.
#[derive(Default)]
pub struct CpuShares(Mutex<BTreeMap<String, Arc<CpuShare>>>);

impl CpuShares {
    /// The share of `team`, now of `cores` (made when new; past
    /// [`MAX_SHARES`] teams a new team gets a share of its own that is not
    /// counted in [`CpuShares::held`]).
    pub fn get(&self, team: &str, cores: f64) -> Arc<CpuShare> {
        let mut shares = self.0.lock().unwrap();
        if let Some(s) = shares.get(team) {
            if s.cores() != cores {
                s.set_cores(cores);
            }
            return s.clone();
        }
        let share = Arc::new(CpuShare::new(team, cores));
        if shares.len() < MAX_SHARES {
            shares.insert(team.to_string(), share.clone());
        }
        share
    }

    /// Every team's time held back: (team, time).
    pub fn held(&self) -> Vec<(String, Duration)> {
        let shares = self.0.lock().unwrap();
        shares.iter().map(|(t, s)| (t.clone(), s.held())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_team_within_its_share_never_waits() {
        let s = CpuShare::new("a", 0.25);
        let t0 = Instant::now();
        // 1 ms of CPU every 10 ms is a tenth of a core.
        for i in 0..100 {
            let now = t0 + 10 * i * MS;
            assert_eq!(s.wait_at(now), Duration::ZERO, "call {i}");
            s.charge(MS, now);
        }
    }

    #[test]
    fn a_team_past_its_share_waits_what_it_owes() {
        let s = CpuShare::new("a", 0.25);
        let t0 = Instant::now();
        // The bucket holds 25 ms; a 75 ms call leaves 50 ms owed, which a
        // quarter of a core pays back in 200 ms.
        assert_eq!(s.wait_at(t0), Duration::ZERO);
        s.charge(75 * MS, t0);
        let wait = s.wait_at(t0);
        assert!((wait.as_secs_f64() - 0.2).abs() < 1e-6, "{wait:?}");
        let wait = s.wait_at(t0 + 100 * MS);
        assert!((wait.as_secs_f64() - 0.1).abs() < 1e-6, "{wait:?}");
        assert_eq!(s.wait_at(t0 + 200 * MS), Duration::ZERO);
        // A spinner held to its waits uses a quarter of a core over time.
        let mut now = t0 + 200 * MS;
        let mut used = Duration::ZERO;
        for _ in 0..100 {
            now += s.wait_at(now);
            s.charge(10 * MS, now);
            used += 10 * MS;
            now += 10 * MS;
        }
        let share = used.as_secs_f64() / (now - (t0 + 200 * MS)).as_secs_f64();
        assert!((share - 0.25).abs() < 0.02, "{share}");
    }

    #[test]
    fn a_full_bucket_holds_one_window_and_no_more() {
        let s = CpuShare::new("a", 0.5);
        let t0 = Instant::now();
        // Idle for a minute: still only 50 ms in hand.
        s.charge(50 * MS, t0 + Duration::from_secs(60));
        assert_eq!(s.wait_at(t0 + Duration::from_secs(60)), Duration::ZERO);
        s.charge(10 * MS, t0 + Duration::from_secs(60));
        assert!(s.wait_at(t0 + Duration::from_secs(60)) > Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn a_hold_waits_and_is_counted() {
        let s = CpuShare::new("a", 0.5);
        s.charge(150 * MS, Instant::now());
        let before = tokio::time::Instant::now();
        s.hold().await;
        assert!(tokio::time::Instant::now() - before >= 190 * MS);
        assert!(s.held() >= 190 * MS, "{:?}", s.held());
    }

    #[tokio::test(start_paused = true)]
    async fn a_share_under_a_core_runs_one_call_at_a_time() {
        let s = CpuShare::new("a", 0.5);
        let first = s.hold().await;
        let second = tokio::time::timeout(Duration::from_secs(1), s.hold()).await;
        assert!(second.is_err(), "a second call ran beside the first");
        drop(first);
        let second = tokio::time::timeout(Duration::from_secs(1), s.hold()).await;
        assert!(second.is_ok(), "the turn did not come back");
    }

    #[tokio::test(start_paused = true)]
    async fn a_share_runs_as_many_calls_as_its_whole_cores() {
        assert_eq!((turns(0.01), turns(0.99), turns(1.0), turns(2.5)), (1, 1, 1, 2));
        let shares = CpuShares::default();
        let s = shares.get("a", 2.5);
        let (_one, _two) = (s.hold().await, s.hold().await);
        let third = tokio::time::timeout(Duration::from_secs(1), s.hold()).await;
        assert!(third.is_err(), "a third call ran beside two");
        // Three cores now: a third call has its turn.
        let s = shares.get("a", 3.0);
        let third = tokio::time::timeout(Duration::from_secs(1), s.hold()).await;
        assert!(third.is_ok(), "the new cores gave no new turn");
    }

    #[test]
    fn one_team_one_share() {
        let shares = CpuShares::default();
        let a = shares.get("team-a", 0.25);
        let a2 = shares.get("team-a", 0.5);
        assert!(Arc::ptr_eq(&a, &a2));
        assert_eq!(a.cores(), 0.5);
        let b = shares.get("team-b", 0.25);
        assert!(!Arc::ptr_eq(&a, &b));
        let teams: Vec<_> = shares.held().into_iter().map(|(t, _)| t).collect();
        assert_eq!(teams, ["team-a", "team-b"]);
    }
}
