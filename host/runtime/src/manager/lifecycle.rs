//! The lifecycle of one loaded plugin as one state machine: [`PluginState`]
//! and every transition between its states, in [`Lifecycle`].
//!
//! | from | event | to |
//! |---|---|---|
//! | (loading) | installed on its Cranelift build | `Running` |
//! | (loading) | installed on its Winch build (tier-up) | `TieringUp` |
//! | `TieringUp` | `tiered_up` (its Cranelift build is cached), `tier_up_abandoned` | `Running` |
//! | `Running`, `TieringUp`, `Restarting` | `crashed`, within the limit | `Restarting` |
//! | `Running`, `TieringUp`, `Restarting` | `crashed`, past the limit | `Quarantined` |
//! | `Restarting` | `restarted` | `TieringUp` while its Cranelift build is being made, else `Running` |
//! | `Quarantined` | its file changes | (loading) |
//! | any | unloaded | (stopped: gone) |
//!
//! Loading (read, compile, start, `init`, resolve the registration) happens
//! before a plugin has a lifecycle: a plugin enters the machine when it is
//! installed and leaves it when it is unloaded (stopped). A reload installs a
//! new lifecycle. Owns only the states, the crash count and the backoff; it
//! knows nothing of wasm, informers or locks, so it is tested on its own.

use std::time::{Duration, Instant};

/// The kind of a crash, from its reason's first line (the trap's name).
pub fn crash_kind(reason: &str) -> &'static str {
    if reason.contains("interrupt") {
        "deadline"
    } else if reason.contains("all fuel consumed") {
        "fuel"
    } else if reason.contains("memory") || reason.contains("allocat") {
        "memory"
    } else if reason.contains("call stack exhausted") {
        "stack"
    } else if reason.contains("unreachable") {
        "panic"
    } else {
        "other"
    }
}

/// A loaded plugin's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginState {
    /// Its instance takes events.
    Running,
    /// Its instance runs on the Winch build and takes events while the
    /// Cranelift build compiles into the precompiled directory, for the
    /// next load (the running instance stays on Winch).
    TieringUp,
    /// Crashed; a fresh instance starts after the backoff.
    Restarting,
    /// Crashed too often; no deliveries until its file changes.
    Quarantined(String),
}

/// When crashes restart a plugin and when they quarantine it.
#[derive(Debug, Clone, Copy)]
pub struct CrashPolicy {
    /// Consecutive crashes before quarantine.
    pub max_restarts: u32,
    /// First restart delay; doubles per consecutive crash, capped at 30 s.
    pub restart_backoff: Duration,
    /// A crash this long after the last (re)start starts a new series.
    pub healthy_after: Duration,
}

/// The longest restart backoff.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// What a crash leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterCrash {
    /// Start a fresh instance after this delay.
    RestartIn(Duration),
    /// Stop delivering until the file changes; the reason.
    Quarantine(String),
    /// Nothing: the plugin is quarantined already.
    Nothing,
}

/// One loaded plugin's state, crash series and restart count.
#[derive(Debug, Clone)]
pub struct Lifecycle {
    state: PluginState,
    consecutive_crashes: u32,
    restarts: u32,
    /// Crashes since it was installed (every instance's), by kind.
    crashes: u64,
    crash_kinds: std::collections::BTreeMap<&'static str, u64>,
    /// The last crash's first line.
    last_error: Option<String>,
    started: Instant,
    /// A Cranelift build is on the way for the Winch build that runs.
    tier_up_pending: bool,
}

impl Lifecycle {
    /// A plugin just installed: running, or tiering up when it came up on
    /// its Winch build and its Cranelift build is on the way.
    pub fn installed(tiering_up: bool, now: Instant) -> Self {
        Lifecycle {
            state: if tiering_up {
                PluginState::TieringUp
            } else {
                PluginState::Running
            },
            consecutive_crashes: 0,
            restarts: 0,
            crashes: 0,
            crash_kinds: Default::default(),
            last_error: None,
            started: now,
            tier_up_pending: tiering_up,
        }
    }

    /// The current state.
    pub fn state(&self) -> &PluginState {
        &self.state
    }

    /// Restarts after crashes so far.
    pub fn restarts(&self) -> u32 {
        self.restarts
    }

    /// Crashes since the plugin was installed, every instance's.
    pub fn crashes(&self) -> u64 {
        self.crashes
    }

    /// Crashes by kind: `deadline`, `fuel`, `memory`, `panic`, `stack`, `other`.
    pub fn crash_kinds(&self) -> &std::collections::BTreeMap<&'static str, u64> {
        &self.crash_kinds
    }

    /// The last crash's reason (its first line).
    pub fn last_error(&self) -> Option<&str> {
        self.last_error.as_deref()
    }

    /// TieringUp -> Running: the Cranelift build is cached.
    pub fn tiered_up(&mut self) {
        self.tier_up_abandoned();
    }

    /// TieringUp -> Running: no Cranelift build will come (it failed).
    pub fn tier_up_abandoned(&mut self) {
        self.tier_up_pending = false;
        if self.state == PluginState::TieringUp {
            self.state = PluginState::Running;
        }
    }

    /// Running | TieringUp | Restarting -> Restarting or Quarantined. A crash
    /// within `healthy_after` of the last (re)start continues the series; a
    /// failed restart counts as a crash of the series too.
    pub fn crashed(&mut self, policy: &CrashPolicy, reason: &str, now: Instant) -> AfterCrash {
        if matches!(self.state, PluginState::Quarantined(_)) {
            return AfterCrash::Nothing;
        }
        self.crashes += 1;
        let first_line = reason.lines().next().unwrap_or("").to_string();
        *self.crash_kinds.entry(crash_kind(&first_line)).or_default() += 1;
        self.last_error = Some(first_line);
        self.consecutive_crashes = if now.duration_since(self.started) < policy.healthy_after {
            self.consecutive_crashes + 1
        } else {
            1
        };
        if self.consecutive_crashes > policy.max_restarts {
            let why = format!(
                "{} consecutive crashes; last: {}",
                self.consecutive_crashes,
                reason.lines().next().unwrap_or("")
            );
            self.state = PluginState::Quarantined(why.clone());
            return AfterCrash::Quarantine(why);
        }
        self.state = PluginState::Restarting;
        let factor = 2u32.saturating_pow(self.consecutive_crashes - 1);
        AfterCrash::RestartIn(policy.restart_backoff.saturating_mul(factor).min(MAX_BACKOFF))
    }

    /// Restarting -> Running, or back to TieringUp when the restarted
    /// instance is again the Winch build whose Cranelift build is awaited.
    pub fn restarted(&mut self, now: Instant) {
        if self.state != PluginState::Restarting {
            return;
        }
        self.state = if self.tier_up_pending {
            PluginState::TieringUp
        } else {
            PluginState::Running
        };
        self.restarts += 1;
        self.started = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: CrashPolicy = CrashPolicy {
        max_restarts: 3,
        restart_backoff: Duration::from_millis(100),
        healthy_after: Duration::from_secs(30),
    };

    #[test]
    fn crashes_back_off_exponentially_then_quarantine() {
        let t0 = Instant::now();
        let mut l = Lifecycle::installed(false, t0);
        assert_eq!(l.state(), &PluginState::Running);
        let mut delays = Vec::new();
        for _ in 0..3 {
            match l.crashed(&POLICY, "boom\nbacktrace", t0) {
                AfterCrash::RestartIn(d) => delays.push(d.as_millis()),
                other => panic!("expected a restart, got {other:?}"),
            }
            assert_eq!(l.state(), &PluginState::Restarting);
            l.restarted(t0);
            assert_eq!(l.state(), &PluginState::Running);
        }
        assert_eq!(delays, vec![100, 200, 400]);
        assert_eq!(l.restarts(), 3);
        let why = "4 consecutive crashes; last: boom".to_string();
        assert_eq!(
            l.crashed(&POLICY, "boom\nbacktrace", t0),
            AfterCrash::Quarantine(why.clone())
        );
        assert_eq!(l.state(), &PluginState::Quarantined(why));
        assert_eq!(l.crashed(&POLICY, "again", t0), AfterCrash::Nothing);
        assert_eq!(l.crashes(), 4, "every crash counted, none after quarantine");
        l.restarted(t0);
        assert!(
            matches!(l.state(), PluginState::Quarantined(_)),
            "a restart never leaves quarantine"
        );
    }

    #[test]
    fn a_crash_after_a_healthy_spell_starts_a_new_series() {
        let t0 = Instant::now();
        let mut l = Lifecycle::installed(false, t0);
        for _ in 0..3 {
            l.crashed(&POLICY, "x", t0);
            l.restarted(t0);
        }
        let later = t0 + POLICY.healthy_after;
        assert_eq!(
            l.crashed(&POLICY, "x", later),
            AfterCrash::RestartIn(POLICY.restart_backoff)
        );
    }

    #[test]
    fn a_failed_restart_continues_the_series() {
        let t0 = Instant::now();
        let mut l = Lifecycle::installed(false, t0);
        assert!(matches!(l.crashed(&POLICY, "x", t0), AfterCrash::RestartIn(_)));
        // The restart itself fails: still restarting, one more in the series.
        assert_eq!(
            l.crashed(&POLICY, "init failed", t0),
            AfterCrash::RestartIn(Duration::from_millis(200))
        );
        assert_eq!(l.restarts(), 0);
    }

    #[test]
    fn backoff_is_capped() {
        let policy = CrashPolicy {
            max_restarts: 100,
            ..POLICY
        };
        let t0 = Instant::now();
        let mut l = Lifecycle::installed(false, t0);
        let mut last = Duration::ZERO;
        for _ in 0..40 {
            if let AfterCrash::RestartIn(d) = l.crashed(&policy, "x", t0) {
                last = d;
            }
        }
        assert_eq!(last, MAX_BACKOFF);
    }

    #[test]
    fn tiering_up_lasts_until_the_cranelift_build_is_cached() {
        let t0 = Instant::now();
        let mut l = Lifecycle::installed(true, t0);
        assert_eq!(l.state(), &PluginState::TieringUp);
        l.crashed(&POLICY, "x", t0);
        assert_eq!(l.state(), &PluginState::Restarting);
        l.restarted(t0);
        assert_eq!(l.state(), &PluginState::TieringUp, "still being built");
        l.tiered_up();
        assert_eq!(l.state(), &PluginState::Running);
        l.crashed(&POLICY, "x", t0);
        l.restarted(t0);
        assert_eq!(l.state(), &PluginState::Running, "tiered up already");

        let mut l = Lifecycle::installed(true, t0);
        l.tier_up_abandoned();
        assert_eq!(l.state(), &PluginState::Running);
        l.crashed(&POLICY, "x", t0);
        l.restarted(t0);
        assert_eq!(l.state(), &PluginState::Running, "no build is awaited any more");
    }

    #[test]
    fn crashes_are_counted_by_kind_with_the_last_reason() {
        assert_eq!(crash_kind("wasm trap: interrupt"), "deadline");
        assert_eq!(crash_kind("wasm trap: call stack exhausted"), "stack");
        assert_eq!(crash_kind("wasm `unreachable` instruction executed"), "panic");
        assert_eq!(crash_kind("memory allocation failed"), "memory");
        assert_eq!(crash_kind("all fuel consumed by WebAssembly"), "fuel");
        assert_eq!(crash_kind("something else"), "other");
        let t0 = Instant::now();
        let mut l = Lifecycle::installed(false, t0);
        l.crashed(&POLICY, "wasm trap: interrupt\nbacktrace", t0);
        l.restarted(t0);
        l.crashed(&POLICY, "wasm `unreachable` instruction executed", t0);
        assert_eq!(
            l.crash_kinds().iter().map(|(k, n)| (*k, *n)).collect::<Vec<_>>(),
            [("deadline", 1), ("panic", 1)]
        );
        assert_eq!(l.last_error(), Some("wasm `unreachable` instruction executed"));
    }
}
