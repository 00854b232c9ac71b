//! The paced benchmark's memory part: resident memory growth per cached
//! object (from `/proc/PID/status`) for 10,000 and 100,000 objects (1 KiB
//! ConfigMaps, realistic Pods), against the objects' JSON size, and the
//! peak during a relist of everything (a 410 after compaction) against the
//! steady state.

use crate::procs::{Proc, cpu, status_bytes};
use crate::{env_list, variant_name};
use std::time::Duration;

/// Resident growth per cached object for each size of `PACED_MEMORY`, both
/// kinds, (a) and (b); and the peak during a relist against the steady state.
/// Then, between the smallest and the largest size, the growth per object
/// added: what each cached object costs, without what a consumer holds
/// whatever the count (its threads, its allocator's arenas, its buffers).
pub fn part() {
    // (kind, variant) -> (objects, growth in bytes), in the order measured.
    let mut growth: std::collections::BTreeMap<(&str, &str), Vec<(u64, u64)>> = Default::default();
    println!(
        "resident memory growth per cached object (VmRSS after synced minus before the informer), and the peak (VmHWM) during a relist of everything against the steady state"
    );
    println!(
        "| objects | kind | JSON bytes / object | consumer | RSS growth / object | relist peak / steady |"
    );
    println!("|---|---|---|---|---|---|");
    for n in env_list("PACED_MEMORY", "10000,100000") {
        for kind in ["configmaps", "pods"] {
            let mut sim = Proc::spawn(&["--role", "sim", "--kind", kind, "--objects", &n]);
            let ready = sim.expect("ready");
            let mut words = ready.split_whitespace().skip(1);
            let kubeconfig = words.next().unwrap().to_string();
            let json: u64 = words.next().unwrap().parse().unwrap();
            for variant in ["a", "b"] {
                let mut c = Proc::consumer(variant, 1, kind, &kubeconfig);
                c.expect("started");
                let before = status_bytes(c.pid(), "VmRSS");
                c.expect("synced");
                std::thread::sleep(Duration::from_millis(1000));
                let steady = status_bytes(c.pid(), "VmRSS");
                let _ = std::fs::write(format!("/proc/{}/clear_refs", c.pid()), "5");
                sim.say("relist");
                sim.expect("relisted");
                // The relist is done when the consumer's CPU goes quiet
                // (after the watcher's backoff has passed).
                std::thread::sleep(Duration::from_secs(3));
                let mut last = cpu(c.pid());
                loop {
                    std::thread::sleep(Duration::from_millis(700));
                    let now = cpu(c.pid());
                    if now - last < Duration::from_millis(20) {
                        break;
                    }
                    last = now;
                }
                let peak = status_bytes(c.pid(), "VmHWM");
                let objects: u64 = n.parse().unwrap();
                let grown = steady.saturating_sub(before);
                growth.entry((kind, variant)).or_default().push((objects, grown));
                let per = grown as f64 / objects as f64;
                println!(
                    "| {n} | {kind} | {json} | {} | {:.0} B | {:.2} |",
                    variant_name(variant),
                    per,
                    peak as f64 / steady as f64
                );
            }
        }
    }
    println!("| kind | consumer | objects | growth per object added | fixed (growth at 0 objects) |");
    println!("|---|---|---|---|---|");
    for ((kind, variant), sizes) in &growth {
        let (Some(&(n0, g0)), Some(&(n1, g1))) = (sizes.iter().min(), sizes.iter().max()) else {
            continue;
        };
        if n1 == n0 {
            continue;
        }
        let slope = (g1 as f64 - g0 as f64) / (n1 - n0) as f64;
        let fixed = g0 as f64 - slope * n0 as f64;
        println!(
            "| {kind} | {} | {n0} -> {n1} | {slope:.0} B | {:.1} MB |",
            variant_name(variant),
            fixed / 1e6
        );
    }
}
