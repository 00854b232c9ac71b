//! `ttl-reaper`: deletes ConfigMaps carrying the annotation `wink.dev/ttl`
//! (a duration: `30s`, `5m`, `2h`, `1d`) once they are older than it, with a
//! uid precondition (a ConfigMap re-created under the same name is not
//! deleted by mistake). It acts only after `on-synced` (the whole picture),
//! and resync re-checks what is not yet due.
//!
//! Config: `{"resync_seconds": 1}` (default 10).

use std::time::{Duration, SystemTime, UNIX_EPOCH};
use wink_sdk::serde::Deserialize;
use wink_sdk::serde_json;
use wink_sdk::write::{self, DeleteOptions, WriteError, Written};
use wink_sdk::{Handler, Object, Registration, Resource, Verb, Watch};

const TTL: &str = "wink.dev/ttl";

#[derive(Deserialize)]
#[serde(crate = "wink_sdk::serde", default, deny_unknown_fields)]
struct Config {
    resync_seconds: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config { resync_seconds: 10 }
    }
}

struct TtlReaper {
    synced: bool,
}

/// `30s`, `5m`, `2h`, `1d`, or plain seconds.
fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let (number, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = number.parse().ok()?;
    let secs = match unit {
        "" | "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        "d" => n * 86400,
        _ => return None,
    };
    Some(Duration::from_secs(secs))
}

/// Seconds since the epoch of an RFC 3339 UTC time (`2026-11-23T20:00:00Z`).
fn epoch_seconds(t: &str) -> Option<u64> {
    let (date, time) = t.strip_suffix('Z')?.split_once('T')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>());
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let mut h = time
        .split(':')
        .map(|p| p.split('.').next().unwrap_or("0").parse::<i64>());
    let (hh, mm, ss) = (h.next()?.ok()?, h.next()?.ok()?, h.next()?.ok()?);
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    u64::try_from(days * 86400 + hh * 3600 + mm * 60 + ss).ok()
}

impl TtlReaper {
    fn check(&self, obj: &Object) {
        if !self.synced {
            return;
        }
        let Ok(v) = obj.decode::<serde_json::Value>() else {
            return;
        };
        let Some(ttl) = v
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(TTL))
            .and_then(|t| t.as_str())
        else {
            return;
        };
        let Some(ttl) = parse_duration(ttl) else {
            wink_sdk::warn!("ttl-reaper: {} has an unreadable {TTL}: {ttl:?}", obj.key());
            return;
        };
        let Some(created) = v
            .pointer("/metadata/creationTimestamp")
            .and_then(|t| t.as_str())
            .and_then(epoch_seconds)
        else {
            return;
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if now < created + ttl.as_secs() {
            return;
        }
        let options = DeleteOptions {
            uid: Some(obj.uid().to_string()),
            ..DeleteOptions::default()
        };
        match write::delete(&Resource::new("v1", "ConfigMap"), obj.key(), &options) {
            Ok(Written::Applied(_)) => wink_sdk::info!(
                "ttl-reaper: deleted {} (older than {}s)",
                obj.key(),
                ttl.as_secs()
            ),
            Ok(Written::DryRun(_)) => wink_sdk::info!(
                "ttl-reaper: would delete {} (older than {}s; audit mode: dry run)",
                obj.key(),
                ttl.as_secs()
            ),
            Err(WriteError::NotFound(_) | WriteError::Conflict(_)) => {}
            Err(e) => wink_sdk::warn!("ttl-reaper: {} not deleted: {e:?}", obj.key()),
        }
    }
}

impl Handler for TtlReaper {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        let config: Config = wink_sdk::config(config)?;
        let registration = Registration::new()
            .watch(Watch::new("v1", "ConfigMap").resync(Duration::from_secs(config.resync_seconds.max(1))))
            .writes(Resource::new("v1", "ConfigMap"), &[Verb::Delete]);
        Ok((TtlReaper { synced: false }, registration))
    }

    fn on_add(&mut self, obj: &Object, _in_initial_list: bool) {
        self.check(obj);
    }

    fn on_update(&mut self, _old: &Object, new: &Object) {
        self.check(new);
    }

    fn on_synced(&mut self) {
        self.synced = true;
        wink_sdk::info!("ttl-reaper: synced; expired ConfigMaps are deleted from now on");
        // The initial list arrived before: check it now, from the cache.
        if let Ok(all) = wink_sdk::cache::list_objects(&Resource::new("v1", "ConfigMap"), None, None) {
            for obj in &all {
                self.check(obj);
            }
        }
    }
}

wink_sdk::export_plugin!(TtlReaper);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_times() {
        assert_eq!(parse_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("2h"), Some(Duration::from_secs(7200)));
        assert_eq!(parse_duration("x"), None);
        assert_eq!(epoch_seconds("1970-01-02T00:00:01Z"), Some(86401));
        assert_eq!(epoch_seconds("2026-11-23T20:00:00Z"), Some(1795464000));
    }
}
