//! The paced benchmark's latency part: how late each event of a steady
//! stream reaches a handler, with every event read as it comes and with
//! the daemon's watch window. The simulated server stamps each update
//! (label `sent`: wall-clock nanoseconds, a clock both processes share)
//! and a native handler on wink's informer notes how long after its stamp
//! each update arrived; what the window adds is the difference between the
//! two rows at one rate (the rest, the server's write and the delivery, is
//! in both).

use crate::procs::Proc;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use wink::informer::{EventHandler, ObjRef};

fn now_ns() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos()
}

/// The stamp an update carries (see [`part`]).
pub fn stamp() -> String {
    now_ns().to_string()
}

/// A handler noting each stamped update's delay, in microseconds.
#[derive(Default)]
pub struct Delays {
    micros: Mutex<Vec<u64>>,
}

impl EventHandler for Delays {
    fn on_add(&self, _: &ObjRef, _: bool) {}

    fn on_update(&self, _: &ObjRef, new: &ObjRef) {
        if let Some(sent) = new.label("sent").and_then(|s| s.parse::<u128>().ok()) {
            let us = now_ns().saturating_sub(sent) / 1000;
            self.micros.lock().unwrap().push(us as u64);
        }
    }

    fn on_delete(&self, _: &ObjRef, _: bool) {}
}

impl Delays {
    /// `delays COUNT P50 P90 P99 MAX` (µs) of what was noted since the last
    /// report.
    pub fn report(&self) -> String {
        let mut us = std::mem::take(&mut *self.micros.lock().unwrap());
        us.sort_unstable();
        let at = |q: f64| us.get(((us.len() as f64 * q) as usize).min(us.len().saturating_sub(1)));
        let p = |q| at(q).map_or("-".to_string(), |v| v.to_string());
        format!("delays {} {} {} {} {}", us.len(), p(0.5), p(0.9), p(0.99), p(1.0))
    }
}

/// For each rate, one wink consumer (variant `l`: the informer and a
/// [`Delays`] handler) with every event read as it comes, one with the
/// daemon's watch window: the delay's percentiles over a paced window.
pub fn part(seconds: f64, rates: &[String], window_us: u64) {
    let mut sim = Proc::spawn(&[
        "--role",
        crate::server_role(),
        "--kind",
        "configmaps",
        "--objects",
        "10000",
    ]);
    let ready = sim.expect("ready");
    let kubeconfig = ready.split_whitespace().nth(1).unwrap().to_string();
    println!(
        "latency: update written on the server -> a native handler on wink's informer, 10,000 ConfigMaps, {seconds} s paced"
    );
    println!("| rate | watch window | events | p50 | p90 | p99 | max |");
    println!("|---|---|---|---|---|---|---|");
    for rate in rates {
        for window in [0, window_us] {
            let env = [("PACED_WATCH_WINDOW_US", window.to_string())];
            let mut c = Proc::consumer_with(&env, "l", 1, "configmaps", &kubeconfig);
            c.expect("synced");
            std::thread::sleep(Duration::from_millis(500));
            sim.say(&format!("pace {rate} {seconds} stamp"));
            sim.expect("paced");
            std::thread::sleep(Duration::from_millis(500));
            c.say("report");
            let line = c.expect("delays");
            let f: Vec<&str> = line.split_whitespace().skip(1).collect();
            let shown = if window == 0 {
                "none".to_string()
            } else {
                format!("{window} µs")
            };
            println!(
                "| {rate}/s | {shown} | {} | {} µs | {} µs | {} µs | {} µs |",
                f[0], f[1], f[2], f[3], f[4]
            );
        }
    }
}
