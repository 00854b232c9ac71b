//! The many-plugins benchmark's figures: every run kept, then tables of
//! medians with each run's value, ratios and marginal costs computed within
//! a repeat (the same minutes) before their median is taken, and the goals
//! beside them.

use super::set::{self, Stream};
use std::collections::BTreeMap;
use std::time::Duration;

/// One consumer over one stream, per stream event.
#[derive(Clone, Copy)]
pub struct Run {
    /// CPU µs, utime+stime of `/proc/PID/stat`.
    pub stat_us: f64,
    /// CPU µs, the scheduler's run time of the live threads.
    pub sched_us: f64,
    /// Calls into guests (0 for the native process).
    pub entries: f64,
    /// The rate the server wrote the stream at.
    pub events_per_s: f64,
}

type Key = (&'static str, String, usize, String);

#[derive(Default)]
pub struct Runs(BTreeMap<Key, Vec<Run>>);

impl Runs {
    pub fn add(&mut self, stream: Stream, set: &str, n: usize, consumer: &str, run: Run) {
        self.0
            .entry((stream.name(), set.to_string(), n, consumer.to_string()))
            .or_default()
            .push(run);
    }

    fn get(&self, stream: Stream, set: &str, n: usize, consumer: &str) -> Option<&Vec<Run>> {
        self.0
            .get(&(stream.name(), set.to_string(), n, consumer.to_string()))
    }

    /// `f` of every repeat (none unless every repeat has what it needs).
    fn per_repeat(&self, repeats: usize, f: impl Fn(usize) -> Option<f64>) -> Option<Vec<f64>> {
        (0..repeats).map(f).collect()
    }
}

/// The median of `xs` (the mean of the two middle ones for an even count).
pub fn median(xs: &[f64]) -> f64 {
    let mut xs = xs.to_vec();
    xs.sort_by(f64::total_cmp);
    let m = xs.len() / 2;
    if xs.len() % 2 == 1 {
        xs[m]
    } else {
        (xs[m - 1] + xs[m]) / 2.0
    }
}

fn spread(xs: &[f64]) -> String {
    xs.iter()
        .map(|x| format!("{x:.2}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn of(runs: &[Run], f: impl Fn(&Run) -> f64) -> Vec<f64> {
    runs.iter().map(f).collect()
}

pub fn cpu_table(
    runs: &Runs,
    configs: &[(Stream, &str, usize)],
    consumers: &[String],
    repeats: usize,
    rate: f64,
    load: &str,
) {
    println!();
    println!(
        "CPU of the whole consumer process per stream event, {load}; median of {repeats} runs (each run's value after it)"
    );
    println!();
    println!(
        "| stream | set | N | plugins | consumer | CPU µs/event (utime+stime) | runs | CPU µs/event (schedstat) | guest entries/event | stream events/s | % of one core at that rate |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for &(stream, set, n) in configs {
        let what = set::describe(stream, &set::plugins(stream, set, n));
        for consumer in consumers {
            let Some(rs) = runs.get(stream, set, n, consumer) else {
                continue;
            };
            let stat = of(rs, |r| r.stat_us);
            let rate_seen = median(&of(rs, |r| r.events_per_s));
            let core = median(&of(rs, |r| r.stat_us * r.events_per_s / 1e4));
            println!(
                "| {} | {set} | {n} | {what} | {consumer} | {:.1} | {} | {:.1} | {} | {rate_seen:.0} | {core:.0}% |",
                stream.name(),
                median(&stat),
                spread(&stat),
                median(&of(rs, |r| r.sched_us)),
                if consumer == "wink" {
                    format!("{:.2}", median(&of(rs, |r| r.entries)))
                } else {
                    "-".into()
                },
            );
        }
    }
    println!();
    println!(
        "| stream | set | N | wink / native, CPU per event | marginal CPU per (event x plugin), wink | marginal, native |"
    );
    println!("|---|---|---|---|---|---|");
    for &(stream, set, n) in configs {
        let at = |consumer: &str, n: usize, set: &str, i: usize| -> Option<Run> {
            runs.get(stream, set, n, consumer)
                .and_then(|rs| rs.get(i))
                .copied()
        };
        let ratio = runs.per_repeat(repeats, |i| {
            Some(at("wink", n, set, i)?.stat_us / at("native", n, set, i)?.stat_us)
        });
        let marginal = |consumer: &str, f: fn(&Run) -> f64| {
            (n > 1)
                .then(|| {
                    runs.per_repeat(repeats, |i| {
                        Some(
                            (f(&at(consumer, n, set, i)?) - f(&at(consumer, 1, "mixed", i)?))
                                / (n - 1) as f64,
                        )
                    })
                })
                .flatten()
        };
        let show = |xs: Option<Vec<f64>>, unit: &str| {
            xs.map_or("-".to_string(), |xs| {
                format!("{:.2}{unit} [{}]", median(&xs), spread(&xs))
            })
        };
        let show_marginal = |consumer: &str| match (
            marginal(consumer, |r| r.stat_us),
            marginal(consumer, |r| r.sched_us),
        ) {
            (Some(stat), Some(sched)) => format!(
                "{:.2} µs [{}] (schedstat {:.2} µs)",
                median(&stat),
                spread(&stat),
                median(&sched)
            ),
            _ => "-".into(),
        };
        println!(
            "| {} | {set} | {n} | {} | {} | {} |",
            stream.name(),
            show(ratio, ""),
            show_marginal("wink"),
            show_marginal("native")
        );
    }
    goals(runs, repeats, rate, load);
}

fn goals(runs: &Runs, repeats: usize, rate: f64, load: &str) {
    println!();
    for set in ["mixed", "plain"] {
        let marginal = runs.per_repeat(repeats, |i| {
            let at = |set: &str, n: usize| {
                runs.get(Stream::Burst, set, n, "wink")
                    .and_then(|rs| rs.get(i))
                    .map(|r| r.stat_us)
            };
            Some((at(set, 10)? - at("mixed", 1)?) / 9.0)
        });
        if let Some(xs) = marginal {
            let m = median(&xs);
            println!(
                "goal: burst, {set} set, N = 10, {load}: marginal CPU per (event x plugin) {m:.2} µs, goal <= 3 µs: {}",
                if m <= 3.0 { "met" } else { "not met" }
            );
        }
    }
    if let Some(rs) = runs.get(Stream::Paced, "mixed", 100, "wink") {
        // At the rate asked for: the server may fall behind it on a busy
        // machine, and the CPU per event is what carries over.
        let core = median(&of(rs, |r| r.stat_us)) * rate / 1e4;
        let reached = median(&of(rs, |r| r.events_per_s));
        let entries = median(&of(rs, |r| r.entries));
        println!(
            "goal: 100 different plugins (half filtering), {rate:.0} events/s of Pod churn: whole process {core:.0}% of one core (CPU per event x {rate:.0}/s; the server reached {reached:.0}/s) (goal < 40%: {}), guest entries per event {entries:.2} (goal: far below 100)",
            if core < 40.0 { "met" } else { "not met" }
        );
    }
}

/// Time to synced: one row per repeat (cold, warm, native), then medians.
pub fn synced_table(n: usize, what: &str, rows: &[Vec<Duration>]) {
    println!();
    println!("Time from process start to every plugin synced, {n} plugins ({what}), no spinner");
    println!();
    println!(
        "| run | wink cold (empty precompiled directory) | wink warm (precompiled) | native (kube-runtime, same watches) | cold / native | warm / native |"
    );
    println!("|---|---|---|---|---|---|");
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for (i, r) in rows.iter().enumerate() {
        println!(
            "| {} | {:.0} ms | {:.0} ms | {:.0} ms | {:.2} | {:.2} |",
            i + 1,
            ms(r[0]),
            ms(r[1]),
            ms(r[2]),
            ms(r[0]) / ms(r[2]),
            ms(r[1]) / ms(r[2])
        );
    }
    let col = |c: usize| median(&rows.iter().map(|r| ms(r[c])).collect::<Vec<_>>());
    println!(
        "| median | {:.0} ms | {:.0} ms | {:.0} ms | {:.2} | {:.2} |",
        col(0),
        col(1),
        col(2),
        col(0) / col(2),
        col(1) / col(2)
    );
}
