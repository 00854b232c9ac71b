//! A plugin's own caps, tighter than the daemon's: the team policy's
//! `limits:` (`teams.limits`), given to every team plugin's grant.
//!
//! ```yaml
//! limits:
//!   memory: 64Mi          # bytes, or with Ki/Mi/Gi
//!   callDeadline: 500ms   # milliseconds, or with ms/s
//!   queue: 1000           # work-queue keys
//!   cpu: 0.25             # a share of one core
//!   fuel: 50000000        # WebAssembly instructions one call may run
//!   plugins: 20           # team plugins one namespace runs (teams.limits only)
//! ```
//!
//! Owns the parse of these fields, their bounds and errors, and
//! [`PluginLimits::stricter`]: the tighter of two sets of caps. The caps
//! are applied where the daemon's are (the engine's [`crate::Limits`], the
//! work queue's [`crate::workqueue::Limits`]); nothing here measures or
//! enforces.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The smallest memory cap (an instance needs some linear memory).
pub const MIN_MEMORY: u64 = 1 << 20;
/// The largest memory cap (a 32-bit linear memory's whole).
pub const MAX_MEMORY: u64 = 4 << 30;
/// The longest call deadline.
pub const MAX_CALL_DEADLINE: Duration = Duration::from_secs(60);
/// The largest CPU share (cores).
pub const MAX_CPU: f64 = 64.0;
/// The smallest CPU share: a hundredth of a core.
pub const MIN_CPU: f64 = 0.01;
/// The smallest fuel cap: enough for a small handler's call.
pub const MIN_FUEL: u64 = 10_000;
/// The largest fuel cap (about ten minutes of one core's work).
pub const MAX_FUEL: u64 = 1_000_000_000_000;
/// The largest `plugins` cap: the most plugins wink's controller of
/// NamespacedWinkPlugins runs in all.
pub const MAX_PLUGINS: usize = 1024;

/// A size or a duration: a number, or text with a unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Amount {
    Number(u64),
    Text(String),
}

/// A plugin's caps; a field not given leaves the daemon's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct PluginLimits {
    /// Linear memory of one instance: bytes, or `64Mi` (Ki, Mi, Gi).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<Amount>,
    /// Wall-clock budget of one call: milliseconds, or `500ms`, `2s`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_deadline: Option<Amount>,
    /// The most keys its work queue holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<usize>,
    /// The share of one core its calls may use (0.25: a quarter), shared
    /// by every plugin of one team.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<f64>,
    /// The fuel of one call: about one unit per WebAssembly instruction
    /// the guest runs (wasmtime's fuel); a call that uses it up traps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fuel: Option<u64>,
    /// The most team plugins one namespace runs (`teams.limits` only: it
    /// caps a team, not a plugin).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugins: Option<usize>,
}

/// [`PluginLimits`] read and checked.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Caps {
    pub memory_bytes: Option<usize>,
    pub call_deadline: Option<Duration>,
    pub queue_keys: Option<usize>,
    pub cpu: Option<f64>,
    pub fuel: Option<u64>,
}

impl PluginLimits {
    /// The caps these fields say; an error names the field (`at` its
    /// section, e.g. `teams.limits`) and why.
    pub fn caps(&self, at: &str) -> Result<Caps, String> {
        let memory_bytes = match &self.memory {
            None => None,
            Some(m) => {
                let b = bytes(m).map_err(|e| format!("{at}.memory: {e}"))?;
                if !(MIN_MEMORY..=MAX_MEMORY).contains(&b) {
                    return Err(format!(
                        "{at}.memory: {b} bytes (from {MIN_MEMORY} to {MAX_MEMORY}, 1Mi to 4Gi)"
                    ));
                }
                Some(usize::try_from(b).map_err(|_| format!("{at}.memory: too large here"))?)
            }
        };
        let call_deadline = match &self.call_deadline {
            None => None,
            Some(d) => {
                let d = duration(d).map_err(|e| format!("{at}.callDeadline: {e}"))?;
                if d.is_zero() || d > MAX_CALL_DEADLINE {
                    return Err(format!(
                        "{at}.callDeadline: {} ms (from 1 ms to {} s)",
                        d.as_millis(),
                        MAX_CALL_DEADLINE.as_secs()
                    ));
                }
                Some(d)
            }
        };
        let max_keys = crate::workqueue::MAX_KEYS;
        if let Some(q) = self.queue
            && !(1..=max_keys).contains(&q)
        {
            return Err(format!("{at}.queue: {q} keys (from 1 to {max_keys})"));
        }
        if let Some(c) = self.cpu
            && !(MIN_CPU..=MAX_CPU).contains(&c)
        {
            return Err(format!(
                "{at}.cpu: {c} (a share of one core, from {MIN_CPU} to {MAX_CPU})"
            ));
        }
        if let Some(f) = self.fuel
            && !(MIN_FUEL..=MAX_FUEL).contains(&f)
        {
            return Err(format!("{at}.fuel: {f} (from {MIN_FUEL} to {MAX_FUEL})"));
        }
        if let Some(n) = self.plugins
            && !(1..=MAX_PLUGINS).contains(&n)
        {
            return Err(format!("{at}.plugins: {n} plugins (from 1 to {MAX_PLUGINS})"));
        }
        Ok(Caps {
            memory_bytes,
            call_deadline,
            queue_keys: self.queue,
            cpu: self.cpu,
            fuel: self.fuel,
        })
    }

    /// The tighter of `self` and `other`, field by field (both checked:
    /// a field that does not read is an error).
    pub fn stricter(&self, other: &PluginLimits) -> Result<PluginLimits, String> {
        let (a, b) = (self.caps("limits")?, other.caps("limits")?);
        let caps = a.stricter(b);
        Ok(PluginLimits {
            memory: caps.memory_bytes.map(|b| Amount::Number(b as u64)),
            call_deadline: caps.call_deadline.map(|d| Amount::Number(d.as_millis() as u64)),
            queue: caps.queue_keys,
            cpu: caps.cpu,
            fuel: caps.fuel,
            plugins: match (self.plugins, other.plugins) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        })
    }
}

impl Caps {
    /// The tighter of two caps, field by field.
    pub fn stricter(self, other: Caps) -> Caps {
        fn min<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(if b < a { b } else { a }),
                (a, b) => a.or(b),
            }
        }
        Caps {
            memory_bytes: min(self.memory_bytes, other.memory_bytes),
            call_deadline: min(self.call_deadline, other.call_deadline),
            queue_keys: min(self.queue_keys, other.queue_keys),
            cpu: min(self.cpu, other.cpu),
            fuel: min(self.fuel, other.fuel),
        }
    }
}

/// The longest text of an amount read.
const MAX_TEXT: usize = 32;

fn split_unit(text: &str) -> Result<(u64, &str), String> {
    if text.len() > MAX_TEXT {
        return Err(format!("{} characters (at most {MAX_TEXT})", text.len()));
    }
    let text = text.trim();
    let end = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (digits, unit) = text.split_at(end);
    let n = digits
        .parse::<u64>()
        .map_err(|_| format!("{text:?} is not a whole number with a unit"))?;
    Ok((n, unit.trim()))
}

/// Bytes: a number, or a number with `Ki`, `Mi` or `Gi`.
fn bytes(a: &Amount) -> Result<u64, String> {
    let (n, unit) = match a {
        Amount::Number(n) => return Ok(*n),
        Amount::Text(t) => split_unit(t)?,
    };
    let shift = match unit {
        "" => 0,
        "Ki" => 10,
        "Mi" => 20,
        "Gi" => 30,
        u => return Err(format!("unit {u:?} (bytes, or Ki, Mi, Gi)")),
    };
    n.checked_mul(1 << shift).ok_or_else(|| "too large".to_string())
}

/// A duration: milliseconds, or a number with `ms` or `s`.
fn duration(a: &Amount) -> Result<Duration, String> {
    let (n, unit) = match a {
        Amount::Number(n) => return Ok(Duration::from_millis(*n)),
        Amount::Text(t) => split_unit(t)?,
    };
    match unit {
        "" | "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(Duration::from_secs(n)),
        u => Err(format!("unit {u:?} (milliseconds, or ms, s)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(yaml: &str) -> PluginLimits {
        serde_norway::from_str(yaml).unwrap()
    }

    #[test]
    fn fields_read_with_their_units() {
        let c = limits("{memory: 64Mi, callDeadline: 500ms, queue: 100, cpu: 0.25}")
            .caps("teams.limits")
            .unwrap();
        assert_eq!(c.memory_bytes, Some(64 << 20));
        assert_eq!(c.call_deadline, Some(Duration::from_millis(500)));
        assert_eq!(c.queue_keys, Some(100));
        assert_eq!(c.cpu, Some(0.25));
        let c = limits("{memory: 2097152, callDeadline: 2s}").caps("l").unwrap();
        assert_eq!(c.memory_bytes, Some(2 << 20));
        assert_eq!(c.call_deadline, Some(Duration::from_secs(2)));
        assert_eq!(
            limits("{callDeadline: 250}").caps("l").unwrap().call_deadline,
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            limits("{memory: 1Gi}").caps("l").unwrap().memory_bytes,
            Some(1 << 30)
        );
        assert_eq!(PluginLimits::default().caps("l").unwrap(), Caps::default());
    }

    #[test]
    fn what_does_not_read_or_is_out_of_bounds_is_said() {
        for (yaml, says) in [
            ("{memory: 64MB}", "teams.limits.memory: unit \"MB\""),
            (
                "{memory: lots}",
                "teams.limits.memory: \"lots\" is not a whole number",
            ),
            ("{memory: 1Ki}", "teams.limits.memory: 1024 bytes (from"),
            ("{memory: 5Gi}", "teams.limits.memory: 5368709120 bytes"),
            ("{memory: 99999999999999999999Gi}", "teams.limits.memory"),
            ("{callDeadline: 0}", "teams.limits.callDeadline: 0 ms"),
            ("{callDeadline: 2m}", "teams.limits.callDeadline: unit \"m\""),
            ("{callDeadline: 61s}", "teams.limits.callDeadline: 61000 ms"),
            ("{queue: 0}", "teams.limits.queue: 0 keys"),
            ("{queue: 50001}", "teams.limits.queue: 50001 keys"),
            ("{cpu: 0}", "teams.limits.cpu: 0 (a share of one core"),
            ("{cpu: 65}", "teams.limits.cpu: 65"),
            ("{cpu: .nan}", "teams.limits.cpu: NaN"),
        ] {
            let e = limits(yaml).caps("teams.limits").unwrap_err();
            assert!(e.contains(says), "{yaml}: {e}");
        }
        let long = format!("{{memory: \"{}\"}}", "1".repeat(40));
        let e = limits(&long).caps("teams.limits").unwrap_err();
        assert!(e.contains("at most 32"), "{e}");
        for (n, ok) in [
            (0, false),
            (1, true),
            (MAX_PLUGINS, true),
            (MAX_PLUGINS + 1, false),
        ] {
            let r = limits(&format!("{{plugins: {n}}}")).caps("teams.limits");
            assert_eq!(r.is_ok(), ok, "plugins {n}: {r:?}");
            if let Err(e) = r {
                assert!(
                    e.contains(&format!(
                        "teams.limits.plugins: {n} plugins (from 1 to {MAX_PLUGINS})"
                    )),
                    "{e}"
                );
            }
        }
        assert_eq!(limits("{plugins: 20}").plugins, Some(20));
        assert!(serde_norway::from_str::<PluginLimits>("{plugins: -1}").is_err());
        let e = limits("{fuel: 3}").caps("teams.limits").unwrap_err();
        assert!(e.contains("teams.limits.fuel: 3 (from 10000 to"), "{e}");
        assert!(limits("{fuel: 1000000000001}").caps("l").is_err());
        assert_eq!(limits("{fuel: 10000}").caps("l").unwrap().fuel, Some(MIN_FUEL));
        assert!(serde_norway::from_str::<PluginLimits>("{fuel: -1}").is_err());
        let e = serde_norway::from_str::<PluginLimits>("{gas: 3}").unwrap_err();
        assert!(e.to_string().contains("unknown field `gas`"), "{e}");
    }

    #[test]
    fn the_stricter_of_two_is_taken_field_by_field() {
        let a = limits("{memory: 64Mi, callDeadline: 2s, cpu: 0.5, fuel: 2000000}");
        let b = limits("{memory: 128Mi, callDeadline: 100ms, queue: 10, plugins: 3, fuel: 900000}");
        let c = a.stricter(&b).unwrap().caps("l").unwrap();
        assert_eq!(c.memory_bytes, Some(64 << 20));
        assert_eq!(c.call_deadline, Some(Duration::from_millis(100)));
        assert_eq!(c.queue_keys, Some(10));
        assert_eq!(c.cpu, Some(0.5));
        assert_eq!(c.fuel, Some(900_000));
        assert_eq!(a.stricter(&b).unwrap().plugins, Some(3));
        assert_eq!(b.stricter(&limits("{plugins: 2}")).unwrap().plugins, Some(2));
        assert_eq!(b.stricter(&a).unwrap().caps("l").unwrap(), c);
        assert!(a.stricter(&limits("{cpu: 0}")).is_err());
    }
}
